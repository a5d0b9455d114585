// The musl walker over hand-laid heaps (tests/support/synthetic_heaps.h, written from musl's
// meta.h, not from the walker's tables): the shapes a real process here shows rarely or never
// (a donated group, a nested group's every state, aligned_alloc's 32-bit offsets and truncated
// offset headers, a dump that names no files) and hostile ones (loops, absurd counts, groups
// that claim each other's memory, damaged headers, a context that is not initialised).
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/heap_walk.h"
#include "support/synthetic_heaps.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// Each slot reported as `expected` says, in that order.
void checkSlots(const WalkedHeap &w, const std::vector<MuslSlot> &expected) {
  REQUIRE(w.allocations.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("slot " << i << " at " << hexAddress(expected[i].address));
    const Allocation &a = w.allocations[i];
    CHECK(a.address == expected[i].address);
    CHECK(a.size == expected[i].size);
    CHECK(a.state == (expected[i].used ? AllocState::Used : AllocState::Free));
    CHECK(a.mmapped == expected[i].mmapped);
    CHECK(a.arena == MuslHeap::kCtx);
  }
}

bool detects(FakeProcess &p) {
  AddressSpace memory(p.snapshot());
  return walkerNamed("musl").detect(memory);
}

} // namespace

TEST_CASE("musl walker reports every slot of a hand-laid heap") {
  for (const char *file : {"", "/opt/app/program"}) {
    INFO("data page file: '" << file << "'");
    FakeProcess p;
    const MuslHeap h = putMuslHeap(p);
    p.nameFile(MuslHeap::kData, file);
    const WalkedHeap w = walkHeap(p.snapshot(), "musl");
    REQUIRE(w.error.empty());
    for (const Diagnostic &d : w.warnings)
      UNSCOPED_INFO("warning " << d.where << ": " << d.message);
    CHECK(w.warnings.empty());
    checkSlots(w, h.slots);
    CHECK(w.fact("malloc_context") ==
          hexAddress(MuslHeap::kCtx) +
              (*file ? " (in the data of /opt/app/program)" : " (in anonymous memory)"));
    CHECK(w.fact("meta_areas") == "2");
    CHECK(w.fact("groups") == "4");
    CHECK(w.fact("nested_groups") == "1");
    CHECK(w.fact("donated_groups") == "1");
    CHECK(w.fact("mapped_groups") == "1");
    CHECK(w.fact("single_slot_mappings") == "1");
    CHECK(w.fact("slots") == "9");
    std::vector<std::tuple<std::string, uint64_t, uint64_t>> areas;
    for (const HeapArea &a : w.result.areas)
      areas.emplace_back(a.kind, a.start, a.size);
    CHECK(areas == std::vector<std::tuple<std::string, uint64_t, uint64_t>>{
                       {"donated", MuslHeap::kDonated, 16 + 64},
                       {"meta-area", MuslHeap::kAreas, 0x2000},
                       {"group", MuslHeap::kGroup, 0x1000},
                       {"mmapped", MuslHeap::kMmapped, 0x2000}});
    CHECK(w.result.stats.used_count == 5);
    CHECK(w.result.stats.free_count == 4);
  }
}

TEST_CASE("musl walker follows aligned_alloc's 32-bit offsets and truncated offset headers") {
  // aligned_alloc 1 MiB and more into a big slot: the slot start's u16 offset header is the
  // distance modulo 2^16 units, and the group offset is a u32 at p-8 with p[-4] = 1.
  FakeProcess p;
  MuslHeap h = putMuslHeap(p);
  constexpr uint64_t big = 0x40000000, pages = 0x102;
  p.addRegion(big, pages * 4096);
  putMuslGroup(p, MuslHeap::kAreas + 0x1000 + 0x18, big, 0, 0, 0, true, 63, pages);
  const uint64_t start = big + 16, end = big + pages * 4096 - 4;
  const uint64_t user = start + 16 * uint64_t(0x10005);
  putMuslUsedSlot(p, big, 0, start, end, user, 1000);
  h.slots.push_back({user, 1000, true, true});
  const WalkedHeap w = walkHeap(p.snapshot(), "musl");
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  CHECK(w.warnings.empty());
  checkSlots(w, h.slots);
}

TEST_CASE("musl walker survives hostile heaps with warnings and bounded work") {
  const uint64_t area_b = MuslHeap::kAreas + 0x1000;
  SECTION("the meta-area chain loops") {
    FakeProcess p;
    const MuslHeap h = putMuslHeap(p);
    p.put64(area_b + 8, MuslHeap::kAreas);
    const WalkedHeap w = walkHeap(p.snapshot(), "musl");
    CHECK(w.warned(hexAddress(MuslHeap::kAreas) + ": the meta-area chain loops back here"));
    checkSlots(w, h.slots);
  }
  SECTION("a meta area claims 2^31 metas") {
    FakeProcess p;
    const MuslHeap h = putMuslHeap(p);
    p.put32(area_b + 0x10, 0x7fffffff);
    const WalkedHeap w = walkHeap(p.snapshot(), "musl");
    CHECK(w.warned(hexAddress(area_b) + ": meta area does not hold 101 metas"));
    CHECK(w.warned("the meta-area chain ends at " + hexAddress(MuslHeap::kAreas)));
    checkSlots(w, h.slots); // the metas are all in the first area
  }
  SECTION("a used slot's header names another slot") {
    FakeProcess p;
    MuslHeap h = putMuslHeap(p);
    const uint64_t slot1 = MuslHeap::kGroup + 16 + 288;
    p.put8(slot1 + 32 - 3, 0); // index 0, not 1
    const WalkedHeap w = walkHeap(p.snapshot(), "musl");
    CHECK(w.warned(hexAddress(slot1) + ": the header names another slot index (1 used slots"));
    h.slots[2] = {slot1, 284, false, false};
    REQUIRE(w.allocations.size() == h.slots.size());
    CHECK(w.allocations[2].address == slot1);
    CHECK(w.allocations[2].size == 284);
    CHECK(w.allocations[2].state == AllocState::Unknown);
  }
  SECTION("a nested group of a larger class does not nest: it overlaps") {
    FakeProcess p;
    MuslHeap h = putMuslHeap(p);
    p.put64(h.nested_meta + 0x20, 2 | 1 << 5 | 13 << 6); // class 13 > the outer class 12
    const WalkedHeap w = walkHeap(p.snapshot(), "musl");
    CHECK(w.warned("the header marks a nested group that no meta describes"));
    CHECK(w.warned(hexAddress(h.nested) + ": group lies inside memory another group claims"));
    CHECK(w.fact("groups_overlapping") == "1");
    CHECK(w.at(h.nested) != nullptr); // the outer slot, reported unknown
    CHECK(w.at(h.nested)->state == AllocState::Unknown);
  }
  SECTION("the outer group's meta is damaged: the nested group is walked on its own") {
    FakeProcess p;
    MuslHeap h = putMuslHeap(p);
    p.put64(h.group_meta + 0x20, 4 | 1 << 5 | 50 << 6 | 1ull << 12); // size class 50
    const WalkedHeap w = walkHeap(p.snapshot(), "musl");
    CHECK(w.warned(hexAddress(h.group_meta) + ": size class does not exist"));
    CHECK(w.warned(hexAddress(h.nested) + ": group has no mapping of its own but lies in no"));
    for (const MuslSlot &s : h.slots) {
      const bool in_outer = s.address >= MuslHeap::kGroup && s.address < h.nested;
      INFO("slot " << hexAddress(s.address));
      CHECK((w.at(s.address) == nullptr) == in_outer);
    }
  }
  SECTION("groups claim absurd mappings, or point back at other metas") {
    FakeProcess p;
    MuslHeap h = putMuslHeap(p);
    p.put64(MuslHeap::kAreas + 0x18 + 2 * 40 + 0x20, 63 << 6 | 1 << 5 | (1ull << 50) << 12);
    p.put64(MuslHeap::kDonated, MuslHeap::kAreas + 0x18 + 4 * 40);
    const WalkedHeap w = walkHeap(p.snapshot(), "musl");
    CHECK(w.warned("group mapping is too large"));
    CHECK(w.warned("group header does not point back at the meta"));
    CHECK(w.fact("metas_rejected") == "2");
    CHECK(w.allocations.size() == h.slots.size() - 2);
  }
  SECTION("no initialised context, or one whose head meta area is not its own, is no musl heap") {
    FakeProcess p;
    putMuslHeap(p);
    CHECK(detects(p));
    p.put32(MuslHeap::kCtx + 8, 0); // init_done
    CHECK_FALSE(detects(p));
    FakeProcess q;
    putMuslHeap(q);
    q.put64(MuslHeap::kCtx + 0x38, 0x50000000); // a head area that is not mapped
    CHECK_FALSE(detects(q));
    FakeProcess r;
    putMuslHeap(r);
    r.put64(MuslHeap::kAreas, 0x5ec7e7); // the head area does not carry the secret
    CHECK_FALSE(detects(r));
  }
}
