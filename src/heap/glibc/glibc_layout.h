// glibc ptmalloc facts the walker relies on (LP64 little-endian: x86_64, aarch64), and a cached
// reader over the address space. Internal to src/heap/glibc.
//
// Every constant below was checked in bminor/glibc at the tags glibc-2.31 ... glibc-2.40
// (malloc/malloc.c, malloc/arena.c); docs/heap-glibc.md lists where.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"

#include <cstdint>

namespace dumpsift::glibc {

/// The file names of glibc's libc: "libc.so.6", "libc-2.31.so".
inline constexpr ModuleName kLibcNames[] = {{"libc.so", ModuleName::Match::Prefix},
                                            {"libc-", ModuleName::Match::Prefix}};

// Chunk header: prev_size at +0, size|flags at +8, user memory at +16 (chunk2mem).
inline constexpr uint64_t kChunkHeader = 16;
inline constexpr uint64_t kMinChunk = 32;    // MINSIZE
inline constexpr uint64_t kAlignMask = 15;   // MALLOC_ALIGNMENT - 1
inline constexpr uint64_t kPrevInuse = 1;    // PREV_INUSE
inline constexpr uint64_t kIsMmapped = 2;    // IS_MMAPPED
inline constexpr uint64_t kNonMainArena = 4; // NON_MAIN_ARENA
inline constexpr uint64_t kSizeBits = 7;
/// HEAP_MAX_SIZE = 2 * DEFAULT_MMAP_THRESHOLD_MAX (32 MiB on 64-bit). Not valid with the
/// glibc.malloc.hugetlb=2 tunable (2.35+), which uses 4 * huge page size instead.
inline constexpr uint64_t kHeapMax = 0x4000000;

// tcache (2.30 ... 2.41): struct { uint16_t counts[64]; tcache_entry *entries[64]; } = 0x280
// bytes, allocated with _int_malloc, so a chunk of size 0x290. Entries point at user memory.
inline constexpr unsigned kTcacheBins = 64;
inline constexpr uint64_t kTcacheStructSize = 0x280;
inline constexpr uint64_t kTcacheChunk = 0x290;
inline constexpr uint64_t kTcacheEntriesOffset = 0x80;
inline constexpr uint64_t kTcacheMaxChunk = 0x20 + 0x10 * (kTcacheBins - 1); // 0x410
inline constexpr unsigned kTcacheMaxCount = 65535;                           // MAX_TCACHE_COUNT

// Fastbins: NFASTBINS = 10 heads (chunk pointers), bin i holds chunks of size 0x20 + 0x10 * i.
inline constexpr unsigned kFastbins = 10;
/// Chunks at most this big may sit in a tcache or a fastbin and then look in use.
inline constexpr uint64_t kSmallestCertainChunk = kTcacheMaxChunk + 0x10;

/// struct malloc_state: identical from 2.27 to 2.40 (checked at each tag 2.31 ... 2.40).
struct ArenaLayout {
  uint64_t flags = 0x4;     // int; bit 1 = NONCONTIGUOUS_BIT
  uint64_t fastbins = 0x10; // mfastbinptr fastbinsY[10]
  uint64_t top = 0x60;      // mchunkptr top
  uint64_t bins = 0x70;     // mchunkptr bins[254]; bin i's header is at arena + 0x60 + 16 * i
  uint64_t next = 0x870;    // struct malloc_state *next (ring of all arenas)
  uint64_t system_mem = 0x888;
  uint64_t size = 0x898;      // sizeof (struct malloc_state)
  unsigned bin_headers = 127; // NBINS - 1
};
inline constexpr ArenaLayout kArena{};
inline constexpr uint32_t kNonContiguousBit = 2;

/// The glibc layouts the walker knows, told apart by sizeof (heap_info): the `pagesize` field
/// added in 2.35 (commit c1beb51d08) grew it from 0x20 to 0x30. malloc_state, tcache and chunk
/// layouts are the same in all of them; safe-linking (2.32+) is detected from the lists.
struct HeapLayout {
  const char *versions;
  uint64_t heap_info_size;
  uint64_t first_chunk_offset; // first chunk of an arena's first heap: after heap_info + arena
};
inline constexpr HeapLayout kHeapLayouts[] = {
    {"2.31-2.34", 0x20, 0x8c0},
    {"2.35-2.40", 0x30, 0x8d0},
};

/// The layout whose heap_info size is `size`, or nullptr.
inline const HeapLayout *layoutForHeapInfoSize(uint64_t size) {
  for (const HeapLayout &layout : kHeapLayouts)
    if (layout.heap_info_size == size)
      return &layout;
  return nullptr;
}

/// Reads the dumped memory through the address space, remembering the last memory range hit so
/// that sequential reads (a chunk walk) cost a compare and a load. Never reads outside the dump.
class CachedReader {
public:
  explicit CachedReader(const AddressSpace &memory) : memory_(memory) {}

  /// Reads a little-endian u64 at `addr`; false when those 8 bytes are not captured in one range.
  bool u64(uint64_t addr, uint64_t &out) {
    if (!(addr >= lo_ && addr <= hi_ - 8)) {
      if (!refill(addr))
        return false;
      if (addr > hi_ - 8)
        return false;
    }
    out = read64le(base_ + (addr - lo_));
    return true;
  }

  /// A zero-copy view of [addr, addr+len), or nullptr when not captured in one range.
  const uint8_t *view(uint64_t addr, uint64_t len) {
    if (!(addr >= lo_ && addr < hi_)) {
      if (!refill(addr))
        return nullptr;
    }
    if (len > hi_ - addr)
      return nullptr;
    return base_ + (addr - lo_);
  }

  const AddressSpace &memory() const { return memory_; }

private:
  // Points the cache at the memory range holding `addr`; false when none does.
  bool refill(uint64_t addr) {
    const MemoryRange *range = memory_.rangeContaining(addr);
    if (!range || range->bytes.size() < 8)
      return false;
    lo_ = range->start;
    hi_ = range->end();
    base_ = range->bytes.data();
    return true;
  }

  const AddressSpace &memory_;
  uint64_t lo_ = ~0ull, hi_ = ~0ull; // empty: no address passes both range tests
  const uint8_t *base_ = nullptr;
};

} // namespace dumpsift::glibc
