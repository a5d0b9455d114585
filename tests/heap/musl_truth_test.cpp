// The musl mallocng walker against ground truth: fixtures/programs/alloc_truth.c, built with
// musl-gcc (static, as Alpine-style images ship programs, and dynamic against libc.so), prints
// every buffer it holds with malloc_usable_size; the walker must find them in a core of it (a live
// gcore of each build, and the committed core), the other walkers must claim none of its memory,
// and the same core corrupted must give warnings and the rest of the heap.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/unclaimed.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/heap_walk.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The allocation whose slot holds `address`, or nullptr.
const Allocation *slotHolding(const WalkedHeap &w, uint64_t address) {
  for (const Allocation &a : w.allocations)
    if (address >= a.chunk_address && address < a.chunk_address + a.chunk_size)
      return &a;
  return nullptr;
}

/// The manifest's last record for each address (a freed buffer's address may be handed out
/// again), with its position in the manifest.
std::map<uint64_t, std::pair<size_t, const nlohmann::json *>>
lastRecords(const std::vector<nlohmann::json> &manifest) {
  std::map<uint64_t, std::pair<size_t, const nlohmann::json *>> last;
  for (size_t i = 0; i < manifest.size(); ++i)
    last[manifestAddress(manifest[i])] = {i, &manifest[i]};
  return last;
}

/// Every check of the ground truth against a walk of a core of alloc_truth under musl.
void checkAgainstManifest(const Snapshot &snap, const std::vector<nlohmann::json> &manifest,
                          const std::string &context_in) {
  const WalkedHeap w = walkHeap(snap, "musl");
  REQUIRE(w.error.empty());
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  CHECK(w.warnings.empty());
  REQUIRE(manifest.size() >= 200);
  CHECK(w.fact("malloc_context").find(context_in) != std::string::npos);
  CHECK(w.fact("meta_areas") != "0");
  CHECK_FALSE(w.result.size_classes); // malloc_usable_size is the requested size, not a class

  // Every live buffer at its exact address with the usable size the program printed (musl:
  // exactly the size it asked for), and nothing else in use: the program allocates nothing else.
  const auto last = lastRecords(manifest);
  std::set<std::string> thread_hows;
  size_t live = 0;
  for (const auto &[address, record] : last) {
    const nlohmann::json &m = *record.second;
    if (m.at("state") != "used")
      continue;
    ++live;
    INFO("manifest entry " << m.dump());
    const Allocation *a = w.at(address);
    REQUIRE(a != nullptr);
    CHECK(a->state == AllocState::Used);
    CHECK(a->size == m.at("usable_size").get<uint64_t>());
    CHECK(a->size == m.at("requested").get<uint64_t>());
    const uint64_t requested = m.at("requested").get<uint64_t>();
    if (requested >= 131052) // MMAP_THRESHOLD: always an allocation in its own mapping
      CHECK(a->mmapped);
    if (requested < 2048) // a slot of a multi-slot group
      CHECK_FALSE(a->mmapped);
    thread_hows.insert(m.at("thread").get<std::string>() + " " + m.at("how").get<std::string>());
  }
  CHECK(w.result.stats.used_count == live);
  for (const char *how : {"main class", "main calloc", "main aligned", "main realloc", "main large",
                          "t1 thread", "t2 thread"})
    CHECK(thread_hows.count(how) == 1);

  // Freed buffers are never used: each one's slot is free, was handed out again for a buffer the
  // program printed later, or is gone with its group's mapping.
  unsigned free_at_pointer = 0, free_behind_offset = 0, reused = 0, unmapped = 0;
  for (const auto &[address, record] : last) {
    const nlohmann::json &m = *record.second;
    if (m.at("state") != "free")
      continue;
    INFO("manifest entry " << m.dump());
    const Allocation *slot = slotHolding(w, address);
    if (!slot) {
      ++unmapped;
      continue;
    }
    if (slot->state == AllocState::Used) {
      auto it = last.find(slot->address);
      REQUIRE(it != last.end());
      CHECK(it->second.first > record.first);
      ++reused;
      continue;
    }
    CHECK(slot->state == AllocState::Free);
    if (slot->address == address) { // the pointer free() marked, recovered
      ++free_at_pointer;
      free_behind_offset += address != slot->chunk_address;
    }
  }
  CHECK(free_at_pointer >= 5);
  CHECK(free_behind_offset >= 1);
  CHECK(reused >= 5);
  CHECK(unmapped >= 20); // the single-slot mappings of the big sizes
  const Allocation *gone = nullptr;
  for (const nlohmann::json &m : manifest)
    if (m.at("how") == "free-large")
      gone = slotHolding(w, manifestAddress(m));
  CHECK(gone == nullptr);

  // Slots come in address order and never overlap; areas are sorted, disjoint and hold them.
  for (size_t i = 1; i < w.allocations.size(); ++i) {
    const Allocation &p = w.allocations[i - 1], &c = w.allocations[i];
    CHECK(p.chunk_address + p.chunk_size <= c.chunk_address);
  }
  const std::vector<HeapArea> &areas = w.result.areas;
  for (size_t i = 1; i < areas.size(); ++i)
    CHECK(areas[i - 1].start + areas[i - 1].size <= areas[i].start);
  for (const Allocation &a : w.allocations) {
    INFO("slot at " << hexAddress(a.chunk_address));
    bool inside = false;
    for (const HeapArea &area : areas)
      inside |= a.chunk_address >= area.start &&
                a.chunk_address + a.chunk_size <= area.start + area.size &&
                (!a.mmapped || area.kind == "mmapped");
    CHECK(inside);
  }

  // No other walker claims this memory, and nothing of the heap is left unexplained: the brk
  // holds only meta areas, and the unclaimed anonymous memory is the program's .bss.
  AddressSpace memory(snap);
  for (const auto &other : heapWalkers()) {
    if (other->name() == "musl" || !other->detect(memory))
      continue;
    INFO("walker " << other->name().str());
    Diagnostics diags;
    uint64_t claimed = 0;
    auto result = other->walk(
        memory, [&](const Allocation &) { ++claimed; }, diags);
    if (result)
      CHECK(result->areas.empty());
    else
      llvm::consumeError(result.takeError());
    CHECK(claimed == 0);
  }
  uint64_t unclaimed_heap = 0, unclaimed_total = 0;
  for (const UnclaimedRange &r : unclaimedRanges(snap, areas)) {
    unclaimed_total += r.size;
    if (r.cls == RegionClass::Heap)
      unclaimed_heap += r.size;
  }
  CHECK(unclaimed_heap == 0);
  CHECK(unclaimed_total < (1u << 20));
}

/// Runs build/fixtures/musl/`build`, dumps it with gcore and checks the walk; returns without a
/// check (a FAIL under CI) when musl-gcc built nothing or gcore cannot attach.
void checkLiveProcess(const std::string &build, const std::string &context_in) {
  const std::string program = fixtureProgram("musl/" + build);
  if (!availableOrSkipped(std::filesystem::exists(program),
                          program + " was not built: musl-gcc is missing (Debian: musl-tools; "
                                    "scripts/setup.sh --tests installs it, then re-run cmake)") ||
      !availableOrSkipped(canRunGcore(), "gcore cannot attach to a child here"))
    return;
  LiveProcess proc(program);
  const std::string core = scratchDir("musl_" + build) + "/core";
  proc.gcore(core);
  auto snap = openSnapshot(core);
  checkAgainstManifest(*snap, proc.manifest(), context_in);
  snap.reset();
  std::filesystem::remove(core);
}

/// The group holding the user pointer `p`, from its in-band header as musl's get_meta reads it
/// (written here from musl's meta.h, not from the walker): the u16 at p-2 counts 16-byte units
/// from the group's storage, 16 bytes after the group header.
uint64_t groupOf(const Snapshot &snap, uint64_t p) {
  REQUIRE(readAt<uint8_t>(snap, p - 4) == 0); // no 32-bit offset in alloc_truth
  return p - 16 * uint64_t(readAt<uint16_t>(snap, p - 2)) - 16;
}

} // namespace

TEST_CASE("musl walker finds every buffer of a live static alloc_truth (musl-gcc -static)",
          "[live]") {
  checkLiveProcess("alloc_truth", "the .bss after ");
}

TEST_CASE("musl walker finds every buffer of a live dynamic alloc_truth (musl libc.so)", "[live]") {
  checkLiveProcess("alloc_truth-dynamic", "libc.so");
}

TEST_CASE("musl walker finds every buffer of the committed musl alloc_truth core") {
  auto snap = openSnapshot(unpackedFixture("cores/musl_alloc_truth.core.xz"));
  checkAgainstManifest(
      *snap, readJsonLines(sourceDir() + "/fixtures/cores/musl_alloc_truth.manifest.jsonl"),
      "the .bss after ");
}

TEST_CASE("musl walker survives a corrupted musl alloc_truth core") {
  const std::string clean_path = unpackedFixture("cores/musl_alloc_truth.core.xz");
  auto clean = openSnapshot(clean_path);
  const WalkedHeap before = walkHeap(*clean, "musl");
  REQUIRE(before.error.empty());
  const auto manifest =
      readJsonLines(sourceDir() + "/fixtures/cores/musl_alloc_truth.manifest.jsonl");
  const auto last = lastRecords(manifest);
  auto liveRecord = [&](const std::string &how, uint64_t min_usable) -> uint64_t {
    for (const auto &[address, record] : last)
      if (record.second->at("state") == "used" && record.second->at("how") == how &&
          record.second->at("usable_size").get<uint64_t>() >= min_usable)
        return address;
    FAIL("no live manifest entry " << how);
    return 0;
  };
  // (1) A slot of a multi-slot group names another slot index; (2) the 40 MiB block's meta
  // claims a mapping of 2^40 pages; (3) the group of a thread's buffer does not point back at its
  // meta; (4) the last meta area's next pointer leads back to the first (a loop).
  const uint64_t bad_index = liveRecord("class", 1000);
  const uint64_t bad_index_slot = before.at(bad_index)->chunk_address;
  const uint64_t huge = liveRecord("large", 40 << 20);
  const uint64_t huge_meta = readAt<uint64_t>(*clean, groupOf(*clean, huge));
  const uint64_t orphan = liveRecord("thread", 10000);
  const uint64_t orphan_group = groupOf(*clean, orphan);
  const std::string context = before.fact("malloc_context");
  const uint64_t ctx = *parseHexAddress(context.substr(0, context.find(' ')));
  const uint64_t first_area = readAt<uint64_t>(*clean, ctx + 0x38); // meta_area_head
  const uint64_t last_area = readAt<uint64_t>(*clean, ctx + 0x40);  // meta_area_tail
  REQUIRE(first_area != last_area);
  REQUIRE(groupOf(*clean, bad_index) != orphan_group);

  const std::string bad_path = scratchDir("musl_alloc_truth_corrupt") + "/core";
  std::filesystem::copy_file(clean_path, bad_path);
  const uint8_t index_byte = readAt<uint8_t>(*clean, bad_index - 3);
  patchCopyAt<uint8_t>(bad_path, *clean, bad_index - 3, uint8_t(index_byte ^ 1));
  const uint64_t huge_bits = readAt<uint64_t>(*clean, huge_meta + 0x20);
  patchCopyAt<uint64_t>(bad_path, *clean, huge_meta + 0x20,
                        (huge_bits & 0xfff) | (uint64_t(1) << 52));
  patchCopyAt<uint64_t>(bad_path, *clean, orphan_group, 0x1230);
  patchCopyAt<uint64_t>(bad_path, *clean, last_area + 8, first_area);

  auto bad = openSnapshot(bad_path);
  const WalkedHeap w = walkHeap(*bad, "musl");
  REQUIRE(w.error.empty());
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  CHECK(w.seconds < kHangGuardSeconds);
  CHECK(w.warned(hexAddress(bad_index_slot) + ": the header names another slot index"));
  CHECK(w.warned(hexAddress(huge_meta) + ": group mapping is too large"));
  CHECK(w.warned("group header does not point back at the meta"));
  CHECK(w.warned(hexAddress(first_area) + ": the meta-area chain loops back here"));

  // The damaged slot is unknown at its slot's bounds; the two rejected groups are missing; every
  // other live buffer is still found with its exact size.
  REQUIRE(w.at(bad_index_slot) != nullptr);
  CHECK(w.at(bad_index_slot)->state == AllocState::Unknown);
  CHECK(slotHolding(w, huge) == nullptr);
  CHECK(slotHolding(w, orphan) == nullptr);
  unsigned still_found = 0;
  for (const auto &[address, record] : last) {
    if (record.second->at("state") != "used" || address == bad_index || address == huge ||
        groupOf(*clean, address) == orphan_group)
      continue;
    INFO("manifest entry " << record.second->dump());
    const Allocation *a = w.at(address);
    REQUIRE(a != nullptr);
    CHECK(a->state == AllocState::Used);
    CHECK(a->size == record.second->at("usable_size").get<uint64_t>());
    ++still_found;
  }
  CHECK(still_found > 100);
  bad.reset();
  std::filesystem::remove(bad_path);
}
