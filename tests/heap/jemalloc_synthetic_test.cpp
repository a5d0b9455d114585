// The jemalloc walker on a hand-laid heap (tests/support/synthetic_jemalloc.h: jemalloc linked
// into the executable, one arena, one thread cache, a slab, a large and a dirty extent), exactly,
// and on hostile variants of it: each damage is a warning, the rest of the heap is still walked,
// and the work stays bounded.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "support/heap_walk.h"
#include "support/synthetic_jemalloc.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

using H = JemallocHeap;

/// The synthetic process, ready to be damaged before its snapshot is taken.
struct Synthetic {
  FakeProcess process;
  JemallocHeap heap;
  Synthetic() {
    heap = putJemallocHeap(process, [this](uint64_t start, uint64_t size) {
      process.addRegion(start, size, "/opt/app/program");
    });
    process.addAuxv(9, H::kEntry); // AT_ENTRY
  }
  WalkedHeap walk() { return walkHeap(process.snapshot(), "jemalloc"); }
};

void printWarnings(const WalkedHeap &w) {
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
}

} // namespace

TEST_CASE("jemalloc walker reads a hand-laid heap exactly") {
  Synthetic s;
  WalkedHeap w = s.walk();
  printWarnings(w);
  REQUIRE(w.error.empty());
  CHECK(w.warnings.empty());
  CHECK(w.fact("found_in") == "/opt/app/program (linked in statically)");
  CHECK(w.fact("tcaches") == "1");
  CHECK(w.fact("tcache_cached") == "1");
  CHECK(w.fact("internal_allocations") == "1");
  CHECK(w.result.size_classes);

  // 15 regions (the 16th holds the tcache's stacks), then the large extent.
  REQUIRE(w.allocations.size() == H::kSlabRegions);
  for (unsigned r = 0; r + 1 < H::kSlabRegions; ++r) {
    INFO("region " << r);
    const Allocation &a = w.allocations[r];
    CHECK(a.address == H::kSlab + 256 * r);
    CHECK(a.size == 256);
    CHECK(a.arena == H::kArena);
    bool free = r == H::kFreeRegions[0] || r == H::kFreeRegions[1] || r == H::kCachedRegion;
    CHECK(a.state == (free ? AllocState::Free : AllocState::Used));
  }
  const Allocation &large = w.allocations.back();
  CHECK(large.address == H::kLargeUser);
  CHECK(large.size == 16384);
  CHECK(large.chunk_address == H::kLarge);
  CHECK(large.chunk_size == 0x5000);
  CHECK(large.state == AllocState::Used);

  std::vector<std::string> kinds;
  for (const HeapArea &a : w.result.areas)
    kinds.push_back(a.kind + "@" + std::to_string(a.start));
  CHECK(kinds == std::vector<std::string>{
                     "metadata@" + std::to_string(H::kBlock), "slabs@" + std::to_string(H::kSlab),
                     "large@" + std::to_string(H::kLarge), "dirty@" + std::to_string(H::kDirty)});
}

TEST_CASE("jemalloc walker without its thread caches reports small regions unknown") {
  Synthetic s;
  s.process.put64(H::kArenas, 0); // no arenas[]: no tcache ring to read
  WalkedHeap w = s.walk();
  REQUIRE(w.error.empty());
  CHECK(w.warned("arenas not found"));
  CHECK(w.fact("tcaches") == "0");
  REQUIRE(w.at(H::kSlab) != nullptr);
  CHECK(w.at(H::kSlab)->state == AllocState::Unknown);
  CHECK(w.at(H::kSlab + 256 * 3)->state == AllocState::Free); // the bitmap still says free
  CHECK(w.at(H::kLargeUser)->state == AllocState::Unknown);   // 16 KiB: a tcache could hold it
}

TEST_CASE("jemalloc walker with no thread cache on the ring decides from the bitmap") {
  Synthetic s;
  s.process.put64(H::kArena + 0x2898, 0); // tcache_ql empty (opt.tcache:false, or no thread yet)
  WalkedHeap w = s.walk();
  REQUIRE(w.error.empty());
  CHECK(w.warnings.empty());
  CHECK(w.fact("tcaches") == "0");
  CHECK(w.fact("small_state") == "slab bitmaps and thread caches read");
  REQUIRE(w.allocations.size() == H::kSlabRegions + 1);
  CHECK(w.at(H::kSlab + 256 * H::kCachedRegion)->state == AllocState::Used);
  CHECK(w.at(H::kSlab + 256 * H::kFreeRegions[0])->state == AllocState::Free);
}

TEST_CASE("jemalloc walker survives hostile heaps") {
  SECTION("a slab with an impossible size class") {
    Synthetic s;
    s.process.put64(H::kEdata, jemallocEdataBits(0, true, 0, 200, 2));
    WalkedHeap w = s.walk();
    printWarnings(w);
    REQUIRE(w.error.empty());
    CHECK(w.warned("has size class 200"));
    CHECK(w.at(H::kSlab) == nullptr);
    CHECK(w.at(H::kLargeUser) != nullptr);
  }
  SECTION("a leaf element naming a descriptor outside the dump") {
    Synthetic s;
    s.process.put64(H::kLeaf + 8 * 0x28, jemallocLeafBits(0x7777000, 40, 0, false));
    WalkedHeap w = s.walk();
    REQUIRE(w.error.empty());
    CHECK(w.warned("0x7777000: extent descriptor is not captured"));
    CHECK(w.allocations.size() == H::kSlabRegions);
  }
  SECTION("a large extent too small for its size class, and one absurdly large") {
    Synthetic s;
    s.process.put64(H::kEdata + 128 + 0x10, 0x1000);
    WalkedHeap w = s.walk();
    CHECK(w.warned("which do not fit; skipped"));
    CHECK(w.at(H::kLargeUser) == nullptr);
    Synthetic t;
    t.process.put64(H::kEdata + 128 + 0x10, uint64_t(1) << 60);
    WalkedHeap v = t.walk();
    printWarnings(v);
    REQUIRE(v.error.empty());
    CHECK(v.at(H::kLargeUser) == nullptr);
    CHECK(v.warned("is not mapped to it"));
    CHECK(v.result.areas.size() == 3); // metadata, slabs, dirty
  }
  SECTION("a tcache ring that loops, and one that leaves its arena") {
    Synthetic s;
    const uint64_t second = H::kSlow + 0x1000;
    s.process.put64(H::kSlow, second);
    s.process.put64(second, second); // never back to the head
    s.process.put64(second + 0x28, H::kArena);
    s.process.put64(second + 0xa8, second + 0x100);
    s.process.put64(second + 0x100, second);
    WalkedHeap w = s.walk();
    CHECK(w.warned("tcache ring loops"));
    Synthetic t;
    t.process.put64(H::kSlow, second); // a tcache of no arena
    WalkedHeap v = t.walk();
    CHECK(v.warned("does not belong to this arena"));
    CHECK(v.at(H::kSlab + 256 * H::kCachedRegion)->state == AllocState::Free);
  }
  SECTION("a cache bin claiming thousands of pointers it does not have") {
    Synthetic s;
    const uint64_t bin13 = H::kTcache + 8 + 24 * 13;
    s.process.put64(bin13, 0x30000000);
    s.process.put16(bin13 + 0x14, 0xfff8);
    WalkedHeap w = s.walk();
    REQUIRE(w.error.empty());
    CHECK(w.warned("cache bin 13 claims 8191 cached pointers that cannot be read"));
  }
  SECTION("a cached pointer in a region of another size class, and a double free") {
    Synthetic s;
    const uint64_t bin14 = H::kTcache + 8 + 24 * 14;
    s.process.put64(bin14, H::kStackEnd - 0x100 - 16);
    s.process.put16(bin14 + 0x14, uint16_t(H::kStackEnd - 0x100));
    s.process.put64(H::kStackEnd - 0x100 - 16, H::kSlab + 256 * H::kCachedRegion);
    s.process.put64(H::kStackEnd - 0x100 - 8, 0x7000000);
    WalkedHeap w = s.walk();
    CHECK(w.warned("cached twice"));
    CHECK(w.warned("lie in no active extent"));
  }
  SECTION("a base block list that loops, and two root entries sharing a leaf") {
    Synthetic s;
    s.process.put64(H::kBlock + 8, H::kBlock);
    s.process.put64(H::kRoot + 8 * 2, H::kLeaf);
    WalkedHeap w = s.walk();
    REQUIRE(w.error.empty());
    CHECK(w.warned("base block list breaks"));
    CHECK(w.warned("2 extent map root entries share or overlap this leaf"));
    CHECK(w.at(H::kLargeUser) != nullptr);
  }
  SECTION("every root entry naming one leaf") {
    Synthetic s;
    for (uint64_t i = 0; i < (1u << 18); ++i)
      s.process.put64(H::kRoot + 8 * i, H::kLeaf);
    WalkedHeap w = s.walk();
    REQUIRE(w.error.empty());
    CHECK(w.warned("262144 extent map root entries share or overlap this leaf"));
    CHECK(w.at(H::kLargeUser) != nullptr); // the leaf is walked once, for the GiB it maps
    CHECK(w.seconds < 30);                 // a hang guard (speed is bench/heap_million.sh's)
  }
  SECTION("a quarter million leaf elements naming one slab") {
    Synthetic s;
    for (uint64_t j = 0x40; j < (1u << 18); ++j)
      s.process.put64(H::kLeaf + 8 * j, jemallocLeafBits(H::kEdata, 12, 0, true));
    WalkedHeap w = s.walk();
    REQUIRE(w.error.empty());
    CHECK(w.allocations.size() == H::kSlabRegions); // the slab once, the large extent
    CHECK(w.seconds < 30); // a hang guard (speed is bench/heap_million.sh's)
  }
  SECTION("no size class table: the walk fails with a reason") {
    Synthetic s;
    s.process.put64(H::kIndex2Size, 9);
    AddressSpace memory(s.process.snapshot());
    CHECK_FALSE(walkerNamed("jemalloc").detect(memory));
    Diagnostics diags;
    auto result = walkerNamed("jemalloc")
                      .walk(
                          memory, [](const Allocation &) {}, diags);
    REQUIRE_FALSE(static_cast<bool>(result));
    CHECK(llvm::toString(result.takeError()).find("sz_index2size_tab") != std::string::npos);
  }
}
