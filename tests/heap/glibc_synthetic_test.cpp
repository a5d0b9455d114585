// The glibc walker over hand-built snapshots: every layout fact is written here as a literal
// offset (not taken from the walker's headers), so a wrong offset in the walker fails a test.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walk.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/byte_builder.h"
#include "support/heap_walk.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// A fake process memory for the glibc walker: FakeMemory regions (Anonymous unless said so, a
/// backing file notwithstanding), and a snapshot of an x86_64 (or x86) Linux process with its
/// AT_PAGESZ.
class FakeDump : public test::FakeMemory {
public:
  /// Maps [start, start+size); only the first `captured` bytes are in the dump.
  void map(uint64_t start, uint64_t size, bool write, std::string file = "",
           RegionClass cls = RegionClass::Anonymous, uint64_t captured = ~0ull) {
    test::FakeRegion region;
    region.write = write;
    region.file = std::move(file);
    region.cls = cls;
    region.captured = captured;
    addRegion(start, size, region);
  }
  /// Writes a little-endian u64.
  void put(uint64_t addr, uint64_t value) { put64(addr, value); }
  /// A chunk header: prev_size and size word.
  void chunk(uint64_t addr, uint64_t size_word, uint64_t prev_size = 0) {
    put(addr, prev_size);
    put(addr + 8, size_word);
  }
  unsigned pointer_size = 8;

  /// The snapshot over the regions (which must outlive it).
  std::unique_ptr<Snapshot> snapshot() {
    auto snap = FakeMemory::snapshot();
    snap->system.os = Os::Linux;
    snap->system.arch = pointer_size == 8 ? "x86_64" : "x86";
    snap->system.pointer_size = pointer_size;
    snap->auxv.push_back({6, 4096}); // AT_PAGESZ
    return snap;
  }
};

/// Runs the registered glibc walker over `snap` (not every hand-built dump is one detect picks).
WalkedHeap walk(const Snapshot &snap) {
  WalkedHeap w = walkHeap(snap, "glibc", /*must_detect=*/false);
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  return w;
}

// Addresses of the fake process (glibc 2.35+ layout: heap_info 0x30, safe-linking).
constexpr uint64_t kLibcData = 0x7f0000100000;
constexpr uint64_t kMainArena = kLibcData + 0xc60;
constexpr uint64_t kHeap = 0x555555559000;
constexpr uint64_t kHeapSize = 0x21000;
constexpr uint64_t kT1 = 0x7f0004000000; // thread arena's first heap
constexpr uint64_t kT2 = 0x7f0008000000; // its second heap
constexpr uint64_t kArenaT = kT1 + 0x30;
constexpr uint64_t kMmap = 0x7f0010000000;

uint64_t protect(uint64_t pos, uint64_t ptr) {
  return (pos >> 12) ^ ptr;
}

/// An empty malloc_state at `a`: every bin points at itself.
void emptyArena(FakeDump &d, uint64_t a, uint64_t top, uint64_t next, uint64_t system_mem,
                uint32_t flags) {
  d.put(a, uint64_t(flags) << 32);
  for (unsigned i = 0; i < 127; ++i) {
    d.put(a + 0x70 + 16 * i, a + 0x60 + 16 * i);
    d.put(a + 0x78 + 16 * i, a + 0x60 + 16 * i);
  }
  d.put(a + 0x60, top);
  d.put(a + 0x870, next);
  d.put(a + 0x880, 1);
  d.put(a + 0x888, system_mem);
  d.put(a + 0x890, system_mem);
}

/// The standard fake process: main heap with tcache/fastbin/free/used chunks, a thread arena
/// with two heaps, two mmapped chunks (one memalign'd) back to back.
void buildProcess(FakeDump &d) {
  d.map(kLibcData, 0x3000, true, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  d.map(kHeap, kHeapSize, true);
  d.map(kT1, 0x21000, true);
  d.map(kT1 + 0x21000, 0x4000000 - 0x21000, false); // PROT_NONE reservation
  d.map(kT2, 0x10000, true);
  d.map(kMmap, 0x40000, true);

  // Main heap.
  const uint64_t top = kHeap + 0xf50;
  emptyArena(d, kMainArena, top, kArenaT, kHeapSize, 0);
  d.put(kMainArena + 0x10 + 8 * 1, kHeap + 0x320);   // fastbinsY[1] (0x30 chunks)
  d.chunk(kHeap, 0x291);                             // tcache_perthread_struct
  d.put16(kHeap + 0x10 + 2 * 1, 2);                  // counts[1] = 2
  d.put(kHeap + 0x10 + 0x80 + 8 * 1, kHeap + 0x2a0); // entries[1] -> A1's user memory
  d.chunk(kHeap + 0x290, 0x31);                      // A1: tcache
  d.put(kHeap + 0x2a0, protect(kHeap + 0x2a0, kHeap + 0x300));
  d.chunk(kHeap + 0x2c0, 0x31); // A2: used
  d.chunk(kHeap + 0x2f0, 0x31); // A3: tcache (last)
  d.put(kHeap + 0x300, protect(kHeap + 0x300, 0));
  d.chunk(kHeap + 0x320, 0x31); // F1: fastbin
  d.put(kHeap + 0x330, protect(kHeap + 0x330, 0));
  d.chunk(kHeap + 0x350, 0x501);        // U1: used
  d.chunk(kHeap + 0x850, 0x601);        // L1: free (S1 has PREV_INUSE clear)
  d.chunk(kHeap + 0xe50, 0x100, 0x600); // S1: used small
  d.chunk(top, (kHeap + kHeapSize - top) | 1);

  // Thread arena: first heap T1 (arena, tcache, used, freed old top, fenceposts), second heap T2.
  d.put(kT1, kArenaT);
  d.put(kT1 + 8, 0);
  d.put(kT1 + 0x10, 0x21000);
  d.put(kT1 + 0x18, 0x21000);
  d.put(kT1 + 0x20, 0x1000);
  const uint64_t ttop = kT2 + 0x130;
  emptyArena(d, kArenaT, ttop, kMainArena, 0x31000, 2);
  d.chunk(kT1 + 0x8d0, 0x295); // the thread's tcache (empty)
  d.chunk(kT1 + 0xb60, 0x2005);
  d.chunk(kT1 + 0x2b60, 0x1e481); // old top, freed
  d.chunk(kT1 + 0x21000 - 0x20, 0x10, 0x1e480);
  d.chunk(kT1 + 0x21000 - 0x10, 0x1);
  d.put(kT2, kArenaT);
  d.put(kT2 + 8, kT1);
  d.put(kT2 + 0x10, 0x10000);
  d.put(kT2 + 0x18, 0x10000);
  d.put(kT2 + 0x20, 0x1000);
  d.chunk(kT2 + 0x30, 0x105);
  d.chunk(ttop, (0x10000 - 0x130) | 1);

  // mmapped: a plain chunk, then a memalign'd one (original header left at the mapping start).
  d.chunk(kMmap, 0x10002);
  d.chunk(kMmap + 0x10000, 0x30002);
  d.chunk(kMmap + 0x10ff0, (0x30000 - 0xff0) | 2, 0xff0);
}

} // namespace

TEST_CASE("glibc walker reports every chunk of a hand-built process") {
  FakeDump d;
  buildProcess(d);
  auto snap = d.snapshot();
  AddressSpace memory(*snap);
  CHECK(walkerNamed("glibc").detect(memory));
  WalkedHeap w = walk(*snap);
  REQUIRE(w.error.empty());
  CHECK(w.warnings.empty());

  struct Expect {
    uint64_t address, size;
    AllocState state;
    uint64_t arena;
  };
  const Expect expected[] = {
      {kHeap + 0x10, 0x288, AllocState::Used, kMainArena},                  // tcache struct
      {kHeap + 0x2a0, 0x28, AllocState::Free, kMainArena},                  // A1 in tcache
      {kHeap + 0x2d0, 0x28, AllocState::Used, kMainArena},                  // A2
      {kHeap + 0x300, 0x28, AllocState::Free, kMainArena},                  // A3 in tcache
      {kHeap + 0x330, 0x28, AllocState::Free, kMainArena},                  // F1 in fastbin
      {kHeap + 0x360, 0x4f8, AllocState::Used, kMainArena},                 // U1
      {kHeap + 0x860, 0x5f8, AllocState::Free, kMainArena},                 // L1
      {kHeap + 0xe60, 0xf8, AllocState::Used, kMainArena},                  // S1
      {kHeap + 0xf60, kHeapSize - 0xf50 - 8, AllocState::Free, kMainArena}, // top
      {kT1 + 0x8e0, 0x288, AllocState::Used, kArenaT},
      {kT1 + 0xb70, 0x1ff8, AllocState::Used, kArenaT},
      {kT1 + 0x2b70, 0x1e478, AllocState::Free, kArenaT},
      {kT2 + 0x40, 0xf8, AllocState::Used, kArenaT},
      {kT2 + 0x140, 0x10000 - 0x130 - 8, AllocState::Free, kArenaT},
      {kMmap + 0x10, 0x10000 - 16, AllocState::Used, 0},
      {kMmap + 0x11000, 0x30000 - 0xff0 - 16, AllocState::Used, 0},
  };
  for (const Expect &e : expected) {
    INFO("allocation " << hexAddress(e.address));
    const Allocation *a = w.at(e.address);
    REQUIRE(a != nullptr);
    CHECK(a->size == e.size);
    CHECK(a->state == e.state);
    CHECK(a->arena == e.arena);
    CHECK(a->mmapped == (e.arena == 0));
    CHECK(a->chunk_address == e.address - 16);
  }
  CHECK(w.by_address.size() == std::size(expected));
  CHECK(std::is_sorted(
      w.allocations.begin(), w.allocations.end(),
      [](const Allocation &a, const Allocation &b) { return a.address < b.address; }));

  CHECK(w.fact("main_arena").find(hexAddress(kMainArena)) == 0);
  CHECK(w.fact("main_arena").find("arena ring") != std::string::npos);
  CHECK(w.fact("glibc_layout").find("2.35-2.40") == 0);
  CHECK(w.fact("safe_linking") == "yes");
  CHECK(w.fact("arenas") == "2");
  CHECK(w.fact("thread_heaps") == "2");
  CHECK(w.fact("mmapped_chunks") == "2");
  CHECK(w.fact("tcaches") == "2");

  const auto &areas = w.result.areas;
  REQUIRE(areas.size() == 5);
  CHECK(areas[0].kind == "main-heap");
  CHECK(areas[0].start == kHeap);
  CHECK(areas[0].size == kHeapSize);
  CHECK(areas[1].kind == "thread-heap");
  CHECK(areas[1].start == kT1);
  CHECK(areas[1].size == 0x21000);
  CHECK(areas[2].start == kT2);
  CHECK(areas[2].arena == kArenaT);
  CHECK(areas[3].kind == "mmapped");
  CHECK(areas[3].start == kMmap);
  CHECK(areas[4].start == kMmap + 0x10000);
  CHECK(areas[4].size == 0x30000);
  CHECK(w.result.stats.used_count == 9);
  CHECK(w.result.stats.free_count == 7);
}

TEST_CASE("glibc walker finds main_arena in libc data when there is no thread arena") {
  FakeDump d;
  d.map(kLibcData, 0x3000, true, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  d.map(kHeap, 0x1000, true);
  emptyArena(d, kMainArena, kHeap + 0x40, kMainArena, 0x1000, 0);
  d.chunk(kHeap, 0x41);
  d.chunk(kHeap + 0x40, 0xfc1);
  auto snap = d.snapshot();
  WalkedHeap w = walk(*snap);
  REQUIRE(w.error.empty());
  CHECK(w.fact("main_arena").find("libc data scan") != std::string::npos);
  CHECK(w.fact("glibc_layout").find("unknown") == 0);
  REQUIRE(w.at(kHeap + 0x10));
  // No tcache found: a small chunk that looks in use may be in a tcache.
  CHECK(w.at(kHeap + 0x10)->state == AllocState::Unknown);
  CHECK(w.at(kHeap + 0x50)->state == AllocState::Free);
}

TEST_CASE("glibc walker falls back to the Heap-class region without main_arena") {
  FakeDump d;
  d.map(kHeap, 0x2000, true, "", RegionClass::Heap);
  d.chunk(kHeap, 0x31);
  d.chunk(kHeap + 0x30, 0x811);
  d.chunk(kHeap + 0x840, 0x800, 0x810); // the 0x810 chunk is free
  d.chunk(kHeap + 0x1040, 0xfc1);
  auto snap = d.snapshot();
  WalkedHeap w = walk(*snap);
  REQUIRE(w.error.empty());
  CHECK(w.fact("main_arena") == "not found");
  CHECK(w.fact("main_heap").find("fallback") != std::string::npos);
  REQUIRE(w.by_address.size() == 4);
  CHECK(w.at(kHeap + 0x10)->state == AllocState::Unknown);
  CHECK(w.at(kHeap + 0x40)->state == AllocState::Free);
  CHECK(w.at(kHeap + 0x850)->state == AllocState::Used);
  CHECK(w.at(kHeap + 0x1050)->state == AllocState::Free); // ends the region: top
  CHECK(w.at(kHeap + 0x850)->arena == 0);
}

TEST_CASE("glibc walker reads pre-2.32 plain links and the 0x20 heap_info") {
  FakeDump d;
  constexpr uint64_t arena = kT1 + 0x20;
  d.map(kLibcData, 0x3000, true, "/usr/lib/x86_64-linux-gnu/libc-2.31.so");
  d.map(kT1, 0x10000, true);
  d.put(kT1, arena);
  d.put(kT1 + 0x10, 0x10000);
  d.put(kT1 + 0x18, 0x10000);
  const uint64_t first = kT1 + 0x8c0;
  emptyArena(d, arena, first + 0x2c0, kMainArena, 0x10000, 2);
  emptyArena(d, kMainArena, kMainArena + 0x60, arena, 0, 0); // malloc never grew the main heap
  d.put(arena + 0x10 + 8 * 0, first + 0x290 + 0x20);         // fastbin 0 (0x20): second 0x20 chunk
  d.chunk(first, 0x295);
  d.put16(first + 0x10, 1);                  // counts[0] = 1
  d.put(first + 0x10 + 0x80, first + 0x2a0); // entries[0]
  d.chunk(first + 0x290, 0x25);              // in tcache; next = NULL (plain)
  d.put(first + 0x2a0, 0);
  d.chunk(first + 0x2b0, 0x25); // fastbin; fd = NULL (plain)
  d.put(first + 0x2c0, 0);
  d.chunk(first + 0x2d0, (0x10000 - 0x8c0 - 0x2d0) | 1);
  d.put(arena + 0x60, first + 0x2d0);
  auto snap = d.snapshot();
  WalkedHeap w = walk(*snap);
  REQUIRE(w.error.empty());
  CHECK(w.fact("glibc_layout").find("2.31-2.34") == 0);
  CHECK(w.fact("safe_linking") == "no");
  CHECK(w.fact("libc_file_version") == "2.31");
  CHECK(w.warnings.empty());
  REQUIRE(w.at(first + 0x2a0));
  CHECK(w.at(first + 0x2a0)->state == AllocState::Free);
  REQUIRE(w.at(first + 0x2c0));
  CHECK(w.at(first + 0x2c0)->state == AllocState::Free);
  CHECK(w.at(first + 0x10)->state == AllocState::Used);
}

TEST_CASE("glibc walker survives corrupt heaps and lists") {
  FakeDump d;
  buildProcess(d);

  SECTION("bad chunk size in the main heap") {
    d.chunk(kHeap + 0x350, 0x509); // size not a multiple of 16
    auto snap = d.snapshot();
    WalkedHeap w = walk(*snap);
    REQUIRE(w.error.empty());
    CHECK(w.warned(hexAddress(kHeap + 0x350)));
    CHECK(w.warned("not a multiple of 16"));
    CHECK(w.at(kHeap + 0x2d0));       // before the damage
    CHECK_FALSE(w.at(kHeap + 0x360)); // the damaged chunk
    CHECK_FALSE(w.at(kHeap + 0x860)); // after it: not guessed
    CHECK(w.at(kT2 + 0x40));          // other heaps go on
    CHECK(w.at(kMmap + 0x11000));
    CHECK(w.fact("heaps_cut_short") == "1");
  }
  SECTION("chunk past its heap's end") {
    d.chunk(kT1 + 0xb60, 0x7ffff005);
    auto snap = d.snapshot();
    WalkedHeap w = walk(*snap);
    REQUIRE(w.error.empty());
    CHECK(w.warned("runs past the heap end"));
    CHECK(w.at(kT1 + 0x8e0));
    CHECK(w.at(kT2 + 0x40));
    CHECK(w.at(kHeap + 0x360));
  }
  SECTION("zero size") {
    d.chunk(kHeap + 0x850, 0);
    auto snap = d.snapshot();
    WalkedHeap w = walk(*snap);
    REQUIRE(w.error.empty());
    CHECK(w.warned("below the minimum"));
    CHECK(w.at(kHeap + 0x360)->state == AllocState::Unknown); // its next header is broken
  }
  SECTION("fastbin list that loops") {
    d.put(kHeap + 0x330, protect(kHeap + 0x330, kHeap + 0x320));
    auto snap = d.snapshot();
    WalkedHeap w = walk(*snap);
    REQUIRE(w.error.empty());
    CHECK(w.warned("fastbin 1"));
    CHECK(w.warned("loops"));
    CHECK(w.at(kHeap + 0x330)->state == AllocState::Free);
  }
  SECTION("tcache list that loops with a huge count") {
    d.put16(kHeap + 0x10 + 2 * 1, 65535);
    d.put(kHeap + 0x300, protect(kHeap + 0x300, kHeap + 0x2a0));
    auto snap = d.snapshot();
    WalkedHeap w = walk(*snap);
    REQUIRE(w.error.empty());
    CHECK(w.warned("loops"));
    CHECK(w.at(kHeap + 0x2a0)->state == AllocState::Free);
    CHECK(w.at(kHeap + 0x300)->state == AllocState::Free);
  }
  SECTION("arena ring that loops") {
    d.put(kMainArena + 0x870, kMainArena); // main no longer leads back to the thread arena
    auto snap = d.snapshot();
    WalkedHeap w = walk(*snap);
    REQUIRE(w.error.empty());
    CHECK(w.warned("ring loops"));
    CHECK(w.at(kHeap + 0x360));
    CHECK(w.at(kT2 + 0x40));
  }
  SECTION("heap chain that loops") {
    constexpr uint64_t kT3 = 0x7f000c000000;
    d.map(kT3, 0x1000, true);
    d.put(kT3, kArenaT);
    d.put(kT3 + 8, kT2);
    d.put(kT3 + 0x10, 0x1000);
    d.put(kT3 + 0x18, 0x1000);
    d.put(kT3 + 0x20, 0x1000);
    d.chunk(kT3 + 0x30, (0x1000 - 0x30) | 1);
    d.put(kArenaT + 0x60, kT3 + 0x30);
    d.put(kT2 + 8, kT3); // T2 -> T3 -> T2 ...
    d.chunk(kT2 + 0x130, 0x10000 - 0x130 - 0x20 + 1);
    d.chunk(kT2 + 0x10000 - 0x20, 0x10);
    d.chunk(kT2 + 0x10000 - 0x10, 1);
    auto snap = d.snapshot();
    WalkedHeap w = walk(*snap);
    REQUIRE(w.error.empty());
    CHECK(w.warned("loops"));
    CHECK(w.warned("not on the arena's heap chain")); // T1, the first heap, is walked anyway
    CHECK(w.at(kT1 + 0xb70));
    CHECK(w.at(kT2 + 0x40));
    CHECK(w.at(kT3 + 0x40)->state == AllocState::Free);
  }
  SECTION("heap memory not captured") {
    FakeDump sparse;
    sparse.map(kHeap, kHeapSize, true, "", RegionClass::Heap, 0x400);
    sparse.chunk(kHeap, 0x31);
    sparse.chunk(kHeap + 0x30, 0x1001);
    auto snap = sparse.snapshot();
    WalkedHeap w = walk(*snap);
    REQUIRE(w.error.empty());
    CHECK(w.warned(hexAddress(kHeap + 0x1030) + ": chunk header is not captured"));
    REQUIRE(w.at(kHeap + 0x40));
    CHECK(w.at(kHeap + 0x40)->state == AllocState::Unknown);
  }
}

TEST_CASE("glibc walker warns about a libc version it does not know") {
  FakeDump d;
  d.map(kLibcData, 0x3000, true, "/lib/x86_64-linux-gnu/libc-2.23.so");
  d.map(kHeap, 0x1000, true, "", RegionClass::Heap);
  d.chunk(kHeap, 0x1001);
  auto snap = d.snapshot();
  WalkedHeap w = walk(*snap);
  REQUIRE(w.error.empty());
  CHECK(w.fact("libc_file_version") == "2.23");
  CHECK(w.warned("outside the 2.31-2.40"));
  REQUIRE(w.at(kHeap + 0x10));
  CHECK(w.at(kHeap + 0x10)->state == AllocState::Free); // the chunk ending the region: top
}

TEST_CASE("glibc walker refuses 32-bit processes with a reason") {
  FakeDump d;
  d.pointer_size = 4;
  d.map(0x8000000, 0x1000, true, "/usr/lib/i386-linux-gnu/libc.so.6");
  auto snap = d.snapshot();
  AddressSpace memory(*snap);
  CHECK_FALSE(walkerNamed("glibc").traits().platforms.reads(snap->system));
  Diagnostics diags;
  size_t reported = 0;
  std::vector<HeapWalkResult> heaps = walkHeaps(
      memory, {"glibc"}, [&](unsigned, uint16_t, const Allocation &) { ++reported; }, diags);
  CHECK(heaps.empty());
  CHECK(reported == 0);
  REQUIRE(diags.warnings().size() == 1);
  CHECK(diags.warnings()[0].where == "glibc");
  CHECK(diags.warnings()[0].message == "glibc heap walker supports 64-bit little-endian processes "
                                       "only (this one is 32-bit little-endian, x86)");
}

TEST_CASE("glibc walker does not claim processes without glibc") {
  FakeDump d;
  d.map(0x10000, 0x1000, true);
  auto snap = d.snapshot();
  snap->system.os = Os::Windows;
  AddressSpace memory(*snap);
  CHECK_FALSE(walkerNamed("glibc").detect(memory));
  snap->system.os = Os::Linux;
  CHECK_FALSE(walkerNamed("glibc").detect(memory));
  WalkedHeap w = walk(*snap);
  CHECK(w.error.find("no glibc heap") != std::string::npos);
}
