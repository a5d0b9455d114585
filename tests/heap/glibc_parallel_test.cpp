// The glibc walker on several threads (WalkOptions::threads): the same allocations, areas,
// counts, facts and warnings, in the same order, as on one thread, for glibc_truth (a main heap,
// three arenas with a thread heap each, mmapped chunks, tcaches and fastbins), live and committed,
// and for a copy of it with two of its heaps cut short (warnings from two work items).
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/heap_walk.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// Walks `snapshot` with glibc's walker on one thread and on four, and checks that both say the
/// same. Returns the one-thread walk.
WalkedHeap checkSameOnFourThreads(const Snapshot &snapshot) {
  const HeapWalker &glibc = walkerNamed("glibc");
  unsigned lanes_one = 0, lanes_four = 0;
  const WalkedHeap one = walkHeapOn(glibc, snapshot, 1, lanes_one);
  const WalkedHeap four = walkHeapOn(glibc, snapshot, 4, lanes_four);
  REQUIRE(one.error.empty());
  REQUIRE(four.error.empty());
  CHECK(lanes_one == 1);
  INFO("threads that reported allocations on 4: " << lanes_four);

  // Every allocation, merged by address.
  REQUIRE(one.allocations.size() == four.allocations.size());
  for (size_t i = 0; i < one.allocations.size(); ++i) {
    const Allocation &a = one.allocations[i], &b = four.allocations[i];
    INFO("allocation " << i << " at " << hexAddress(a.address));
    CHECK(a.address == b.address);
    CHECK(a.size == b.size);
    CHECK(a.chunk_address == b.chunk_address);
    CHECK(a.chunk_size == b.chunk_size);
    CHECK(a.arena == b.arena);
    CHECK(a.state == b.state);
    CHECK(a.mmapped == b.mmapped);
  }
  // The result: areas in order, counts, facts.
  REQUIRE(one.result.areas.size() == four.result.areas.size());
  for (size_t i = 0; i < one.result.areas.size(); ++i) {
    const HeapArea &a = one.result.areas[i], &b = four.result.areas[i];
    CHECK(a.kind == b.kind);
    CHECK(a.start == b.start);
    CHECK(a.size == b.size);
    CHECK(a.arena == b.arena);
  }
  const HeapStats &s = one.result.stats, &t = four.result.stats;
  CHECK(s.used_count == t.used_count);
  CHECK(s.used_bytes == t.used_bytes);
  CHECK(s.free_count == t.free_count);
  CHECK(s.free_bytes == t.free_bytes);
  CHECK(s.unknown_count == t.unknown_count);
  CHECK(s.unknown_bytes == t.unknown_bytes);
  CHECK(one.result.facts == four.result.facts);
  // The warnings, in the same order.
  REQUIRE(one.warnings.size() == four.warnings.size());
  for (size_t i = 0; i < one.warnings.size(); ++i) {
    CHECK(one.warnings[i].where == four.warnings[i].where);
    CHECK(one.warnings[i].message == four.warnings[i].message);
  }
  return one;
}

/// Checks what glibc_truth's heaps hold: several areas of each kind to walk at once.
void checkShape(const WalkedHeap &w) {
  CHECK(w.count("thread_heaps") >= 2);
  CHECK(w.count("mmapped_chunks") >= 2);
  CHECK(w.count("tcaches") >= 1);
  CHECK(w.result.stats.free_count > 0);
}

} // namespace

TEST_CASE("glibc walker on 4 threads reports what it reports on one: committed glibc_truth core") {
  auto snap = openSnapshot(unpackedFixture("cores/glibc_truth.core.xz"));
  const WalkedHeap w = checkSameOnFourThreads(*snap);
  checkShape(w);
  CHECK(w.warnings.empty());
}

TEST_CASE("glibc walker on 4 threads reports what it reports on one: a live glibc_truth process",
          "[live]") {
  if (!gcoreOrSkipped())
    return;
  LiveProcess proc(fixtureProgram("glibc_truth"));
  const std::string core = scratchDir("glibc_parallel_live") + "/core";
  proc.gcore(core);
  auto snap = openSnapshot(core);
  checkShape(checkSameOnFourThreads(*snap));
}

TEST_CASE("glibc walker on 4 threads warns as on one, in the same order, about two heaps cut "
          "short by a corrupt chunk header") {
  const std::string core = unpackedFixture("cores/glibc_truth.core.xz");
  auto original = openSnapshot(core);
  const WalkedHeap w = walkHeap(*original, "glibc");
  // A chunk in the middle of each of two thread heaps gets a size below the minimum.
  std::vector<uint64_t> heaps, corrupt;
  for (const HeapArea &area : w.result.areas) {
    if (area.kind != "thread-heap" || heaps.size() == 2)
      continue;
    std::vector<uint64_t> chunks;
    for (const Allocation &a : w.allocations)
      if (a.chunk_address >= area.start && a.chunk_address < area.start + area.size)
        chunks.push_back(a.chunk_address);
    if (chunks.size() < 3)
      continue;
    heaps.push_back(area.start);
    corrupt.push_back(chunks[chunks.size() / 2]);
  }
  REQUIRE(heaps.size() == 2);
  const std::string damaged = scratchDir("glibc_parallel_damaged") + "/core";
  std::filesystem::copy_file(core, damaged, std::filesystem::copy_options::overwrite_existing);
  for (uint64_t chunk : corrupt)
    patchCopyAt<uint64_t>(damaged, *original, chunk + 8, 0x11);
  auto snap = openSnapshot(damaged);
  const WalkedHeap one = checkSameOnFourThreads(*snap);
  CHECK(one.count("heaps_cut_short") == 2);
  for (size_t i = 0; i < heaps.size(); ++i) {
    CHECK(one.warned(hexAddress(corrupt[i]) + ": chunk size 16 is below the minimum"));
    CHECK(one.warned("heap at " + hexAddress(heaps[i]) + "; the rest of this heap is not walked"));
  }
}
