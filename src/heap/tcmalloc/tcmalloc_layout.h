// gperftools tcmalloc facts the walker relies on: gperftools 2.10 in its default configuration
// (8 KiB pages, kMaxSize 256 KiB, 16-byte minimum alignment, 64 transfer slots per central free
// list), LP64 little-endian (x86_64; aarch64 has the same layout). Internal to src/heap/tcmalloc.
//
// Every offset below was read in gperftools/gperftools at the tag gperftools-2.10 (src/common.h,
// src/span.h, src/pagemap.h, src/page_heap.h, src/central_freelist.h, src/thread_cache.h,
// src/sampler.h) and checked in gcore'd processes of Debian 12's libtcmalloc_minimal.so.4 and
// libtcmalloc.so.4; docs/heap-tcmalloc.md lists where each comes from.
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "dumpsift/dump/words.h"

#include <cstdint>

namespace dumpsift::tcmalloc {

/// The file names of gperftools' tcmalloc libraries: libtcmalloc.so.4,
/// libtcmalloc_minimal.so.4, libtcmalloc_and_profiler.so.4 and their _debug builds.
inline constexpr ModuleName kTcmallocNames[] = {{"libtcmalloc", ModuleName::Match::Prefix}};

// Pages and sizes (common.h).
inline constexpr unsigned kPageShift = 13; // kPageShift (TCMALLOC_PAGE_SIZE_SHIFT unset)
inline constexpr uint64_t kPageSize = uint64_t(1) << kPageShift;
inline constexpr uint64_t kMaxSize = 256 * 1024; // the largest small object
inline constexpr unsigned kClassSizesMax = 128;  // SizeMap array lengths
/// Longest thread cache free list: max_length_ never exceeds kMaxDynamicFreeListLength, and a list
/// is trimmed as soon as its length passes max_length_ (thread_cache.cc, ListTooLong).
inline constexpr uint32_t kMaxThreadListLength = 8192;
/// Most objects moved at once between a thread cache and a central list: NumMoveSize gives
/// 64 KiB / size, at most TCMALLOC_TRANSFER_NUM_OBJ, so at most 64 KiB / 8 (common.cc).
inline constexpr uint32_t kMaxBatch = 8192;

/// class SizeMap (common.h): class_array_[kClassArraySize] u8, num_objects_to_move_[128] i32,
/// class_to_size_[128] i32, class_to_pages_[128] size_t, num_size_classes size_t.
struct SizeMapLayout {
  uint64_t class_array = 0;
  uint64_t class_array_size = ((kMaxSize + 127 + (120 << 7)) >> 7) + 1; // kClassArraySize: 2169
  uint64_t num_objects_to_move = 0x87c;
  uint64_t class_to_size = 0xa7c;
  uint64_t class_to_pages = 0xc80;
  uint64_t num_size_classes = 0x1080;
  uint64_t size = 0x1088;
};
inline constexpr SizeMapLayout kSizeMap{};

/// The class_array_ index of a request of `n` bytes (n <= kMaxSize): SizeMap::ClassIndex.
inline uint64_t classIndex(uint64_t n) {
  return n <= 1024 ? (n + 7) >> 3 : (n + 127 + (120 << 7)) >> 7;
}

/// struct Span (span.h), 0x30 bytes: start (page number), length (pages), next, prev, objects
/// (free object list; for a sampled span a StackTrace* whose first word is the requested size),
/// then one unsigned int of bit fields: refcount:16, sizeclass:8, location:2, sample:1.
struct SpanLayout {
  uint64_t start = 0x00;
  uint64_t length = 0x08;
  uint64_t next = 0x10;
  uint64_t prev = 0x18;
  uint64_t objects = 0x20;
  uint64_t bits = 0x28;
  uint64_t size = 0x30;
};
inline constexpr SpanLayout kSpan{};
enum SpanLocation : uint32_t { kInUse = 0, kOnNormalFreelist = 1, kOnReturnedFreelist = 2 };

/// TCMalloc_PageMap2<kAddressBits - kPageShift> = PageMap2<35> (pagemap.h, page_heap.h):
/// root_[2^17] of Leaf*, each Leaf 2^18 Span* (one per page).
inline constexpr unsigned kLeafBits = 18; // (35 + 1) / 2
inline constexpr unsigned kRootBits = 17; // 35 - 18
inline constexpr uint64_t kPageNumberLimit = uint64_t(1) << (kLeafBits + kRootBits);
inline constexpr uint64_t kLeafEntries = uint64_t(1) << kLeafBits;
inline constexpr uint64_t kRootEntries = uint64_t(1) << kRootBits;

/// class CentralFreeListPadded (central_freelist.h), 1216 bytes each, one per size class in
/// Static::central_cache_[128]: lock_ (SpinLock, 0 = free), size_class_, the empty_ and nonempty_
/// Span sentinels, num_spans_, counter_, tc_slots_[64] of {head, tail}, used_slots_ i32.
struct CentralLayout {
  uint64_t lock = 0x00;
  uint64_t size_class = 0x08;
  uint64_t empty = 0x10;
  uint64_t nonempty = 0x40;
  uint64_t tc_slots = 0x80;
  unsigned max_slots = 64; // kMaxNumTransferEntries
  uint64_t used_slots = 0x480;
  uint64_t stride = 1216; // sizeof(CentralFreeListPadded): 0x48c rounded up to 64
};
inline constexpr CentralLayout kCentral{};

/// class ThreadCache (thread_cache.h), 0x1040 bytes: list_[128] of FreeList {list_, length_ u32,
/// lowater_, max_length_, length_overages_, size_ i32 (the class's object size)}, size_, max_size_,
/// sampler_ (24 bytes), tid_ (pthread_t), in_setspecific_, next_, prev_.
struct ThreadCacheLayout {
  uint64_t lists = 0x0;
  uint64_t list_stride = 0x20;
  uint64_t list_head = 0x0;
  uint64_t list_length = 0x8;
  uint64_t list_object_size = 0x18;
  uint64_t tid = 0x1020;
  uint64_t next = 0x1030;
  uint64_t prev = 0x1038;
  uint64_t size = 0x1040;
};
inline constexpr ThreadCacheLayout kThreadCache{};

} // namespace dumpsift::tcmalloc
