// The NT heap walker on real Windows minidumps from public repositories (../shared/dumps,
// README.md there): an x86 process on Windows 11 (build 26200) whose dump holds the first page of
// three heaps and two more segments, and a WOW64 notepad on Windows 7 whose PEB lists a heap the
// dump does not hold. Every number below was read from the dumps by hand: the heaps' _HEAP
// records (x86 Windows 8+ layout: Encoding +0x50, Signature +0x60, SegmentList +0xA4) and their
// entries, each decoded with its heap's key, its checksum holding and its PreviousSize the size
// of the entry before it.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walk.h"
#include "support/heap_walk.h"

#include <catch2/catch.hpp>

using namespace dumpsift;

namespace {

const std::string kVfx = "/win_vfx_exporter_x86_nt-heap-pages.dmp";
const std::string kNotepad = "/win_syzygy_notepad_wow64.dmp";

void checkBlock(const test::WalkedHeap &w, uint64_t entry, uint64_t bytes, bool busy, uint64_t size,
                uint64_t heap) {
  INFO("entry at 0x" << std::hex << entry);
  const Allocation *a = w.at(entry + 8);
  REQUIRE(a != nullptr);
  CHECK(a->chunk_address == entry);
  CHECK(a->chunk_size == bytes);
  CHECK(a->state == (busy ? AllocState::Used : AllocState::Free));
  CHECK(a->size == size);
  CHECK(a->arena == heap);
}

} // namespace

TEST_CASE("ntheap: the heap pages of a real Windows 11 x86 dump, entry by entry") {
  auto snap = test::openSnapshot(test::sharedDumpsDir() + kVfx);
  REQUIRE(snap->system.pointer_size == 4);
  CHECK(snap->process.peb == 0x38c000); // from every thread's TEB (+0x30)
  test::WalkedHeap w = test::walkHeap(*snap, "ntheap");
  REQUIRE(w.error.empty());
  CHECK(w.fact("ntheap_layout") == "x86 Windows 8-11");
  CHECK(w.count("ntheap_heaps") == 3);
  // The PEB's ProcessHeap (+0x18) is 0x21f0000; its ProcessHeaps array is not in the dump, so the
  // other two are found at their 64 KiB granules.
  CHECK(w.count("ntheap_heaps_listed") == 1);
  // 0x63f0000 is a segment of 0x21f0000, found backwards from the list's head (the forward link
  // after the heap's own segment leads to memory the dump lacks); 0x13b80000 one of 0x5d30000.
  CHECK(w.count("ntheap_segments") == 5);
  std::vector<uint64_t> segments;
  for (const HeapArea &a : w.result.areas)
    if (a.kind == "nt-segment")
      segments.push_back(a.start);
  CHECK(segments == std::vector<uint64_t>{0x21f0000, 0x2b00000, 0x5d30000, 0x63f0000, 0x13b80000});
  // Heap 0x21f0000: 4 busy entries from FirstEntry 0x21f04a8 to where the dump ends.
  checkBlock(w, 0x21f04a8, 72, true, 60, 0x21f0000);
  checkBlock(w, 0x21f0598, 24, true, 12, 0x21f0000);
  checkBlock(w, 0x63f0040, 48856, true, 48848, 0x21f0000);
  // Heap 0x2b00000: 8 busy entries; the last, 1,160 bytes, runs past the captured page.
  checkBlock(w, 0x2b004a8, 56, true, 48, 0x2b00000);
  checkBlock(w, 0x2b00638, 1160, true, 1152, 0x2b00000);
  // Heap 0x5d30000: 13 busy entries and a free one; its second segment starts with a free block.
  checkBlock(w, 0x5d304d8, 216, false, 208, 0x5d30000);
  checkBlock(w, 0x5d30998, 48, true, 36, 0x5d30000);
  checkBlock(w, 0x13b80040, 176488, false, 176480, 0x5d30000);
  CHECK(w.result.stats.used_count == 4 + 1 + 8 + 13);
  CHECK(w.result.stats.free_count == 2);
  CHECK(w.warned("segment 0x21f0000: the dump does not hold the entry at 0x21f05b0"));
}

TEST_CASE("ntheap: a WOW64 notepad whose PEB lists a heap the dump does not hold") {
  auto snap = test::openSnapshot(test::sharedDumpsDir() + kNotepad);
  REQUIRE(snap->system.wow64);
  AddressSpace memory(*snap);
  Diagnostics diags;
  std::vector<HeapWalkResult> results = walkHeaps(
      memory, {"ntheap"}, [](unsigned, uint16_t, const Allocation &) {}, diags);
  CHECK(results.empty());
  // PEB64 +0x30 ProcessHeap = 0xc0000: two of its pages are in the dump, not its record.
  CHECK(test::anyWarningHas(diags.warnings(),
                            "heap 0xc0000: listed by the PEB, but the dump does not hold it"));
  CHECK(test::anyWarningHas(diags.warnings(),
                            "ntheap: ntdll.dll is loaded, the ntheap walker's allocator or "
                            "runtime, but the walk found nothing (no NT heap walked"));
}
