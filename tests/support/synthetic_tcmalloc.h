// A hand-laid gperftools tcmalloc 2.10 heap for the synthetic tcmalloc tests and the fuzz seeds
// made from the same shape: the SizeMap, the central free lists, the page map, Span descriptors,
// a ThreadCache and the spans' pages, written field by field from the layouts in
// docs/heap-tcmalloc.md (not from the walker's own tables). Header-only and free of Catch2, so
// tests/fuzz/make_seeds.cpp can use it too.
#pragma once

#include "support/synthetic_heaps.h"

#include <cstdint>
#include <vector>

namespace dumpsift::test {

/// Where putTcmallocHeap puts everything, and what the walker must find there.
struct TcmallocHeap {
  // The four regions the caller maps (putTcmallocHeap adds none).
  static constexpr uint64_t kData = 0x7f0000000000; // the image's writable data (its .bss)
  static constexpr uint64_t kDataSize = 0x110000;   // up to the end of the page map root
  static constexpr uint64_t kMeta = 0x10000000; // tcmalloc metadata: descriptors, a thread cache
  static constexpr uint64_t kMetaSize = 0x4000;
  static constexpr uint64_t kLeaf = 0x10100000; // the page map leaf root_[1] points at
  static constexpr uint64_t kLeafSize = 0x200000;
  static constexpr uint64_t kHeap = 0x80000000; // the spans' pages: page 0x40000, leaf 1, entry 0
  static constexpr uint64_t kHeapSize = 0x100000;

  // The globals in the image's data.
  static constexpr uint64_t kThreadHeaps = kData + 0x10; // ThreadCache::thread_heaps_
  static constexpr uint64_t kSizeMap = kData + 0x1000;
  static constexpr uint64_t kCentral = kData + 0x3000;     // central_cache_[0]
  static constexpr uint64_t kRoot = kData + 0xa000;        // pagemap_.root_
  static constexpr uint64_t kDescriptors = kMeta;          // Span objects, 0x30 each
  static constexpr uint64_t kThreadCache = kMeta + 0x1000; // one ThreadCache
  static constexpr uint64_t kStackTrace = kMeta + 0x3000;  // the sampled span's StackTrace
  static constexpr uint64_t kPage = 8192;
  static constexpr uint64_t kFirstPage = kHeap / kPage;

  /// The size classes: {size, pages per span, objects per transfer batch}. Class 0 is unused.
  struct Class {
    uint32_t size, pages, batch;
  };
  static constexpr Class kClasses[] = {{0, 0, 0},     {8, 1, 32},     {16, 1, 32},  {32, 1, 32},
                                       {64, 1, 32},   {256, 1, 4},    {1024, 1, 8}, {4096, 1, 2},
                                       {65536, 8, 2}, {262144, 32, 2}};
  static constexpr unsigned kClassCount = 10;

  /// The spans, in page order: what each is and where its descriptor is.
  enum SpanIndex { kSmall, kLarge, kFree, kSampled, kSingle, kReturned, kSpanCount };
  struct Span {
    uint64_t first_page; // offset from kFirstPage
    uint64_t pages;
    unsigned sizeclass;
    unsigned location; // 0 in use, 1 normal free list, 2 returned
    bool sampled;
  };
  static constexpr Span kSpans[kSpanCount] = {
      {0, 1, 5, 0, false},   // 32 objects of 256 bytes
      {1, 40, 0, 0, false},  // a large allocation of 40 pages
      {41, 3, 0, 1, false},  // a free run of 3 pages
      {44, 1, 0, 0, true},   // a sampled allocation of 3,000 bytes: usable 4,096
      {45, 8, 8, 0, false},  // one 65,536-byte object
      {53, 8, 0, 2, false}}; // a returned run of 8 pages
  static constexpr uint64_t kSampledRequest = 3000;

  static uint64_t descriptor(unsigned span) { return kDescriptors + 0x30 * span; }
  static uint64_t spanAddress(unsigned span) { return kHeap + kSpans[span].first_page * kPage; }
  /// Object `k` of the small span.
  static uint64_t object(unsigned k) { return spanAddress(kSmall) + 256 * k; }

  // The small span's free objects: two on its own list, two in the thread cache, one transfer
  // batch of four in the central list's first slot.
  static constexpr unsigned kSpanFree[] = {3, 7};
  static constexpr unsigned kThreadCacheFree[] = {10, 11};
  static constexpr unsigned kTransferFree[] = {20, 21, 22, 23};
};

/// Links the Span sentinel at `sentinel` (next @0x10, prev @0x18) to the one-span list `span`, or
/// to itself when `span` is 0.
inline void putSpanList(FakeMemory &m, uint64_t sentinel, uint64_t span) {
  m.put64(sentinel + 0x10, span ? span : sentinel);
  m.put64(sentinel + 0x18, span ? span : sentinel);
  if (span) {
    m.put64(span + 0x10, sentinel);
    m.put64(span + 0x18, sentinel);
  }
}

/// Writes the heap TcmallocHeap describes into its four regions (kData, kMeta, kLeaf, kHeap, each
/// of its k...Size), which the caller has added.
inline void putTcmallocHeap(FakeMemory &m) {
  using H = TcmallocHeap;
  // The image is an ELF file: its first bytes (here, of its data) are an ELF header's magic.
  m.putBytes(H::kData, "\x7f"
                       "ELF");
  // SizeMap: class_array_ u8[2169] @0, num_objects_to_move_ i32[128] @0x87c, class_to_size_
  // i32[128] @0xa7c, class_to_pages_ u64[128] @0xc80, num_size_classes @0x1080.
  for (unsigned c = 1; c < H::kClassCount; ++c) {
    m.put32(H::kSizeMap + 0x87c + 4 * c, H::kClasses[c].batch);
    m.put32(H::kSizeMap + 0xa7c + 4 * c, H::kClasses[c].size);
    m.put64(H::kSizeMap + 0xc80 + 8 * c, H::kClasses[c].pages);
  }
  m.put64(H::kSizeMap + 0x1080, H::kClassCount);
  for (uint64_t s = 0, c = 1; s <= 262144; s += 8) { // every size's class: the first that fits
    while (H::kClasses[c].size < s)
      ++c;
    const uint64_t index = s <= 1024 ? (s + 7) >> 3 : (s + 127 + (120 << 7)) >> 7;
    m.put8(H::kSizeMap + index, uint8_t(c));
  }

  // Span descriptors {start, length, next, prev, objects, u32 refcount:16 sizeclass:8
  // location:2 sample:1} and the page map: root_[1] -> the leaf; the leaf holds each span at its
  // first and last page, plus a stale entry (page 2 -> the small span) as merges leave behind.
  m.put64(H::kRoot + 8 * (H::kFirstPage >> 18), H::kLeaf);
  for (unsigned i = 0; i < H::kSpanCount; ++i) {
    const TcmallocHeap::Span &s = H::kSpans[i];
    const uint64_t d = H::descriptor(i);
    m.put64(d, H::kFirstPage + s.first_page);
    m.put64(d + 8, s.pages);
    uint32_t bits = (s.sizeclass << 16) | (s.location << 24) | (s.sampled ? 1u << 26 : 0);
    if (i == H::kSmall)
      bits |= 32 - 2; // refcount: the objects not on the span's own list
    if (i == H::kSingle)
      bits |= 1;
    m.put32(d + 0x28, bits);
    const uint64_t leaf_index = (H::kFirstPage + s.first_page) & 0x3ffff;
    m.put64(H::kLeaf + 8 * leaf_index, d);
    m.put64(H::kLeaf + 8 * (leaf_index + s.pages - 1), d);
  }
  m.put64(H::kLeaf + 8 * ((H::kFirstPage + 2) & 0x3ffff), H::descriptor(H::kSmall));
  m.put64(H::descriptor(H::kSampled) + 0x20, H::kStackTrace);
  m.put64(H::kStackTrace, H::kSampledRequest); // StackTrace.size
  m.put64(H::kStackTrace + 8, 0);              // depth

  // The small span's own free list (through each object's first word), and the others.
  m.put64(H::descriptor(H::kSmall) + 0x20, H::object(H::kSpanFree[0]));
  m.put64(H::object(H::kSpanFree[0]), H::object(H::kSpanFree[1]));
  m.put64(H::object(H::kSpanFree[1]), 0);
  m.put64(H::object(H::kThreadCacheFree[0]), H::object(H::kThreadCacheFree[1]));
  m.put64(H::object(H::kThreadCacheFree[1]), 0);
  for (unsigned k = 0; k < 4; ++k)
    m.put64(H::object(H::kTransferFree[k]), k + 1 < 4 ? H::object(H::kTransferFree[k + 1]) : 0);
  for (unsigned k = 0; k < 32; ++k) // the used objects hold something
    if (k != 3 && k != 7 && k != 10 && k != 11 && (k < 20 || k > 23))
      m.put64(H::object(k), 0x5a5a5a5a00000000 | k);
  m.put8(H::spanAddress(H::kSmall) + H::kPage - 1, 0); // a seed captures the whole page

  // central_cache_[k] (1216 bytes): lock_ @0, size_class_ @8, empty_ @0x10, nonempty_ @0x40,
  // tc_slots_[64] {head, tail} @0x80, used_slots_ @0x480, cache_size_ @0x484.
  for (unsigned k = 0; k < H::kClassCount; ++k) {
    const uint64_t e = H::kCentral + 1216 * k;
    m.put64(e + 8, k);
    putSpanList(m, e + 0x10, k == 8 ? H::descriptor(H::kSingle) : 0);
    putSpanList(m, e + 0x40, k == 5 ? H::descriptor(H::kSmall) : 0);
    m.put32(e + 0x484, 16);
  }
  const uint64_t slots = H::kCentral + 1216 * 5 + 0x80;
  m.put64(slots, H::object(H::kTransferFree[0]));
  m.put64(slots + 8, H::object(H::kTransferFree[3]));
  m.put32(H::kCentral + 1216 * 5 + 0x480, 1);

  // ThreadCache: list_[128] of {list_, u32 length_, lowater_, max_length_, overages_, i32 size_}
  // (32 bytes), ..., tid_ @0x1020, next_ @0x1030, prev_ @0x1038.
  for (unsigned c = 0; c < H::kClassCount; ++c)
    m.put32(H::kThreadCache + 0x20 * c + 0x18, H::kClasses[c].size);
  m.put64(H::kThreadCache + 0x20 * 5, H::object(H::kThreadCacheFree[0]));
  m.put32(H::kThreadCache + 0x20 * 5 + 8, 2);
  m.put64(H::kThreadCache + 0x1020, 0x7f0000100000);
  m.put64(H::kThreadCache + 0x1030, 0);
  m.put64(H::kThreadCache + 0x1038, 0);
  m.put64(H::kThreadHeaps, H::kThreadCache);
}

} // namespace dumpsift::test
