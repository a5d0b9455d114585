// The glibc walker against ground truth: fixtures/programs/glibc_truth prints every buffer it
// holds; the walker must find them in a core of it (a live gcore, and the committed core).
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/unclaimed.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/heap_walk.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// Every check of the ground truth against a walk of a core of glibc_truth.
void checkAgainstManifest(const Snapshot &snap, const std::vector<nlohmann::json> &manifest) {
  WalkedHeap w = walkHeap(snap, "glibc");
  REQUIRE(w.error.empty());
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  CHECK(w.warnings.empty());
  REQUIRE(manifest.size() > 700);

  unsigned used = 0, freed = 0;
  std::set<std::string> hows;
  for (const nlohmann::json &m : manifest) {
    uint64_t address = manifestAddress(m);
    uint64_t usable = m.at("usable_size").get<uint64_t>();
    std::string how = m.at("how").get<std::string>();
    hows.insert(how);
    INFO("manifest entry " << m.dump());
    const Allocation *a = w.at(address);
    if (m.at("state") == "used") {
      ++used;
      REQUIRE(a != nullptr);
      CHECK(a->size == usable);
      CHECK(a->state == AllocState::Used); // tcaches were found: small chunks are decided too
      CHECK(a->mmapped == (how.rfind("mmapped", 0) == 0));
      CHECK((a->arena == 0) == a->mmapped);
      continue;
    }
    ++freed;
    if (how == "free-mmapped") {
      // Unmapped by free(): nothing may claim it is in use.
      CHECK(a == nullptr);
      for (const Allocation &x : w.allocations)
        if (x.state == AllocState::Used)
          CHECK_FALSE((address >= x.chunk_address && address < x.chunk_address + x.chunk_size));
      continue;
    }
    REQUIRE(a != nullptr);
    CHECK(a->state == AllocState::Free);
    CHECK(a->size == usable);
  }
  CHECK(used > 700);
  CHECK(freed >= 20);
  for (const char *how :
       {"malloc", "calloc", "memalign", "posix_memalign", "aligned_alloc", "realloc-inplace",
        "realloc-moved", "mmapped", "mmapped-memalign", "mmapped-calloc", "thread1", "thread2",
        "free-tcache", "free-fastbin", "free-small", "free-large", "free-unsorted", "free-mmapped",
        "thread1-free"})
    CHECK(hows.count(how) == 1);

  // No live allocation lies inside a chunk reported free.
  std::vector<const Allocation *> free_chunks;
  for (const Allocation &x : w.allocations)
    if (x.state == AllocState::Free)
      free_chunks.push_back(&x);
  for (const nlohmann::json &m : manifest) {
    if (m.at("state") != "used")
      continue;
    uint64_t address = manifestAddress(m);
    for (const Allocation *f : free_chunks)
      CHECK_FALSE((address >= f->chunk_address && address < f->chunk_address + f->chunk_size));
  }

  // Allocations never overlap and come in address order.
  for (size_t i = 1; i < w.allocations.size(); ++i) {
    const Allocation &p = w.allocations[i - 1], &c = w.allocations[i];
    CHECK(p.chunk_address + p.chunk_size <= c.chunk_address);
  }

  // Two thread arenas; thread2's grew a second heap.
  std::map<uint64_t, std::vector<HeapArea>> heaps_by_arena;
  unsigned main_heaps = 0, mmapped = 0;
  for (const HeapArea &area : w.result.areas) {
    if (area.kind == "thread-heap")
      heaps_by_arena[area.arena].push_back(area);
    main_heaps += area.kind == "main-heap";
    mmapped += area.kind == "mmapped";
  }
  CHECK(main_heaps == 1);
  CHECK(mmapped == 5);
  REQUIRE(heaps_by_arena.size() == 2);
  uint64_t thread2_arena = 0;
  for (const nlohmann::json &m : manifest)
    if (m.at("how") == "thread2")
      thread2_arena = w.at(manifestAddress(m))->arena;
  REQUIRE(heaps_by_arena.count(thread2_arena));
  const auto &big = heaps_by_arena[thread2_arena];
  REQUIRE(big.size() == 2);
  for (const HeapArea &h : big)
    CHECK(h.start % 0x4000000 == 0);
  CHECK(big[0].size + big[1].size > 64ull << 20);
  for (const auto &[arena, heaps] : heaps_by_arena)
    if (arena != thread2_arena)
      CHECK(heaps.size() == 1);

  CHECK(w.fact("glibc_layout").find("2.35-2.40") == 0); // Debian 12: glibc 2.36
  CHECK(w.fact("safe_linking") == "yes");
  CHECK(w.fact("arenas") == "3");
  CHECK(w.fact("main_arena").find("arena ring") != std::string::npos);

  // Memory the walker did not explain: none of the brk heap, and of the anonymous memory only the
  // small rest (the program's 1.2 MiB .bss, libc's .bss, ...): the 71 MiB of thread heaps and
  // mmapped chunks are all claimed.
  uint64_t unclaimed_heap = 0, unclaimed_total = 0;
  for (const UnclaimedRange &r : unclaimedRanges(snap, w.result.areas)) {
    unclaimed_total += r.size;
    if (r.cls == RegionClass::Heap)
      unclaimed_heap += r.size;
  }
  CHECK(unclaimed_heap == 0);
  CHECK(unclaimed_total < (2u << 20));
}

} // namespace

TEST_CASE("glibc walker finds every buffer of a live glibc_truth process", "[live]") {
  if (!gcoreOrSkipped())
    return;
  LiveProcess proc(fixtureProgram("glibc_truth"));
  std::string core = scratchDir("glibc_truth_live") + "/core";
  proc.gcore(core);
  auto snap = openSnapshot(core);
  checkAgainstManifest(*snap, proc.manifest());
}

TEST_CASE("glibc walker finds every buffer of the committed glibc_truth core") {
  std::string core = unpackedFixture("cores/glibc_truth.core.xz");
  auto snap = openSnapshot(core);
  checkAgainstManifest(*snap,
                       readJsonLines(sourceDir() + "/fixtures/cores/glibc_truth.manifest.jsonl"));
}

TEST_CASE("glibc walker survives a corrupted glibc_truth core") {
  std::string clean_path = unpackedFixture("cores/glibc_truth.core.xz");
  auto clean = openSnapshot(clean_path);
  WalkedHeap before = walkHeap(*clean, "glibc");
  REQUIRE(before.error.empty());
  auto manifest = readJsonLines(sourceDir() + "/fixtures/cores/glibc_truth.manifest.jsonl");
  auto find = [&](const std::string &how, uint64_t min_usable) -> const nlohmann::json & {
    for (const nlohmann::json &m : manifest)
      if (m.at("how") == how && m.at("usable_size").get<uint64_t>() >= min_usable)
        return m;
    FAIL("no manifest entry " << how);
    return manifest.front();
  };
  const uint64_t main_victim =
      manifestAddress(find("malloc", 10000)) - 16; // a chunk of the brk heap
  const uint64_t thread_victim = manifestAddress(find("thread1", 50000)) - 16;
  const uint64_t fast = manifestAddress(find("free-fastbin", 0)) - 16;
  const uint64_t thread2_last = manifestAddress(find("thread2", 3000));
  const uint64_t mmapped = manifestAddress(find("mmapped-memalign", 0));
  uint64_t main_arena = 0;
  for (const auto &[k, v] : before.result.facts)
    if (k == "main_arena")
      main_arena = *parseHexAddress(v.substr(0, v.find(' ')));
  REQUIRE(main_arena != 0);
  uint64_t first_thread_heap = 0;
  for (const HeapArea &a : before.result.areas)
    if (a.kind == "thread-heap" && !first_thread_heap)
      first_thread_heap = a.start;

  std::string bad_path = scratchDir("glibc_truth_corrupt") + "/core";
  std::filesystem::copy_file(clean_path, bad_path);
  // (1) A chunk of the brk heap gets size 0; (2) a chunk of thread1's heap runs far past its end;
  // (3) the main arena's fastbin chunk links to itself (a loop; safe-linking mangled);
  // (4) the first thread arena's `next` points to itself (a ring that loops).
  patchCopyAt<uint64_t>(bad_path, *clean, main_victim + 8, 0x1);
  patchCopyAt<uint64_t>(bad_path, *clean, thread_victim + 8, 0x7ffffff0 | 5);
  patchCopyAt<uint64_t>(bad_path, *clean, fast + 16, ((fast + 16) >> 12) ^ fast);
  uint64_t first_arena = readAt<uint64_t>(*clean, first_thread_heap); // heap_info.ar_ptr
  patchCopyAt<uint64_t>(bad_path, *clean, first_arena + 0x870, first_arena);

  auto bad = openSnapshot(bad_path);
  WalkedHeap w = walkHeap(*bad, "glibc");
  REQUIRE(w.error.empty());
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  CHECK(w.seconds < kHangGuardSeconds);
  CHECK(w.warned(hexAddress(main_victim) + ": chunk size 0 is below the minimum"));
  CHECK(w.warned(hexAddress(thread_victim) + ": chunk runs past the heap end"));
  CHECK(w.warned("fastbin 1: list loops"));
  CHECK(w.warned("arena ring"));
  // Partial results: what lies before the damage, the other heaps and the mmapped chunks remain.
  CHECK(w.allocations.size() < before.allocations.size());
  CHECK(w.allocations.size() > 600);
  CHECK(w.at(thread2_last) != nullptr);
  CHECK(w.at(mmapped) != nullptr);
  CHECK(w.at(main_victim + 16) == nullptr);
  REQUIRE(w.at(fast + 16) != nullptr);
  CHECK(w.at(fast + 16)->state == AllocState::Free);
  (void)main_arena;
}
