// The go walker on hand-laid heaps (tests/support/synthetic_heaps.h, GoHeap): what a live
// process does not show on demand (spans caught before the sweeper reached them, the layouts of
// Go versions newer than Debian's) and what no healthy runtime writes (damaged spans, absurd
// counts, repeats and loops, tables pointing into memory the dump does not hold). The structures
// are written field by field from the offsets in docs/heap-go.md, not from the walker's tables.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "support/heap_walk.h"
#include "support/synthetic_heaps.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using test::GoHeap;
using test::GoSpan;

namespace {

constexpr uint64_t kExe = 0x500000;       // the executable's writable mapping
constexpr uint64_t kArena = 0xc000000000; // the first heap arena
constexpr uint64_t kPage = GoHeap::kPage; // 8 KiB
constexpr uint32_t kSweepgen = 10;        // mheap_.sweepgen: "h" in docs/heap-go.md
constexpr uint8_t kNoscan = 1;            // spanclass = size class << 1 | noscan
constexpr uint8_t kClass1152 = 33, kClass48 = 5, kClass1024 = 32;
const SystemInfo kLinuxAmd64{Os::Linux, "x86_64", 8, true};

/// A process with the executable's data mapped and a Go heap laid out after it.
struct GoProcess {
  test::FakeProcess memory;
  GoHeap heap;

  explicit GoProcess(const test::GoRuntimeLayout &layout = test::kGo119,
                     uint64_t exe_bytes = 0x1000)
      : heap(withExecutable(memory, exe_bytes), layout, kExe, kSweepgen) {}

  static test::FakeProcess &withExecutable(test::FakeProcess &p, uint64_t bytes) {
    p.system = kLinuxAmd64;
    p.addRegion(kExe, bytes, "/opt/app/program");
    return p;
  }
};

/// `nelems` objects of class 33 (1,152 bytes, 7 to a page) on the page at `start`, all allocated
/// below `freeindex` or by `alloc`, with the span's sweep generation `sweepgen`.
GoSpan smallSpan(uint64_t start, uint8_t alloc, uint64_t freeindex, uint32_t sweepgen,
                 std::vector<uint8_t> marks = {}) {
  GoSpan s;
  s.start = start;
  s.spanclass = kClass1152 << 1 | kNoscan;
  s.elemsize = 1152;
  s.nelems = 7;
  s.freeindex = freeindex;
  s.alloc_bits = {alloc};
  s.mark_bits = std::move(marks);
  s.sweepgen = sweepgen;
  return s;
}

GoSpan largeSpan(uint64_t start, uint64_t npages) {
  GoSpan s;
  s.start = start;
  s.npages = npages;
  s.spanclass = 0 << 1 | kNoscan;
  s.elemsize = npages * kPage;
  s.nelems = 1;
  s.freeindex = 1;
  s.alloc_bits = {1};
  s.sweepgen = kSweepgen;
  return s;
}

GoSpan manualSpan(uint64_t start, uint64_t npages, uint64_t elemsize) {
  GoSpan s;
  s.start = start;
  s.npages = npages;
  s.state = 2;
  s.elemsize = elemsize;
  return s;
}

struct Walked {
  std::vector<Allocation> allocations;
  HeapWalkResult result;
  std::vector<Diagnostic> warnings;
  std::string error;

  std::string fact(const std::string &key) const { return test::factOf(result, key); }
  bool warned(const std::string &text) const { return test::anyWarningHas(warnings, text); }
  /// The states of the objects from `start` on, in address order ("u" used, "f" free, "?").
  std::string states(uint64_t start, size_t count) const {
    std::string out;
    for (const Allocation &a : allocations)
      if (a.address >= start && out.size() < count)
        out += a.state == AllocState::Used ? 'u' : a.state == AllocState::Free ? 'f' : '?';
    return out;
  }
  const Allocation *at(uint64_t address) const {
    for (const Allocation &a : allocations)
      if (a.address == address)
        return &a;
    return nullptr;
  }
};

Walked walkGo(GoProcess &p) {
  const Snapshot &snap = p.memory.snapshot();
  AddressSpace memory(snap);
  const HeapWalker &go = test::walkerNamed("go");
  CHECK(go.detect(memory));
  Walked w;
  Diagnostics diags;
  auto result = go.walk(
      memory, [&](const Allocation &a) { w.allocations.push_back(a); }, diags);
  if (result)
    w.result = std::move(*result);
  else
    w.error = llvm::toString(result.takeError());
  w.warnings = diags.warnings();
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  // Whatever the damage: objects in address order, never overlapping, areas sorted.
  for (size_t i = 1; i < w.allocations.size(); ++i)
    CHECK(w.allocations[i - 1].address + w.allocations[i - 1].size <= w.allocations[i].address);
  for (size_t i = 1; i < w.result.areas.size(); ++i)
    CHECK(w.result.areas[i - 1].start + w.result.areas[i - 1].size <= w.result.areas[i].start);
  return w;
}

/// The heap of the first tests: a span of 1,152-byte objects (page 0), a large object (pages
/// 1-17), goroutine stacks (18-21), a GC work buffer (22-25) and a free span (26-29).
void layTypicalHeap(GoHeap &heap) {
  heap.addArena(kArena);
  heap.addSpan(smallSpan(kArena, 0x5c, 2, kSweepgen)); // slots 0-1 below freeindex, 2-4 and 6
  heap.addSpan(largeSpan(kArena + kPage, 17));
  heap.addSpan(manualSpan(kArena + 18 * kPage, 4, 8192));
  heap.addSpan(manualSpan(kArena + 22 * kPage, 4, 0));
  GoSpan dead = largeSpan(kArena + 26 * kPage, 4);
  dead.state = 0;
  heap.addSpan(dead);
}

/// What the walker must report of layTypicalHeap's heap, laid out for `version` (read from the
/// build info) and found with the layout named `layout`.
void checkTypicalHeap(const Walked &w, const char *version, const char *layout) {
  REQUIRE(w.error.empty());
  CHECK(w.fact("go_version") == version);
  CHECK(w.fact("go_layout") == layout);
  CHECK(w.warnings.empty());
  CHECK(w.result.size_classes);
  CHECK(w.fact("go_sweepgen") == "10");
  CHECK(w.fact("go_mheap").find("(the shape of mheap_.allspans") != std::string::npos);
  CHECK(w.fact("go_spans") ==
        "1 arenas, 2 spans in use (0 not yet swept), 1 of goroutine stacks, 1 other manual");
  REQUIRE(w.allocations.size() == 8);
  CHECK(w.states(kArena, 8) == "uuuuufuu");
  for (int i = 0; i < 7; ++i) {
    const Allocation &a = w.allocations[i];
    CHECK(a.address == kArena + 1152 * i);
    CHECK(a.size == 1152);
    CHECK(a.size_class == 33);
    CHECK(a.noscan);
    CHECK(a.arena == kArena);
    CHECK(a.data_offset == 0);
  }
  const Allocation &large = w.allocations[7];
  CHECK(large.address == kArena + kPage);
  CHECK(large.size == 17 * kPage);
  CHECK(large.size_class == 0);
  CHECK(large.state == AllocState::Used);
  CHECK(w.result.stats.used_count == 7);
  CHECK(w.result.stats.free_count == 1);
  REQUIRE(w.result.areas.size() == 4);
  CHECK(w.result.areas[0].kind == "spans");
  CHECK(w.result.areas[0].start == kArena);
  CHECK(w.result.areas[0].size == 18 * kPage);
  CHECK(w.result.areas[1].kind == "goroutine-stacks");
  CHECK(w.result.areas[1].start == kArena + 18 * kPage);
  CHECK(w.result.areas[1].size == 4 * kPage);
  CHECK(w.result.areas[2].kind == "runtime-spans");
  CHECK(w.result.areas[2].start == kArena + 22 * kPage);
  // The rest of the arena is free pages (no span names them), which the region scan leaves alone.
  CHECK(w.result.areas[3].kind == "free-pages");
  CHECK(w.result.areas[3].start == w.result.areas[2].start + w.result.areas[2].size);
  CHECK(w.result.areas[3].start + w.result.areas[3].size == kArena + (64 << 20));
}

} // namespace

TEST_CASE("go walker: every object of a hand-laid Go 1.19 heap, from its span's class and bits") {
  GoProcess p(test::kGo119);
  layTypicalHeap(p.heap);
  checkTypicalHeap(walkGo(p), "go1.19.8", "1.19-1.20");
}

TEST_CASE("go walker: the Go 1.22 layout (16-bit indices, allocation headers)") {
  GoProcess p(test::kGo122);
  layTypicalHeap(p.heap);
  checkTypicalHeap(walkGo(p), "go1.22.12", "1.22-1.25");
  // Objects over 512 bytes that hold pointers start with an 8-byte type header from 1.22 on.
  GoSpan scan = smallSpan(kArena + 30 * kPage, 0, 8, kSweepgen);
  scan.spanclass = kClass1024 << 1;
  scan.elemsize = 1024;
  scan.nelems = 8;
  p.heap.addSpan(scan);
  Walked w = walkGo(p);
  REQUIRE(w.allocations.size() == 16);
  const Allocation *header = w.at(kArena + 30 * kPage + 1024);
  REQUIRE(header != nullptr);
  CHECK(header->data_offset == 8);
  CHECK_FALSE(header->noscan);
  CHECK(header->state == AllocState::Used);
}

TEST_CASE("go walker: freed but not yet swept is free (the sweep generation against mheap_'s)") {
  GoProcess p(test::kGo119);
  GoHeap &heap = p.heap;
  heap.addArena(kArena);
  // Every slot allocated (freeindex 7) before the last collection, which marked slots 0 and 3.
  const std::vector<uint8_t> marks = {0x09};
  heap.addSpan(smallSpan(kArena, 0x7f, 7, kSweepgen - 2, marks));             // needs sweeping
  heap.addSpan(smallSpan(kArena + kPage, 0x7f, 7, kSweepgen + 1, marks));     // cached, unswept
  heap.addSpan(smallSpan(kArena + 2 * kPage, 0x7f, 7, kSweepgen, marks));     // swept
  heap.addSpan(smallSpan(kArena + 3 * kPage, 0x7f, 7, kSweepgen + 3, marks)); // swept, cached
  heap.addSpan(smallSpan(kArena + 4 * kPage, 0x3f, 0, kSweepgen - 1, marks)); // being swept
  heap.addSpan(smallSpan(kArena + 5 * kPage, 0x7f, 7, kSweepgen - 2));        // marks not here
  Walked w = walkGo(p);
  REQUIRE(w.error.empty());
  CHECK(w.states(kArena, 7) == "uffufff");
  CHECK(w.states(kArena + kPage, 7) == "uffufff");
  CHECK(w.states(kArena + 2 * kPage, 7) == "uuuuuuu");
  CHECK(w.states(kArena + 3 * kPage, 7) == "uuuuuuu");
  CHECK(w.states(kArena + 4 * kPage, 7) == "??????f"); // the sweeper is rewriting its bits
  CHECK(w.states(kArena + 5 * kPage, 7) == "???????");
  CHECK(w.warned("its allocation or mark bits are not in the dump"));
  CHECK(w.fact("go_spans") ==
        "1 arenas, 6 spans in use (3 not yet swept), 0 of goroutine stacks, 0 other manual");
  CHECK(w.result.stats.used_count == 2 + 2 + 7 + 7);
  CHECK(w.result.stats.free_count == 5 + 5 + 1);
  CHECK(w.result.stats.unknown_count == 6 + 7);
}

TEST_CASE("go walker: Go 1.26 keeps a small span's marks at the end of its first page") {
  GoProcess p(test::kGo126);
  GoHeap &heap = p.heap;
  heap.addArena(kArena);
  GoSpan s; // 48-byte objects: (8,192 - 128) / 48 = 168 of them, the marks' 128 bytes reserved
  s.start = kArena;
  s.spanclass = kClass48 << 1 | kNoscan;
  s.elemsize = 48;
  s.nelems = 168;
  s.freeindex = 168;
  s.alloc_bits.assign(21, 0xff);
  s.mark_bits.assign(21, 0xff); // stale: Green Tea reads the inline marks of such spans
  s.sweepgen = kSweepgen - 2;
  heap.addSpan(s);
  std::vector<uint8_t> inline_marks(21, 0);
  inline_marks[0] = 0x05;  // slots 0 and 2
  inline_marks[20] = 0x80; // slot 167
  heap.putInlineMarks(kArena, inline_marks);
  Walked w = walkGo(p);
  REQUIRE(w.error.empty());
  CHECK(w.fact("go_layout") == "1.26+");
  REQUIRE(w.allocations.size() == 168);
  CHECK(w.states(kArena, 4) == "ufuf");
  CHECK(w.allocations[167].state == AllocState::Used);
  CHECK(w.result.stats.used_count == 3);
  CHECK(w.result.stats.free_count == 165);
}

TEST_CASE("go walker: damaged spans are skipped with a warning, the rest of the heap is walked") {
  GoProcess p(test::kGo119);
  GoHeap &heap = p.heap;
  heap.addArena(kArena);
  for (int i = 0; i < 6; ++i) // good spans, pages 0-5
    heap.addSpan(smallSpan(kArena + i * kPage, 0, 7, kSweepgen));
  GoSpan wrong_size = smallSpan(kArena + 6 * kPage, 0, 7, kSweepgen);
  wrong_size.elemsize = 1000;
  heap.addSpan(wrong_size);
  GoSpan too_many = smallSpan(kArena + 7 * kPage, 0, 7, kSweepgen);
  too_many.nelems = uint64_t(1) << 40;
  heap.addSpan(too_many);
  GoSpan past_end = smallSpan(kArena + 8 * kPage, 0, 9, kSweepgen);
  heap.addSpan(past_end);
  GoSpan no_class = smallSpan(kArena + 9 * kPage, 0, 7, kSweepgen);
  no_class.spanclass = 99 << 1;
  heap.addSpan(no_class);
  // Spans whose page counts are absurd (their span table entries say 4 pages and 1).
  const uint64_t huge_large = heap.addSpan(largeSpan(kArena + 10 * kPage, 4));
  p.memory.put64(huge_large + test::kGo119.npages, uint64_t(1) << 40);
  p.memory.put64(huge_large + test::kGo119.elemsize, (uint64_t(1) << 40) * kPage);
  const uint64_t huge_manual = heap.addSpan(manualSpan(kArena + 14 * kPage, 1, 8192));
  p.memory.put64(huge_manual + test::kGo119.npages, ~uint64_t(0) / 2);
  heap.addSpan(largeSpan(kArena + 20 * kPage, 5)); // after the damage
  Walked w = walkGo(p);
  REQUIRE(w.error.empty());
  CHECK(w.warned("size class 33 with 7 objects of 1000 bytes in 1 pages; skipped"));
  CHECK(w.warned("size class 33 with 1099511627776 objects"));
  CHECK(w.warned("free index 9 or count 0 past its 7 objects; skipped"));
  CHECK(w.warned("size class 99 does not exist; skipped"));
  CHECK(w.warned("pages are no span; skipped"));
  CHECK(w.warned("has 9223372036854775807 pages; skipped"));
  CHECK(w.warnings.size() == 6);
  REQUIRE(w.allocations.size() == 6 * 7 + 1);
  CHECK(w.allocations.back().address == kArena + 20 * kPage);
  CHECK(w.allocations.back().size == 5 * kPage);
}

TEST_CASE("go walker: arenas and spans the dump does not hold are warnings") {
  GoProcess p(test::kGo119);
  GoHeap &heap = p.heap;
  heap.addArena(kArena);
  heap.addSpan(smallSpan(kArena, 0, 7, kSweepgen));
  // An arena with no heapArena, one whose heapArena is not in the dump, an index past the table.
  const uint64_t no_entry = GoHeap::arenaIndex(kArena) + 5, unmapped = no_entry + 1;
  p.memory.put64(GoHeap::kArenaTable + 8 * unmapped, 0x5000000000); // no region there
  heap.listArenaIndex(no_entry);
  heap.listArenaIndex(unmapped);
  heap.listArenaIndex(uint64_t(1) << 40);
  // Pages whose span table entries point into unmapped memory, 20 of them.
  for (uint64_t page = 100; page < 120; ++page)
    p.memory.put64(heap.spanTableEntry(kArena + page * kPage), 0x10000000 + page * 0x1000);
  Walked w = walkGo(p);
  REQUIRE(w.error.empty());
  CHECK(w.warned("no heapArena in mheap_.arenas"));
  CHECK(w.warned("its span table at 0x5000200000 is not in the dump"));
  CHECK(w.warned("= 1099511627776 is no arena index"));
  CHECK(w.warned("the mspan of page 0xc0000c8000 is not in the dump"));
  CHECK(w.warned("12 more spans not in the dump not shown")); // 8 shown of 20
  CHECK(w.warnings.size() == 3 + 8 + 1);
  CHECK(w.allocations.size() == 7);
}

TEST_CASE("go walker: repeats and loops are walked once") {
  GoProcess p(test::kGo119);
  GoHeap &heap = p.heap;
  heap.addArena(kArena);
  heap.addSpan(smallSpan(kArena, 0, 7, kSweepgen));
  for (int i = 0; i < 500; ++i) // allArenas naming the arena again and again
    heap.listArenaIndex(GoHeap::arenaIndex(kArena));
  // Every later page naming the first span, as a span of 8,192 pages would.
  for (uint64_t page = 1; page < GoHeap::kPagesPerArena; ++page)
    p.memory.put64(heap.spanTableEntry(kArena + page * kPage), heap.spanAddress(0));
  // A large span that reaches into the next arena, whose first page starts a span of its own.
  const uint64_t next = kArena + GoHeap::kArenaBytes;
  heap.addArena(next);
  heap.addSpan(largeSpan(next - kPage, 3)); // starts on the first arena's last page
  heap.addSpan(largeSpan(next, 2));         // overlaps it
  heap.addSpan(largeSpan(next + 2 * kPage, 2));
  Walked w = walkGo(p);
  REQUIRE(w.error.empty());
  CHECK(w.fact("go_spans").rfind("2 arenas, 3 spans in use", 0) == 0);
  CHECK(w.warned("overlaps the span before it, which ends at 0xc004004000; skipped"));
  CHECK(w.warnings.size() == 1);
  REQUIRE(w.allocations.size() == 7 + 2);
  CHECK(w.allocations[7].address == next - kPage);
  CHECK(w.allocations[8].address == next + 2 * kPage);
}

TEST_CASE("go walker: a heap with absurd counts costs bounded work") {
  SECTION("allspans longer than the dump holds: no heap, and an error") {
    GoProcess p(test::kGo119);
    p.heap.addArena(kArena);
    p.heap.addSpan(smallSpan(kArena, 0, 7, kSweepgen));
    p.memory.put64(p.heap.field(test::kGo119.mheap_allspans) + 8, uint64_t(1) << 23);
    p.memory.put64(p.heap.field(test::kGo119.mheap_allspans) + 16, uint64_t(1) << 24);
    Walked w = walkGo(p);
    CHECK(w.error.find("no Go heap found") != std::string::npos);
    CHECK(w.allocations.empty());
  }
  SECTION("thousands of arenas sharing one span table: the walk stops at the dump's size") {
    GoProcess p(test::kGo119);
    const uint64_t heap_arena = p.heap.addArena(kArena);
    p.heap.addSpan(smallSpan(kArena, 0, 7, kSweepgen));
    const uint64_t first = GoHeap::arenaIndex(kArena);
    for (uint64_t i = 1; i <= 30000; ++i) {
      const uint64_t entry = GoHeap::kArenaTable + 8 * (first + i);
      if (p.memory.regions().count(entry & ~uint64_t(0xfff)) == 0)
        p.memory.addRegion(entry & ~uint64_t(0xfff), 0x1000);
      p.memory.put64(entry, heap_arena);
      p.heap.listArenaIndex(first + i);
    }
    Walked w = walkGo(p);
    REQUIRE(w.error.empty());
    CHECK(w.warned("more span tables than the dump can hold; the rest of the arenas not walked"));
    const Snapshot &snap = p.memory.snapshot();
    const uint64_t walked = std::stoull(w.fact("go_spans"));
    INFO(w.fact("go_spans"));
    CHECK(walked <= snap.capturedBytes() / 8 / GoHeap::kPagesPerArena);
    CHECK(walked < 100);
    CHECK(w.allocations.size() == 7);
  }
  SECTION("an executable's data full of words shaped like allspans: a warning, no heap") {
    GoProcess p(test::kGo119, 0x40000);
    p.heap.addArena(kArena);
    p.heap.addSpan(smallSpan(kArena, 0, 7, kSweepgen));
    for (uint64_t at = kExe + 0x100; at + 24 <= kExe + 0x40000; at += 24) {
      p.memory.put64(at, GoHeap::kSpans); // every one points at the span list's first span
      p.memory.put64(at + 8, 1);
      p.memory.put64(at + 16, 1024);
    }
    Walked w = walkGo(p);
    CHECK(w.warned("more than 4096 words of the executable's data look like mheap_.allspans"));
    CHECK(w.error.find("no Go heap found") != std::string::npos);
  }
  SECTION("a build info with no heap behind it") {
    test::FakeProcess memory;
    memory.system = kLinuxAmd64;
    memory.addRegion(kExe, 0x1000, "/opt/app/program");
    memory.putBytes(kExe, llvm::StringRef("\xff Go buildinf:\x08\x02", 16));
    memory.putBytes(kExe + 32, llvm::StringRef("\x09go1.21.13", 10));
    AddressSpace space(memory.snapshot());
    Diagnostics diags;
    CHECK(test::walkerNamed("go").detect(space));
    auto result = test::walkerNamed("go").walk(
        space, [](const Allocation &) {}, diags);
    REQUIRE_FALSE(static_cast<bool>(result));
    CHECK(llvm::toString(result.takeError()) ==
          "no Go heap found: no mheap_.allspans in the executable's data lists spans that the "
          "arena table maps back (go1.21.13)");
  }
}
