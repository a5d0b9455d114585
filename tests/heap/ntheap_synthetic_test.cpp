// The NT heap walker on hand-laid heaps. Each heap is written here from the public structure
// definitions (`dt ntdll!_HEAP`, `_HEAP_SEGMENT`, `_HEAP_ENTRY`, `_HEAP_VIRTUAL_ALLOC_ENTRY`,
// `_HEAP_UCR_DESCRIPTOR`, `_HEAP_USERDATA_HEADER`, `_PEB` listings of Windows 7 and Windows 10 in
// docs/heap-windows.md), field by field with the offsets spelled out below, never from the
// walker's own tables: a wrong offset in the walker fails here.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "support/byte_builder.h"
#include "support/heap_walk.h"
#include "support/minidump_writer.h"

#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <catch2/catch.hpp>

using namespace dumpsift;

namespace {

/// A heap entry as the walker must report it.
struct Block {
  uint64_t entry; // the _HEAP_ENTRY's address
  uint64_t bytes; // Size * granule
  bool busy;
  uint64_t request; // what HeapAlloc was asked for (busy blocks)
};

/// Writes Windows heaps into a FakeMemory: `wide` for x64 (16-byte entries, 8-byte pointers),
/// else x86 (8-byte entries, 4-byte pointers). Keys XOR the 8 bytes that hold Size, Flags,
/// SmallTagIndex, PreviousSize, SegmentOffset and UnusedBytes (x64: the entry's second qword).
class HeapWriter {
public:
  HeapWriter(test::FakeMemory &mem, bool wide, uint64_t key) : mem_(mem), wide_(wide), key_(key) {}

  unsigned granule() const { return wide_ ? 16 : 8; }
  void ptr(uint64_t at, uint64_t v) {
    if (wide_)
      mem_.put64(at, v);
    else
      mem_.put32(at, static_cast<uint32_t>(v));
  }
  /// A LIST_ENTRY at `at` whose Flink is `flink` and Blink `blink`.
  void links(uint64_t at, uint64_t flink, uint64_t blink) {
    ptr(at, flink);
    ptr(at + (wide_ ? 8 : 4), blink);
  }
  /// The encoded 8 bytes of an entry whose header starts at `entry`.
  void entry(uint64_t entry, uint16_t size, uint8_t flags, uint16_t previous, uint8_t unused) {
    const uint8_t check = static_cast<uint8_t>((size & 0xff) ^ (size >> 8) ^ flags);
    const uint64_t plain = uint64_t(size) | uint64_t(flags) << 16 | uint64_t(check) << 24 |
                           uint64_t(previous) << 32 | uint64_t(unused) << 56;
    mem_.put64(entry + (wide_ ? 8 : 0), plain ^ key_);
  }
  /// Lays out `blocks` one after another (each entry's PreviousSize the one before's).
  void entries(const std::vector<Block> &blocks, uint8_t last_flags = 0) {
    uint16_t previous = 0;
    for (size_t i = 0; i < blocks.size(); ++i) {
      const Block &b = blocks[i];
      const auto size = static_cast<uint16_t>(b.bytes / granule());
      uint8_t flags = b.busy ? 1 : 0;
      if (i + 1 == blocks.size())
        flags |= last_flags;
      entry(b.entry, size, flags, previous, b.busy ? static_cast<uint8_t>(b.bytes - b.request) : 0);
      previous = size;
    }
  }

private:
  test::FakeMemory &mem_;
  bool wide_;
  uint64_t key_;
};

std::unique_ptr<Snapshot> windowsSnapshot(test::FakeMemory &mem, unsigned pointer_size,
                                          uint64_t peb = 0) {
  auto snap = mem.snapshot();
  snap->system.os = Os::Windows;
  snap->system.arch = pointer_size == 8 ? "x86_64" : "x86";
  snap->system.pointer_size = pointer_size;
  snap->process.peb = peb;
  return snap;
}

void checkBlocks(const test::WalkedHeap &w, const std::vector<Block> &blocks, unsigned header,
                 uint64_t heap) {
  for (const Block &b : blocks) {
    INFO("entry at 0x" << std::hex << b.entry);
    const Allocation *a = w.at(b.entry + header);
    REQUIRE(a != nullptr);
    CHECK(a->chunk_address == b.entry);
    CHECK(a->chunk_size == b.bytes);
    CHECK(a->state == (b.busy ? AllocState::Used : AllocState::Free));
    CHECK(a->size == (b.busy ? b.request : b.bytes - header));
    CHECK(a->arena == heap);
  }
}

// x64 Windows 10: _HEAP at a 64 KiB granule, its first segment at its start.
//   _HEAP_SEGMENT: +0x10 SegmentSignature, +0x18 SegmentListEntry, +0x40 FirstEntry,
//                  +0x48 LastValidEntry, +0x60 UCRSegmentList
//   _HEAP: +0x7C EncodeFlagMask, +0x80 Encoding (_HEAP_ENTRY), +0x98 Signature,
//          +0x110 VirtualAllocdBlocks, +0x120 SegmentList
//   _HEAP_VIRTUAL_ALLOC_ENTRY: +0x20 CommitSize, +0x28 ReserveSize, +0x30 BusyBlock, data +0x40
//   _HEAP_UCR_DESCRIPTOR: +0x10 SegmentEntry, +0x20 Address, +0x28 Size
//   _PEB: +0x30 ProcessHeap, +0xE8 NumberOfHeaps, +0xEC MaximumNumberOfHeaps, +0xF0 ProcessHeaps
constexpr uint64_t kHeap = 0x2a0000;
constexpr uint64_t kSegment2 = 0x5a0000;
constexpr uint64_t kLarge = 0x7a0000;
constexpr uint64_t kPeb = 0x9ff000;
constexpr uint64_t kHeapArray = 0x9ff800;
constexpr uint64_t kKey = 0x0000a1b2c3d4e5f6ull << 8;

struct X64Heap {
  test::FakeMemory mem;
  std::vector<Block> first, after_hole, second;
  uint64_t large_request = 1'050'000;

  X64Heap() {
    // The first segment: 64 KiB reserved, [0x2a8000, 0x2aa000) uncommitted (not in the dump).
    mem.addRegion(kHeap, 0x8000);
    mem.addRegion(kHeap + 0xa000, 0x6000);
    mem.addRegion(kSegment2, 0x10000);
    mem.addRegion(kLarge, 0x101000);
    mem.addRegion(kPeb, 0x1000);
    HeapWriter w(mem, true, kKey);
    mem.put32(kHeap + 0x10, 0xFFEEFFEE);
    mem.put64(kHeap + 0x40, kHeap + 0x700);   // FirstEntry
    mem.put64(kHeap + 0x48, kHeap + 0x10000); // LastValidEntry
    mem.put32(kHeap + 0x7C, 0x00100000);
    mem.put64(kHeap + 0x88, kKey); // Encoding's second qword
    mem.put32(kHeap + 0x98, 0xEEFFEEFF);
    // SegmentList: the heap's own segment, then the second one.
    w.links(kHeap + 0x120, kHeap + 0x18, kSegment2 + 0x18);
    w.links(kHeap + 0x18, kSegment2 + 0x18, kHeap + 0x120);
    w.links(kSegment2 + 0x18, kHeap + 0x120, kHeap + 0x18);
    // One uncommitted range: a descriptor in the heap's header area.
    const uint64_t ucr = kHeap + 0x600;
    w.links(kHeap + 0x60, ucr + 0x10, ucr + 0x10);
    w.links(ucr + 0x10, kHeap + 0x60, kHeap + 0x60);
    mem.put64(ucr + 0x20, kHeap + 0x8000);
    mem.put64(ucr + 0x28, 0x2000);
    // Entries: a small block, a free block, an LFH subsegment's blocks (a _HEAP_USERDATA_HEADER:
    // Signature 0xF0E0D0C0 at +0x14), and the free rest up to the hole.
    first = {{kHeap + 0x700, 0x40, true, 0x28},
             {kHeap + 0x740, 0x100, false, 0},
             {kHeap + 0x840, 0x1000, true, 0xfe0},
             {kHeap + 0x1840, 0x67c0, false, 0}};
    w.entries(first, 0x10); // the last entry before the hole
    mem.put32(kHeap + 0x850 + 0x14, 0xF0E0D0C0);
    after_hole = {{kHeap + 0xa000, 0x3000, true, 0x2fe1}, {kHeap + 0xd000, 0x3000, false, 0}};
    w.entries(after_hole, 0x10);
    // The second segment (its own header, FirstEntry past it).
    mem.put32(kSegment2 + 0x10, 0xFFEEFFEE);
    mem.put64(kSegment2 + 0x40, kSegment2 + 0x70);
    mem.put64(kSegment2 + 0x48, kSegment2 + 0x10000);
    w.links(kSegment2 + 0x60, kSegment2 + 0x60, kSegment2 + 0x60);
    second = {{kSegment2 + 0x70, 0x8040, true, 0x8028}, {kSegment2 + 0x80b0, 0x7f50, false, 0}};
    w.entries(second, 0x10);
    // One large block.
    w.links(kHeap + 0x110, kLarge, kLarge);
    w.links(kLarge, kHeap + 0x110, kHeap + 0x110);
    mem.put64(kLarge + 0x20, 0x101000);
    mem.put64(kLarge + 0x28, 0x101000);
    w.entry(kLarge + 0x30, static_cast<uint16_t>(0x101000 - 0x40 - large_request), 0x09, 0, 0);
    // The PEB lists the heap.
    mem.put64(kPeb + 0x30, kHeap);
    mem.put32(kPeb + 0xE8, 1);
    mem.put32(kPeb + 0xEC, 16);
    mem.put64(kPeb + 0xF0, kHeapArray);
    mem.put64(kHeapArray, kHeap);
  }
};

} // namespace

TEST_CASE("ntheap: an x64 heap's segments, holes, large block and LFH subsegment, exactly") {
  X64Heap h;
  auto snap = windowsSnapshot(h.mem, 8, kPeb);
  test::WalkedHeap w = test::walkHeap(*snap, "ntheap");
  REQUIRE(w.error.empty());
  CHECK(w.warnings.empty());
  CHECK(w.fact("ntheap_layout") == "x64 Windows 8-11");
  CHECK(w.count("ntheap_heaps") == 1);
  CHECK(w.count("ntheap_heaps_listed") == 1);
  CHECK(w.count("ntheap_segments") == 2);
  CHECK(w.count("ntheap_large_blocks") == 1);
  CHECK(w.count("ntheap_lfh_subsegments") == 1);
  checkBlocks(w, h.first, 16, kHeap);
  checkBlocks(w, h.after_hole, 16, kHeap);
  checkBlocks(w, h.second, 16, kHeap);
  const Allocation *large = w.at(kLarge + 0x40);
  REQUIRE(large != nullptr);
  CHECK(large->size == h.large_request);
  CHECK(large->chunk_address == kLarge);
  CHECK(large->chunk_size == 0x101000);
  CHECK(large->mmapped);
  CHECK(large->state == AllocState::Used);
  CHECK(w.allocations.size() == h.first.size() + h.after_hole.size() + h.second.size() + 1);
  // Areas: the two segments (whole, holes included) and the large block.
  REQUIRE(w.result.areas.size() == 3);
  CHECK(w.result.areas[0].kind == "nt-segment");
  CHECK(w.result.areas[0].start == kHeap);
  CHECK(w.result.areas[0].size == 0x10000);
  CHECK(w.result.areas[1].start == kSegment2);
  CHECK(w.result.areas[2].kind == "nt-large");
  CHECK(w.result.areas[2].size == 0x101000);
  CHECK(w.result.stats.used_count == 5);
  CHECK(w.result.stats.free_count == 4);
}

TEST_CASE("ntheap: a heap no captured PEB lists is found at its 64 KiB granule") {
  X64Heap h;
  auto snap = windowsSnapshot(h.mem, 8); // no PEB known
  test::WalkedHeap w = test::walkHeap(*snap, "ntheap");
  REQUIRE(w.error.empty());
  CHECK(w.count("ntheap_heaps") == 1);
  CHECK(w.count("ntheap_heaps_listed") == 0);
  checkBlocks(w, h.second, 16, kHeap);
}

TEST_CASE("ntheap: an entry whose checksum fails ends its segment's walk with a warning") {
  X64Heap h;
  // Flip a bit of the free block's Size: its checksum no longer holds.
  h.mem.put8(kHeap + 0x740 + 8, static_cast<uint8_t>((kKey & 0xff) ^ 0x11));
  auto snap = windowsSnapshot(h.mem, 8, kPeb);
  test::WalkedHeap w = test::walkHeap(*snap, "ntheap");
  REQUIRE(w.error.empty());
  CHECK(w.warned("segment 0x2a0000: the entry at 0x2a0740 does not decode (its checksum fails)"));
  CHECK(w.at(kHeap + 0x710) != nullptr);
  CHECK(w.at(kHeap + 0x750) == nullptr);
  checkBlocks(w, h.second, 16, kHeap); // the other segment is walked whole
}

TEST_CASE("ntheap: a segment heap the PEB lists is reported unwalked") {
  test::FakeMemory mem;
  mem.addRegion(kHeap, 0x1000);
  mem.addRegion(kPeb, 0x1000);
  mem.put32(kHeap + 0x10, 0xDDEEDDEE);
  mem.put64(kPeb + 0x30, kHeap);
  auto snap = windowsSnapshot(mem, 8, kPeb);
  test::WalkedHeap w = test::walkHeap(*snap, "ntheap");
  CHECK(w.detected);
  CHECK(w.warned("heap 0x2a0000: a segment heap (signature 0xDDEEDDEE), which the ntheap walker "
                 "does not walk"));
  CHECK(w.error.find("no NT heap walked") != std::string::npos);
}

// x86 Windows 7, the layout with _HEAP.PointerKey (+0x58):
//   _HEAP_SEGMENT: +0x08 SegmentSignature, +0x10 SegmentListEntry, +0x24 FirstEntry,
//                  +0x28 LastValidEntry, +0x38 UCRSegmentList
//   _HEAP: +0x4C EncodeFlagMask, +0x50 Encoding, +0x64 Signature, +0xA0 VirtualAllocdBlocks,
//          +0xA8 SegmentList
//   _HEAP_VIRTUAL_ALLOC_ENTRY: +0x10 CommitSize, +0x18 BusyBlock, data +0x20
//   _PEB (32-bit): +0x18 ProcessHeap, +0x88 NumberOfHeaps, +0x8C Maximum, +0x90 ProcessHeaps
TEST_CASE("ntheap: an x86 Windows 7 heap, its blocks and a large block, from the 32-bit PEB") {
  test::FakeMemory mem;
  constexpr uint64_t heap = 0x150000, large = 0x390000, peb = 0x7ffd0000;
  constexpr uint64_t key = 0x00003c4d5e6f7a8bull;
  mem.addRegion(heap, 0x4000);
  mem.addRegion(large, 0x82000);
  mem.addRegion(peb, 0x1000);
  HeapWriter w(mem, false, key);
  mem.put32(heap + 0x08, 0xFFEEFFEE);
  mem.put32(heap + 0x24, heap + 0x588);
  mem.put32(heap + 0x28, heap + 0x4000);
  mem.put32(heap + 0x4C, 0x00100000);
  mem.put64(heap + 0x50, key);
  mem.put32(heap + 0x64, 0xEEFFEEFF);
  w.links(heap + 0x38, heap + 0x38, heap + 0x38); // no uncommitted range
  w.links(heap + 0xA8, heap + 0x10, heap + 0x10);
  w.links(heap + 0x10, heap + 0xA8, heap + 0xA8);
  const std::vector<Block> blocks = {{heap + 0x588, 0x18, true, 0x0c},
                                     {heap + 0x5a0, 0x1000, true, 0xff4},
                                     {heap + 0x15a0, 0x2a60, false, 0}};
  w.entries(blocks, 0x10);
  w.links(heap + 0xA0, large, large);
  w.links(large, heap + 0xA0, heap + 0xA0);
  mem.put32(large + 0x10, 0x82000);
  w.entry(large + 0x18, static_cast<uint16_t>(0x82000 - 0x20 - 530000), 0x09, 0, 0);
  mem.put32(peb + 0x18, heap);
  mem.put32(peb + 0x88, 1);
  mem.put32(peb + 0x8C, 16);
  mem.put32(peb + 0x90, peb + 0x800);
  mem.put32(peb + 0x800, heap);
  auto snap = windowsSnapshot(mem, 4, peb);
  test::WalkedHeap walked = test::walkHeap(*snap, "ntheap");
  REQUIRE(walked.error.empty());
  CHECK(walked.warnings.empty());
  CHECK(walked.fact("ntheap_layout") == "x86 Windows 7");
  CHECK(walked.count("ntheap_heaps_listed") == 1);
  checkBlocks(walked, blocks, 8, heap);
  const Allocation *a = walked.at(large + 0x20);
  REQUIRE(a != nullptr);
  CHECK(a->size == 530000);
  CHECK(a->chunk_size == 0x82000);
}

TEST_CASE("ntheap: a WOW64 process's 32-bit heap, from its 32-bit PEB, beside a 64-bit one") {
  X64Heap h;
  // The 32-bit side: an x86 Windows 8+ heap (Signature +0x60, VirtualAllocdBlocks +0x9C,
  // SegmentList +0xA4) that the 32-bit PEB lists.
  constexpr uint64_t heap32 = 0x1a0000, peb32 = 0x7ffe0000;
  h.mem.addRegion(heap32, 0x2000);
  h.mem.addRegion(peb32, 0x1000);
  HeapWriter w(h.mem, false, 0); // entries not encoded: EncodeFlagMask 0
  h.mem.put32(heap32 + 0x08, 0xFFEEFFEE);
  h.mem.put32(heap32 + 0x24, heap32 + 0x4a8);
  h.mem.put32(heap32 + 0x28, heap32 + 0x2000);
  h.mem.put32(heap32 + 0x60, 0xEEFFEEFF);
  w.links(heap32 + 0x38, heap32 + 0x38, heap32 + 0x38);
  w.links(heap32 + 0x9C, heap32 + 0x9C, heap32 + 0x9C);
  w.links(heap32 + 0xA4, heap32 + 0x10, heap32 + 0x10);
  w.links(heap32 + 0x10, heap32 + 0xA4, heap32 + 0xA4);
  const std::vector<Block> blocks = {{heap32 + 0x4a8, 0x800, true, 0x7f0},
                                     {heap32 + 0xca8, 0x1358, false, 0}};
  w.entries(blocks, 0x10);
  h.mem.put32(peb32 + 0x18, heap32);
  auto snap = windowsSnapshot(h.mem, 8, kPeb);
  snap->system.wow64 = true;
  snap->process.peb32 = peb32;
  test::WalkedHeap walked = test::walkHeap(*snap, "ntheap");
  REQUIRE(walked.error.empty());
  CHECK(walked.fact("ntheap_layout") == "x64 Windows 8-11, x86 Windows 8-11");
  CHECK(walked.count("ntheap_heaps") == 2);
  CHECK(walked.count("ntheap_heaps_listed") == 2);
  checkBlocks(walked, blocks, 8, heap32);
  checkBlocks(walked, h.second, 16, kHeap);
}

namespace {

/// A WOW64 process's committed memory as a 64-bit writer's full-memory minidump holds it: every
/// region of `mem` committed read-write private memory in the Memory64List, with the
/// MemoryInfoList entries `extra` (reservations) beside them; AMD64 system info, wow64.dll and
/// the 32-bit executable loaded, and `threads` (each: its 64-bit TEB, its 32-bit stack pointer
/// and the 64-bit context's stack pointer).
struct Wow64Thread {
  uint64_t teb, stack32_pointer, rsp;
};
std::vector<uint8_t> wow64FullMemoryDump(const test::FakeMemory &mem,
                                         const std::vector<test::mdmp::Info> &extra,
                                         const std::vector<Wow64Thread> &threads) {
  using namespace test::mdmp;
  MdmpWriter w(6);
  const uint32_t exe_rva = w.blob(mdString("C:\\Windows\\SysWOW64\\uploader.exe"));
  const uint32_t wow64_rva = w.blob(mdString("C:\\Windows\\System32\\wow64.dll"));
  test::ByteWriter list;
  list.u32(static_cast<uint32_t>(threads.size()));
  for (size_t i = 0; i < threads.size(); ++i) {
    const Wow64Thread &t = threads[i];
    const uint32_t context_rva = w.blob(amd64Context(t.rsp));
    // MINIDUMP_THREAD: the stack descriptor is the 32-bit stack from its stack pointer up, its
    // bytes those of the full memory (Memory64List) where the writer put them; here a copy.
    const auto &regions = mem.regions();
    auto region = std::prev(regions.upper_bound(t.stack32_pointer));
    const uint64_t offset = t.stack32_pointer - region->first;
    std::vector<uint8_t> stack = region->second.bytes;
    stack.resize(region->second.size);
    const uint32_t stack_rva = w.blob(
        std::vector<uint8_t>(stack.begin() + static_cast<std::ptrdiff_t>(offset), stack.end()));
    list.u32(static_cast<uint32_t>(100 + i)).u32(0).u32(0).u32(0).u64(t.teb);
    list.u64(t.stack32_pointer).u32(static_cast<uint32_t>(region->second.size - offset));
    list.u32(stack_rva).u32(1232).u32(context_rva);
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::vector<Info> infos = extra;
  for (const auto &[start, block] : mem.regions()) {
    ranges.push_back({start, block.size});
    infos.push_back({start, block.size, kCommit, 0x04, kPrivate});
  }
  std::sort(infos.begin(), infos.end(),
            [](const Info &a, const Info &b) { return a.base < b.base; });
  w.stream(SystemInfoType, systemInfo(kAmd64, kWin32NT));
  w.stream(ThreadListType, list.bytes);
  w.stream(ModuleListType, moduleList({{0x240000, 0x30000, exe_rva, 0, 0},
                                       {0x75380000, 0x3f000, wow64_rva, 0, 0}}));
  w.stream(MemoryInfoListType, memoryInfoList(infos));
  // The Memory64List last, its bytes after it: every committed region, in address order.
  const uint32_t list_rva = w.next();
  const uint64_t header = 16 + 16 * ranges.size();
  w.stream(Memory64ListType, memory64List(ranges.size(), list_rva + header, ranges));
  for (const auto &[start, block] : mem.regions()) {
    std::vector<uint8_t> bytes = block.bytes;
    bytes.resize(block.size);
    w.blob(bytes);
  }
  // The sixth slot: MiscInfo with the process id.
  w.stream(MiscInfoType, miscInfo(4242));
  return w.finish();
}

} // namespace

TEST_CASE("ntheap: a WOW64 full-memory minidump: both PEBs' heaps walked, 32-bit stacks, mapped "
          "memory under 4 GiB and the 64-bit pages") {
  // The 64-bit side: the x64 heap above, listed by the 64-bit PEB at kPeb.
  X64Heap h;
  test::FakeMemory &mem = h.mem;
  // The 32-bit side: two x86 Windows 8+ heaps the 32-bit PEB lists (_HEAP: +0x08 SegmentSignature,
  // +0x10 SegmentListEntry, +0x24 FirstEntry, +0x28 LastValidEntry, +0x38 UCRSegmentList,
  // +0x4C EncodeFlagMask, +0x50 Encoding, +0x60 Signature, +0x9C VirtualAllocdBlocks,
  // +0xA4 SegmentList; _PEB32: +0x18 ProcessHeap, +0x88 NumberOfHeaps, +0x8C Maximum,
  // +0x90 ProcessHeaps), entries encoded with each heap's key.
  constexpr uint64_t heap_a = 0xb00000, heap_b = 0xc00000;
  constexpr uint64_t key_a = 0x00001a2b3c4d5e6full, key_b = 0x0000f0e1d2c3b4a5ull;
  auto heap32 = [&](uint64_t heap, uint64_t key, const std::vector<Block> &blocks) {
    mem.addRegion(heap, 0x4000);
    HeapWriter w(mem, false, key);
    mem.put32(heap + 0x08, 0xFFEEFFEE);
    mem.put32(heap + 0x24, static_cast<uint32_t>(blocks.front().entry));
    mem.put32(heap + 0x28, static_cast<uint32_t>(heap + 0x4000));
    mem.put32(heap + 0x4C, 0x00100000);
    mem.put64(heap + 0x50, key);
    mem.put32(heap + 0x60, 0xEEFFEEFF);
    w.links(heap + 0x38, heap + 0x38, heap + 0x38);
    w.links(heap + 0x9C, heap + 0x9C, heap + 0x9C);
    w.links(heap + 0xA4, heap + 0x10, heap + 0x10);
    w.links(heap + 0x10, heap + 0xA4, heap + 0xA4);
    w.entries(blocks, 0x10);
  };
  const std::vector<Block> blocks_a = {{heap_a + 0x4a8, 0x30, true, 0x24},
                                       {heap_a + 0x4d8, 0x2010, true, 0x2000},
                                       {heap_a + 0x24e8, 0x1b18, false, 0}};
  const std::vector<Block> blocks_b = {{heap_b + 0x4a8, 0x800, false, 0},
                                       {heap_b + 0xca8, 0x3358, true, 0x3350}};
  heap32(heap_a, key_a, blocks_a);
  heap32(heap_b, key_b, blocks_b);
  // The TEBs and PEBs (64-bit TEB: NT_TIB +0 ExceptionList = the 32-bit TEB, +8 StackBase,
  // +0x10 StackLimit, +0x30 Self, +0x60 ProcessEnvironmentBlock; the 32-bit TEB 0x2000 on:
  // NT_TIB32 +4 StackBase, +8 StackLimit, +0x18 Self, +0x30 ProcessEnvironmentBlock).
  constexpr uint64_t teb = 0x7efdb000, teb32 = teb + 0x2000, peb32 = 0x7efde000;
  constexpr uint64_t stack32 = 0x33d000, stack32_end = 0x340000, stack64 = 0x1ce000;
  mem.addRegion(teb, 0x3000);
  mem.addRegion(peb32, 0x1000);
  mem.addRegion(stack32, stack32_end - stack32);
  mem.addRegion(stack64, 0x2000);
  mem.put64(teb + 0x0, teb32);
  mem.put64(teb + 0x8, stack64 + 0x2000);
  mem.put64(teb + 0x10, stack64 - 0x2000); // its guard and reserve below: not committed
  mem.put64(teb + 0x30, teb);
  mem.put64(teb + 0x60, kPeb);
  mem.put32(teb32 + 0x4, stack32_end);
  mem.put32(teb32 + 0x8, stack32);
  mem.put32(teb32 + 0x18, teb32);
  mem.put32(teb32 + 0x30, peb32);
  mem.put32(peb32 + 0x18, heap_a);
  mem.put32(peb32 + 0x88, 2);
  mem.put32(peb32 + 0x8C, 16);
  mem.put32(peb32 + 0x90, peb32 + 0x800);
  mem.put32(peb32 + 0x800, heap_a);
  mem.put32(peb32 + 0x804, heap_b);
  // A buffer the 32-bit stack holds, so the stack is no run of zeros.
  mem.put32(stack32_end - 0x40, static_cast<uint32_t>(blocks_a[1].entry + 8));
  // Above 4 GiB: one committed page between reservations, as wow64's own 64-bit allocations.
  constexpr uint64_t high_page = 0x200000000;
  mem.addRegion(high_page, 0x1000);
  mem.put64(high_page, 0x1122334455667788ull);
  using test::mdmp::Info;
  const std::vector<Info> reserved = {
      {kHeap + 0x8000, 0x2000, test::mdmp::kReserve, 0, test::mdmp::kPrivate},
      {stack64 - 0x2000, 0x2000, test::mdmp::kReserve, 0, test::mdmp::kPrivate},
      {0x100000000, 0x100000000, test::mdmp::kReserve, 0, test::mdmp::kPrivate},
      {high_page + 0x1000, 0x7ffd00000000, test::mdmp::kReserve, 0, test::mdmp::kPrivate}};
  const std::vector<uint8_t> file =
      wow64FullMemoryDump(mem, reserved, {{teb, stack32_end - 0x3b8, stack64 + 0xae0}});

  llvm::StringRef data(reinterpret_cast<const char *>(file.data()), file.size());
  auto opened = openDump(llvm::MemoryBuffer::getMemBufferCopy(data, "wow64-full.dmp"));
  if (!opened)
    FAIL(llvm::toString(opened.takeError()));
  const Snapshot &snap = **opened;
  CHECK(snap.system.wow64);
  CHECK(snap.process.peb == kPeb);
  CHECK(snap.process.peb32 == peb32);

  // The stacks: the 32-bit one is the thread's, the 64-bit one kept beside it; both `stack`.
  REQUIRE(snap.threads.size() == 1);
  const Thread &t = snap.threads[0];
  CHECK(t.stack_pointer == stack32_end - 0x3b8);
  CHECK(t.stack_start == stack32);
  CHECK(t.stack_end == stack32_end);
  CHECK(t.wow64_stack_pointer == stack64 + 0xae0);
  auto classOf = [&](uint64_t address) {
    for (const Region &r : snap.regions)
      if (address >= r.start && address < r.end())
        return r.cls;
    return RegionClass::Other;
  };
  CHECK(classOf(stack32) == RegionClass::Stack);
  CHECK(classOf(stack64) == RegionClass::Stack);

  // Mapped: every region below 4 GiB, committed or reserved (listed, nothing captured), and above
  // it the one committed page only (not the 128 TiB reservation).
  uint64_t listed_low = 0, mapped_low = 0, mapped_high = 0;
  for (const auto &[start, block] : mem.regions())
    if (start < (uint64_t(1) << 32))
      listed_low += block.size;
  for (const Info &r : reserved)
    if (r.base < (uint64_t(1) << 32))
      listed_low += r.size;
  for (const Region &r : snap.regions)
    (r.end() <= (uint64_t(1) << 32) ? mapped_low : mapped_high) += r.size;
  CHECK(mapped_high == 0x1000);
  CHECK(mapped_low == listed_low);
  CHECK(mapped_low < (uint64_t(1) << 32));

  // Every heap the two PEBs list, walked entry by entry: used and free, exact bounds.
  test::WalkedHeap walked = test::walkHeap(snap, "ntheap");
  REQUIRE(walked.error.empty());
  INFO(walked.fact("ntheap_layout"));
  CHECK(walked.count("ntheap_heaps_listed") == 3);
  CHECK(walked.count("ntheap_heaps") == 3);
  CHECK(walked.warnings.empty());
  checkBlocks(walked, blocks_a, 8, heap_a);
  checkBlocks(walked, blocks_b, 8, heap_b);
  checkBlocks(walked, h.first, 16, kHeap);
  checkBlocks(walked, h.after_hole, 16, kHeap);
  checkBlocks(walked, h.second, 16, kHeap);
}
