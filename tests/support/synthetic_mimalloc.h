// Hand-laid mimalloc 2.0.9 heaps for the synthetic mimalloc tests and the fuzz seeds made from the
// same shapes: segment headers, page descriptors and heaps written field by field from the layouts
// in docs/heap-mimalloc.md (not from the walker's own tables). Header-only and free of Catch2, so
// tests/fuzz/make_seeds.cpp can use it too.
#pragma once

#include "support/synthetic_heaps.h"

#include <algorithm>
#include <cstdint>

namespace dumpsift::test {

inline constexpr uint64_t kMiSegment = 32ull << 20; // segments are 32 MiB, aligned to that
inline constexpr uint64_t kMiSlice = 64ull << 10;
inline constexpr uint64_t kMiSlicesOffset = 0x108; // mi_segment_t::slices
inline constexpr uint64_t kMiPageSize = 80;        // sizeof (mi_page_t)
/// The header through slices[512]: written whole, so that it reads as captured.
inline constexpr uint64_t kMiHeaderBytes = kMiSlicesOffset + 513 * kMiPageSize;

/// A mimalloc segment header at `seg` (the region holding it must exist): `slices` slices (512
/// for a normal segment), its header page in slice 0, `used` pages in use, owned by `thread_id`,
/// its cookie made from `main_cookie` (_mi_heap_main.cookie).
inline void putMiSegment(FakeMemory &m, uint64_t seg, uint64_t main_cookie, bool huge,
                         uint64_t slices, uint64_t used, uint64_t thread_id) {
  m.put8(seg + kMiHeaderBytes - 1, 0);
  m.put64(seg + 0xd0, used);
  m.put64(seg + 0xd8, seg ^ main_cookie);
  m.put64(seg + 0xe0, slices);
  m.put64(seg + 0xe8, 1); // segment_info_slices
  m.put32(seg + 0xf0, huge ? 1 : 0);
  m.put64(seg + 0xf8, std::min<uint64_t>(slices, 512));
  m.put64(seg + 0x100, thread_id);
  m.put32(seg + kMiSlicesOffset, 1);                         // slices[0].slice_count
  m.put32(seg + kMiSlicesOffset + 0x1c, uint32_t(kMiSlice)); // its xblock_size
}

/// One page descriptor (mi_page_t) and what a page needs around it.
struct MiPage {
  uint64_t slice = 1;       // its first slice
  uint32_t slice_count = 1; // slices it spans
  uint32_t xblock_size = 0; // 0: a free span
  uint16_t capacity = 0, reserved = 0;
  uint32_t used = 0;
  uint8_t flags = 0;
  uint64_t free = 0, local_free = 0, thread_free = 0, heap = 0;
};

/// Writes `p`'s descriptor in the segment at `seg`, with the back offsets mimalloc sets in the
/// slices after the first (up to 15 of them, and the last).
inline void putMiPage(FakeMemory &m, uint64_t seg, const MiPage &p) {
  const uint64_t d = seg + kMiSlicesOffset + p.slice * kMiPageSize;
  m.put32(d, p.slice_count);
  m.put32(d + 4, 0);
  m.put8(d + 8, 2); // is_committed
  m.put8(d + 0xa, uint8_t(p.capacity)), m.put8(d + 0xb, uint8_t(p.capacity >> 8));
  m.put8(d + 0xc, uint8_t(p.reserved)), m.put8(d + 0xd, uint8_t(p.reserved >> 8));
  m.put8(d + 0xe, p.flags);
  m.put64(d + 0x10, p.free);
  m.put32(d + 0x18, p.used);
  m.put32(d + 0x1c, p.xblock_size);
  m.put64(d + 0x20, p.local_free);
  m.put64(d + 0x28, p.thread_free);
  m.put64(d + 0x30, p.heap);
  for (uint64_t i = 1; i < p.slice_count && p.slice + i < 513; ++i) {
    if (i > 15 && i + 1 != p.slice_count)
      continue;
    const uint64_t inner = d + i * kMiPageSize;
    m.put32(inner, 0);
    m.put32(inner + 4, uint32_t(i * kMiPageSize));
    m.put32(inner + 0x1c, p.xblock_size ? 1 : 0);
  }
}

/// Block `k` of the page `p` in the segment at `seg`: blocks of 8 to 1024 bytes start 384 bytes
/// into the page's first slice, others at its start.
inline uint64_t miBlock(uint64_t seg, const MiPage &p, uint64_t k) {
  const uint64_t offset = p.xblock_size >= 8 && p.xblock_size <= 1024 ? 384 : 0;
  return seg + p.slice * kMiSlice + offset + k * p.xblock_size;
}

/// An mi_heap_t at `heap` (the region holding it must exist) with its delayed-free list head,
/// thread id and cookie; the whole 0xbf8-byte structure is written.
inline void putMiHeap(FakeMemory &m, uint64_t heap, uint64_t delayed, uint64_t thread_id,
                      uint64_t cookie) {
  m.put8(heap + 0xbf7, 0);
  m.put64(heap + 0xb18, delayed);
  m.put64(heap + 0xb20, thread_id);
  m.put64(heap + 0xb30, cookie);
}

/// The example heap of the synthetic tests and the fuzz seeds: a normal segment holding a small
/// page of 256-byte blocks in slice 1 (10 handed out: blocks 2 and 5 on `free`, 7 on
/// `local_free`, 8 on the thread-free list, 9 on the heap's delayed-free list), a medium page of
/// 81,920-byte blocks in slices 2-9 (3 blocks, block 1 on the delayed-free list after block 9 of
/// the small page) and a free span; a huge segment of 600 slices holding one block; the heap that
/// owns them all, which is _mi_heap_main (its cookie made the segments' cookies).
struct MiExample {
  static constexpr uint64_t kCookie = 0x5eed5eed12345678;
  static constexpr uint64_t kThread = 0x7f0000001740;
  static constexpr uint64_t kSegment = 0x20000000000;
  static constexpr uint64_t kHugeSegment = 0x20004000000;
  static constexpr uint64_t kHeap = 0x7f0000100000;
  MiPage small, medium, huge;
};

/// Lays the example heap into `m` (adding its regions); returns its pages.
inline MiExample putMiExample(FakeMemory &m) {
  constexpr uint64_t seg = MiExample::kSegment, huge_seg = MiExample::kHugeSegment;
  constexpr uint64_t heap = MiExample::kHeap;
  MiExample e;
  m.addRegion(seg, kMiSegment);
  m.addRegion(huge_seg, 600 * kMiSlice);
  m.addRegion(heap, 0x1000);
  putMiSegment(m, seg, MiExample::kCookie, false, 512, 2, MiExample::kThread);
  putMiSegment(m, huge_seg, MiExample::kCookie, true, 600, 1, MiExample::kThread);

  MiPage &s = e.small;
  s.slice = 1, s.xblock_size = 256, s.capacity = 10, s.reserved = 254, s.heap = heap;
  s.free = miBlock(seg, s, 2);
  s.local_free = miBlock(seg, s, 7);
  s.thread_free = miBlock(seg, s, 8) | 2; // MI_NO_DELAYED_FREE in the low bits
  s.used = 10 - 3;                        // the blocks on neither free nor local_free
  putMiPage(m, seg, s);
  m.put64(miBlock(seg, s, 2), miBlock(seg, s, 5));
  m.put64(miBlock(seg, s, 5), 0);
  m.put64(miBlock(seg, s, 7), 0);
  m.put64(miBlock(seg, s, 8), 0);

  MiPage &md = e.medium;
  md.slice = 2, md.slice_count = 8, md.xblock_size = 81920, md.capacity = 3, md.reserved = 6;
  md.used = 3, md.heap = heap, md.flags = 1; // in_full
  putMiPage(m, seg, md);
  m.put64(miBlock(seg, s, 9), miBlock(seg, md, 1));
  m.put64(miBlock(seg, md, 1), 0);
  MiPage span; // the rest of the segment: one free span
  span.slice = 10, span.slice_count = 512 - 10;
  putMiPage(m, seg, span);

  MiPage &h = e.huge;
  h.slice = 1, h.slice_count = 599, h.xblock_size = 0x80000000u; // MI_HUGE_BLOCK_SIZE: the page
  h.capacity = 1, h.reserved = 1, h.used = 1, h.heap = heap;
  putMiPage(m, huge_seg, h);

  putMiHeap(m, heap, miBlock(seg, s, 9), MiExample::kThread, MiExample::kCookie);
  return e;
}

} // namespace dumpsift::test
