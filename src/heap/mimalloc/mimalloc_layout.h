// mimalloc 2.0.9 facts the walker relies on (LP64 little-endian, release build: MI_DEBUG 0,
// MI_SECURE 0, no MI_ENCODE_FREELIST, no MI_PADDING, as Debian 12's libmimalloc2.0 is built).
// Internal to src/heap/mimalloc.
//
// Every constant below was read in microsoft/mimalloc at the tag v2.0.9 (commit 28cf67e5):
// include/mimalloc-types.h (structures, sizes), src/segment.c (page start, slices), src/alloc.c
// (free paths, usable size); docs/heap-mimalloc.md lists where each comes from.
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "dumpsift/dump/words.h"

#include <cstdint>

namespace dumpsift::mimalloc {

/// The file names of mimalloc's shared library ("libmimalloc.so.2.0").
inline constexpr ModuleName kMimallocNames[] = {{"libmimalloc", ModuleName::Match::Prefix}};

// Segments: MI_SEGMENT_SHIFT = 9 + MI_SEGMENT_SLICE_SHIFT = 25 on 64-bit, so 32 MiB, aligned to
// their size; 512 slices of 64 KiB (MI_SEGMENT_SLICE_SHIFT = 13 + 3).
inline constexpr uint64_t kSegmentSize = 1ull << 25;
inline constexpr uint64_t kSliceSize = 1ull << 16;
inline constexpr uint64_t kSlicesPerSegment = kSegmentSize / kSliceSize; // 512

/// struct mi_segment_s (v2.0.9; v2.0.7 and older lack mem_alignment/mem_align_offset).
struct SegmentLayout {
  uint64_t used = 0xd0;           // size_t: pages in use, the info pages not counted
  uint64_t cookie = 0xd8;         // uintptr_t: segment address ^ _mi_heap_main.cookie
  uint64_t segment_slices = 0xe0; // size_t: 512, more for a huge segment
  uint64_t info_slices = 0xe8;    // size_t segment_info_slices: 1 (the header fits one slice)
  uint64_t kind = 0xf0;           // mi_segment_kind_t (u32): 0 normal, 1 huge; then 4 zero bytes
  uint64_t slice_entries = 0xf8;  // size_t: min(segment_slices, 512)
  uint64_t thread_id = 0x100;     // the owning thread's id (its fs_base on Linux); 0: abandoned
  uint64_t slices = 0x108;        // mi_slice_t slices[MI_SLICES_PER_SEGMENT + 1]
  /// offsetof(slices) + 513 * sizeof(mi_slice_t): the header read in one view.
  uint64_t header_size = 0x108 + (kSlicesPerSegment + 1) * 80;
};
inline constexpr SegmentLayout kSegment{};
inline constexpr uint32_t kKindNormal = 0; // MI_SEGMENT_NORMAL
inline constexpr uint32_t kKindHuge = 1;   // MI_SEGMENT_HUGE

/// struct mi_page_s, which is also mi_slice_t (80 bytes, without MI_ENCODE_FREELIST's keys).
struct PageLayout {
  uint64_t size = 80;
  uint64_t slice_count = 0x00;  // u32: slices in this page (0 in a slice that is not the first)
  uint64_t slice_offset = 0x04; // u32: bytes back to the page's first slice descriptor
  uint64_t capacity = 0x0a;     // u16: blocks initialised (the rest were never handed out)
  uint64_t reserved = 0x0c;     // u16: blocks that fit the page
  uint64_t flags = 0x0e;        // u8: bit 0 in_full, bit 1 has_aligned
  uint64_t free = 0x10;         // mi_block_t *: free list
  uint64_t used = 0x18;         // u32: blocks not on `free` or `local_free`
  uint64_t xblock_size = 0x1c;  // u32: block size; 0 a free span; >= 2 GiB: the page size
  uint64_t local_free = 0x20;   // mi_block_t *: blocks the owner freed
  uint64_t xthread_free = 0x28; // mi_thread_free_t: blocks other threads freed; low 2 bits a state
  uint64_t xheap = 0x30;        // mi_heap_t *: the owning heap; 0 in an abandoned segment
};
inline constexpr PageLayout kPage{};
inline constexpr uint8_t kHasAligned = 2;
inline constexpr uint64_t kThreadFreeFlagBits = 3; // mi_tf_block: xthread_free & ~3
/// MI_HUGE_BLOCK_SIZE: an xblock_size this large means "the block is the whole page".
inline constexpr uint64_t kHugeBlockSize = 1ull << 31;
/// _mi_segment_page_start_from_slice: blocks of 8 ... 1024 bytes start 3 * MI_MAX_ALIGN_GUARANTEE
/// (3 * 8 * 16) bytes into their page's first slice; all others at its start.
inline constexpr uint64_t kSmallBlockStartOffset = 384;
inline constexpr uint64_t kSmallBlockOffsetMax = 1024;

/// struct mi_heap_s: thread_delayed_free holds blocks other threads freed into the heap's full
/// pages (they still count in their page's `used`).
struct HeapLayout {
  uint64_t thread_delayed_free = 0xb18; // mi_block_t *
  uint64_t thread_id = 0xb20;           // mi_threadid_t
  uint64_t cookie = 0xb30;              // uintptr_t; _mi_heap_main's makes the segment cookies
};
inline constexpr HeapLayout kHeap{};

} // namespace dumpsift::mimalloc
