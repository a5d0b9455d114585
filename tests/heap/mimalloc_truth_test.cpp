// The mimalloc walker against ground truth: fixtures/programs/alloc_truth.c (as it is, and in its
// cross-thread mode) run with Debian's libmimalloc preloaded prints every buffer it holds; gcore
// dumps them; the walker must find each at its exact address with the usable size mimalloc
// answered, in the right state, in the right thread's heap. Then the same core with damage
// patched in.
//
// Needs gdb (gcore) and libmimalloc2.0 (scripts/setup.sh --tests installs both). Without them the
// tests are skipped with a visible warning, except under CI (CI set), where they fail.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/unclaimed.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/heap_walk.h"
#include "support/test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// What Debian's libmimalloc2.0 installs (the soname link to libmimalloc.so.2.0).
const char *const kMimallocLibrary = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2";

/// A core of alloc_truth (with `args`) run under mimalloc, made once per test run, or nullptr:
/// see preloadedCore.
const PreloadedCore *mimallocCore(const std::vector<std::string> &args = {}) {
  return preloadedCore(kMimallocLibrary, "alloc_truth", args);
}

/// The registered mimalloc walker's walk of `snap`, which it must detect.
WalkedHeap walk(const Snapshot &snap) {
  WalkedHeap w = walkHeap(walkerNamed("mimalloc"), snap);
  REQUIRE(w.detected);
  return w;
}

/// The last record of each address: the program records buffers in the order it made and freed
/// them, so a freed buffer whose address was handed out again is superseded by its reuse.
std::map<uint64_t, nlohmann::json> latestByAddress(const std::vector<nlohmann::json> &manifest) {
  std::map<uint64_t, nlohmann::json> latest;
  for (const nlohmann::json &m : manifest)
    latest[manifestAddress(m)] = m;
  return latest;
}

/// The checks every core of a ground-truth program passes: every live buffer at its address
/// with mimalloc's usable size, used, in its thread's heap (0 for a thread that exited); every
/// freed one not reported used; allocations in order, inside segments, never overlapping.
/// Returns the heap (Allocation::arena) of each thread's live buffers.
std::map<std::string, uint64_t> checkAgainstManifest(const WalkedHeap &w,
                                                     const std::vector<nlohmann::json> &manifest) {
  REQUIRE(w.error.empty());
  CHECK(w.warnings.empty());
  std::map<std::string, std::set<uint64_t>> heaps_by_thread;
  unsigned used = 0, freed = 0;
  for (const auto &[address, m] : latestByAddress(manifest)) {
    INFO("manifest entry " << m.dump());
    const uint64_t usable = m.at("usable_size").get<uint64_t>();
    const Allocation *a = w.at(address);
    if (m.at("state") == "used") {
      ++used;
      REQUIRE(a != nullptr);
      CHECK(a->size == usable);
      CHECK(a->state == AllocState::Used);
      CHECK(a->chunk_address == address);
      CHECK(a->mmapped == (usable > (16u << 20))); // above MI_LARGE_OBJ_SIZE_MAX: a huge segment
      heaps_by_thread[m.at("thread").get<std::string>()].insert(a->arena);
      continue;
    }
    ++freed;
    // A freed block is reported free, or not at all (its page or huge segment went back); no
    // block in use holds its address (allocations are in address order).
    if (a)
      CHECK(a->state == AllocState::Free);
    auto after =
        std::upper_bound(w.allocations.begin(), w.allocations.end(), address,
                         [](uint64_t addr, const Allocation &x) { return addr < x.address; });
    if (after != w.allocations.begin()) {
      const Allocation &holder = *std::prev(after);
      CHECK_FALSE((holder.state == AllocState::Used && address < holder.address + holder.size));
    }
  }
  CHECK(used > 100);
  CHECK(freed > 20);

  for (size_t i = 1; i < w.allocations.size(); ++i)
    CHECK(w.allocations[i - 1].address + w.allocations[i - 1].size <= w.allocations[i].address);
  size_t area = 0;
  for (const Allocation &a : w.allocations) {
    while (area < w.result.areas.size() &&
           w.result.areas[area].start + w.result.areas[area].size <= a.address)
      ++area;
    REQUIRE(area < w.result.areas.size());
    CHECK(a.address >= w.result.areas[area].start);
    CHECK(a.address + a.size <= w.result.areas[area].start + w.result.areas[area].size);
  }
  for (const HeapArea &a : w.result.areas)
    CHECK(a.start % (32u << 20) == 0);
  CHECK(w.result.size_classes);

  std::map<std::string, uint64_t> heap_of;
  for (const auto &[thread, heaps] : heaps_by_thread) {
    INFO("thread " << thread);
    CHECK(heaps.size() == 1);
    heap_of[thread] = *heaps.begin();
  }
  return heap_of;
}

} // namespace

TEST_CASE("mimalloc walker finds every buffer of alloc_truth run under mimalloc", "[live]") {
  const PreloadedCore *core = mimallocCore();
  if (!core)
    return;
  auto snap = openSnapshot(core->path);
  WalkedHeap w = walk(*snap);
  std::map<std::string, uint64_t> heap_of = checkAgainstManifest(w, core->manifest);

  std::set<std::string> hows;
  for (const nlohmann::json &m : core->manifest)
    hows.insert(m.at("how").get<std::string>());
  for (const char *how : {"class", "calloc", "aligned", "realloc", "large", "thread", "free-class",
                          "free-thread", "free-large"})
    CHECK(hows.count(how) == 1);

  // Each thread allocates from its own heap; the main thread's is _mi_heap_main.
  REQUIRE(heap_of.size() == 3);
  CHECK(heap_of["main"] != 0);
  CHECK(heap_of["t1"] != 0);
  CHECK(heap_of["t2"] != 0);
  CHECK(heap_of["t1"] != heap_of["t2"]);
  CHECK(heap_of["main"] != heap_of["t1"]);
  CHECK(w.fact("main_heap") == hexAddress(heap_of["main"]));
  CHECK(w.fact("heaps") == "3");
  CHECK(w.fact("library") == "libmimalloc.so.2.0");
  CHECK(w.fact("huge_segments") == "1"); // the 40 MiB block; the freed 24 MiB one is unmapped
  CHECK(w.fact("abandoned_segments") == "0");

  // The segments explain all of mimalloc's memory: what no area claims is the program's and the
  // libraries' .bss and mimalloc's thread data (under a megabyte).
  uint64_t unclaimed = 0;
  for (const UnclaimedRange &r : unclaimedRanges(*snap, w.result.areas))
    unclaimed += r.size;
  CHECK(unclaimed < (1u << 20));
}

TEST_CASE("mimalloc walker: frees from other threads and buffers of a thread that exited",
          "[live]") {
  const PreloadedCore *core = mimallocCore({"cross-thread"});
  if (!core)
    return;
  auto snap = openSnapshot(core->path);
  WalkedHeap w = walk(*snap);
  std::map<std::string, uint64_t> heap_of = checkAgainstManifest(w, core->manifest);

  // The remote frees are on thread-free lists and, one per full page, on the owner heap's
  // delayed-free list; the exited thread's segment is abandoned (no heap).
  std::map<std::string, unsigned> found_free;
  for (const auto &[address, m] : latestByAddress(core->manifest)) {
    const Allocation *a = w.at(address);
    if (m.at("state") == "free" && a && a->state == AllocState::Free)
      ++found_free[m.at("how").get<std::string>()];
  }
  CHECK(found_free["free-remote"] > 300);
  CHECK(found_free["free-after-exit"] > 50);
  CHECK(std::stoul(w.fact("delayed_frees")) > 0);
  CHECK(w.fact("abandoned_segments") == "1");
  CHECK(heap_of["owner"] != 0);
  CHECK(heap_of["exited"] == 0);
}

TEST_CASE("mimalloc walker survives a damaged core with warnings and partial results", "[live]") {
  const PreloadedCore *core = mimallocCore();
  if (!core)
    return;
  auto clean = openSnapshot(core->path);
  WalkedHeap before = walk(*clean);
  REQUIRE(before.error.empty());
  auto entry = [&](const std::string &how, const std::string &thread, uint64_t usable) -> uint64_t {
    for (const auto &[address, m] : latestByAddress(core->manifest))
      if (m.at("how") == how && m.at("thread") == thread && m.at("usable_size") == usable &&
          m.at("state") == "used")
        return address;
    FAIL("no manifest entry " << how << " " << thread << " " << usable);
    return 0;
  };
  auto segmentOf = [](uint64_t address) { return address & ~uint64_t((32u << 20) - 1); };
  auto descriptorOf = [&](uint64_t address) { // the first slice of a small page
    return segmentOf(address) + 0x108 + ((address - segmentOf(address)) >> 16) * 80;
  };
  // (1) A free block of main's 1024-byte page links to itself (a loop). (2) The descriptor of
  // main's 2048-byte page claims 65,535 blocks. (3) t2's first page claims 2^32-1 slices.
  // (4) t1's segment gets another cookie.
  const uint64_t kib1 = entry("class", "main", 1280);
  const uint64_t kib2 = entry("class", "main", 2048);
  const uint64_t t2 = entry("thread", "t2", 256);
  const uint64_t t1 = entry("thread", "t1", 256);
  const uint64_t huge = entry("large", "main", 40u << 20);
  uint64_t loop_block = 0; // the page's free block at the highest address: the end of its list
  for (const Allocation &a : before.allocations)
    if (a.state == AllocState::Free && descriptorOf(a.address) == descriptorOf(kib1))
      loop_block = a.address;
  REQUIRE(loop_block != 0);
  REQUIRE(segmentOf(t1) != segmentOf(t2));
  REQUIRE(segmentOf(t1) != segmentOf(kib1));

  // The damaged core is a copy patched in place (no copy of it in memory).
  const std::string bad_path = scratchDir("mimalloc_damaged") + "/core";
  std::filesystem::copy_file(core->path, bad_path);
  std::fstream file(bad_path, std::ios::in | std::ios::out | std::ios::binary);
  AddressSpace memory(*clean);
  auto patch = [&](uint64_t addr, const void *value, size_t n) {
    const MemoryRange *r = memory.rangeContaining(addr);
    REQUIRE(r != nullptr);
    file.seekp(static_cast<std::streamoff>(
        r->bytes.data() - reinterpret_cast<const uint8_t *>(clean->file->getBufferStart()) +
        (addr - r->start)));
    file.write(static_cast<const char *>(value), static_cast<std::streamsize>(n));
    REQUIRE(file.good());
  };
  const uint16_t capacity = 0xffff;
  const uint32_t slices = 0xffffffff;
  const uint64_t cookie = 0x1234;
  patch(loop_block, &loop_block, 8);
  patch(descriptorOf(kib2) + 0xa, &capacity, 2);
  patch(segmentOf(t2) + 0x108 + 80, &slices, 4);
  patch(segmentOf(t1) + 0xd8, &cookie, 8);
  file.close();

  auto bad = openSnapshot(bad_path);
  WalkedHeap w = walk(*bad);
  REQUIRE(w.error.empty());
  CHECK(w.seconds < kHangGuardSeconds);
  CHECK(w.warned(hexAddress(descriptorOf(kib1)) + ": free list: " + hexAddress(loop_block) +
                 " is on a list already (a loop)"));
  CHECK(w.warned(hexAddress(descriptorOf(kib2)) +
                 ": page descriptor: capacity above the blocks reserved"));
  CHECK(w.warned("runs past the segment (segment at " + hexAddress(segmentOf(t2))));
  CHECK(w.warned(hexAddress(segmentOf(t1)) + ": segment header whose cookie disagrees"));
  CHECK(w.fact("segments_not_walked") == "1");
  CHECK(w.fact("segments_cut_short") == "1");
  // What the damage did not touch is still there, exactly: the other segments, and main's other
  // pages.
  REQUIRE(w.at(huge) != nullptr);
  CHECK(w.at(huge)->state == AllocState::Used);
  unsigned untouched = 0;
  for (const Allocation &a : before.allocations) {
    INFO("allocation at " << hexAddress(a.address));
    const Allocation *now = w.at(a.address);
    if (segmentOf(a.address) == segmentOf(t1) || segmentOf(a.address) == segmentOf(t2) ||
        descriptorOf(a.address) == descriptorOf(kib2)) {
      CHECK(now == nullptr);
    } else if (descriptorOf(a.address) == descriptorOf(kib1)) {
      REQUIRE(now != nullptr);
      // loop_block was the last of its list: every free block is still found free.
      CHECK(now->state == (a.state == AllocState::Free ? AllocState::Free : AllocState::Unknown));
    } else {
      ++untouched;
      REQUIRE(now != nullptr);
      CHECK(now->size == a.size);
      CHECK(now->state == a.state);
    }
  }
  CHECK(untouched > 100);
}
