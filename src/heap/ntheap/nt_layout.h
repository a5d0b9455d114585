// Offsets of the NT heap's records, one row per pointer size and Windows generation. Data, not
// code: another build is another row. Sources (docs/heap-windows.md): public `dt ntdll!...`
// listings of Windows 7 to 11 (radare2-gsoc-windows structs/raw/Win7x86 and Win10x64, and the
// write-ups it cites; ntdiff/headers), checked on a real Windows 11 (build 26200) x86 dump's heap
// pages.
#pragma once

#include <cstdint>

namespace dumpsift::nt {

/// Where the walker finds what it reads in one layout of _HEAP, _HEAP_SEGMENT, _HEAP_ENTRY,
/// _HEAP_VIRTUAL_ALLOC_ENTRY, _HEAP_UCR_DESCRIPTOR and the LFH's _HEAP_USERDATA_HEADER.
struct Layout {
  const char *name; // "x64 Windows 8-11"
  unsigned pointer_size;
  // _HEAP_SEGMENT (the first one is the start of _HEAP itself).
  uint32_t segment_signature; // 0xFFEEFFEE
  uint32_t segment_list_entry;
  uint32_t first_entry;
  uint32_t last_valid_entry;
  uint32_t ucr_segment_list;
  // _HEAP.
  uint32_t encode_flag_mask; // 0x00100000: entries are encoded
  uint32_t encoding;         // the _HEAP_ENTRY whose bytes XOR each entry's
  uint32_t heap_signature;   // 0xEEFFEEFF
  uint32_t virtual_allocd_blocks;
  uint32_t segment_list;
  // _HEAP_ENTRY: `entry_size` bytes, the granule of sizes too; its last 8 bytes are the encoded
  // part: Size (u16, granules) +0, Flags +2, SmallTagIndex (checksum) +3, PreviousSize +4,
  // SegmentOffset +6, UnusedBytes +7.
  uint32_t entry_size;
  // _HEAP_VIRTUAL_ALLOC_ENTRY: list links at +0, then these.
  uint32_t va_commit_size;
  uint32_t va_busy_block;
  uint32_t va_data;
  // _HEAP_UCR_DESCRIPTOR: ListEntry +0, then these.
  uint32_t ucr_segment_entry;
  uint32_t ucr_address;
  uint32_t ucr_size;
  // _HEAP_USERDATA_HEADER (an LFH subsegment's blocks, in a busy back-end entry): its Signature.
  uint32_t lfh_signature;

  /// Where an entry's encoded 8 bytes start.
  uint32_t encodedAt() const { return entry_size - 8; }
};

constexpr uint32_t kSegmentSignature = 0xFFEEFFEE;
constexpr uint32_t kSegmentHeapSignature = 0xDDEEDDEE;
constexpr uint32_t kHeapSignature = 0xEEFFEEFF;
constexpr uint32_t kLfhSignature = 0xF0E0D0C0;
constexpr uint32_t kEncodingOn = 0x00100000;
constexpr uint8_t kEntryBusy = 0x01;
constexpr uint8_t kEntryLast = 0x10; // the last entry before uncommitted pages or the segment end

// One row per layout, its fields in the struct's order: the name and pointer size; _HEAP_SEGMENT's
// SegmentSignature, SegmentListEntry, FirstEntry, LastValidEntry, UCRSegmentList; _HEAP's
// EncodeFlagMask, Encoding, Signature, VirtualAllocdBlocks, SegmentList; the _HEAP_ENTRY size;
// _HEAP_VIRTUAL_ALLOC_ENTRY's CommitSize, BusyBlock, data; _HEAP_UCR_DESCRIPTOR's SegmentEntry,
// Address, Size; _HEAP_USERDATA_HEADER's Signature.
// clang-format off
// x64: Windows 8 removed _HEAP.PointerKey (+0x90), which moved the fields after it 8 bytes down.
constexpr Layout kX64Win8 = {"x64 Windows 8-11", 8, 0x10, 0x18, 0x40, 0x48, 0x60,
    0x7C, 0x80, 0x98, 0x110, 0x120, 16, 0x20, 0x30, 0x40, 0x10, 0x20, 0x28, 0x14};
constexpr Layout kX64Win7 = {"x64 Windows 7",    8, 0x10, 0x18, 0x40, 0x48, 0x60,
    0x7C, 0x80, 0xA0, 0x118, 0x128, 16, 0x20, 0x30, 0x40, 0x10, 0x20, 0x28, 0x14};
// x86 (and a WOW64 process's 32-bit heaps): Windows 8 removed PointerKey (+0x58) here too.
constexpr Layout kX86Win8 = {"x86 Windows 8-11", 4, 0x08, 0x10, 0x24, 0x28, 0x38,
    0x4C, 0x50, 0x60, 0x9C,  0xA4,  8,  0x10, 0x18, 0x20, 0x08, 0x10, 0x14, 0x0C};
constexpr Layout kX86Win7 = {"x86 Windows 7",    4, 0x08, 0x10, 0x24, 0x28, 0x38,
    0x4C, 0x50, 0x64, 0xA0,  0xA8,  8,  0x10, 0x18, 0x20, 0x08, 0x10, 0x14, 0x0C};
// clang-format on

/// The layouts tried for each pointer size, newest first.
constexpr const Layout *kLayouts[] = {&kX64Win8, &kX64Win7, &kX86Win8, &kX86Win7};

// The process environment blocks (stable from Windows 7 to 11): ProcessHeap, NumberOfHeaps,
// MaximumNumberOfHeaps, ProcessHeaps (an array of NumberOfHeaps pointers).
struct PebLayout {
  uint32_t process_heap, number_of_heaps, maximum_number_of_heaps, process_heaps;
};
constexpr PebLayout kPeb64 = {0x30, 0xE8, 0xEC, 0xF0};
constexpr PebLayout kPeb32 = {0x18, 0x88, 0x8C, 0x90};

} // namespace dumpsift::nt
