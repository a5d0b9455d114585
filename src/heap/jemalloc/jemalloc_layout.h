// jemalloc 5.3 facts the walker relies on (x86-64: LG_VADDR 48, LG_PAGE 12, LG_QUANTUM 4; the
// configuration Debian 12's libjemalloc2 5.3.0-1 is built with: stats and prof on, debug off).
// Internal to src/heap/jemalloc.
//
// Every constant was read in jemalloc/jemalloc at tag 5.3.0 (54eaed1d); the file is named at each
// group, and docs/heap-jemalloc.md lists them all. Offsets inside structs whose layout depends on
// the build configuration (arena_t, base_t, tcache_slow_t) were checked against gcore'd processes
// of Debian's build; the walker checks each one again on every dump before it trusts it.
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "dumpsift/dump/words.h"

#include <cstdint>

namespace dumpsift::jemalloc {

/// The file names of jemalloc's shared library ("libjemalloc.so.2").
inline constexpr ModuleName kJemallocNames[] = {{"libjemalloc", ModuleName::Match::Prefix}};

// Pages and size classes (sc.h, sz.c). sz_index2size_tab[SC_NSIZES] maps a size class index
// (szind) to its size, which is what malloc_usable_size returns; the first SC_NBINS classes are
// small (regions in slabs), the rest large (one extent each).
inline constexpr uint64_t kPage = 4096;
inline constexpr unsigned kNSizes = 232; // SC_NSIZES with LG_VADDR 48, LG_QUANTUM 4
inline constexpr unsigned kNBins = 36;   // SC_NBINS with LG_PAGE 12
/// sz_index2size_tab starts with these (the tiny class 8, then quantum steps, then 4 per doubling).
inline constexpr uint64_t kIndex2SizeStart[] = {8,   16,  32,  48,  64,  80,  96,
                                                112, 128, 160, 192, 224, 256, 320};
/// Default opt.tcache_max (tcache.h TCACHE_MAXCLASS_LIMIT is larger; 32 KiB is the default).
inline constexpr uint64_t kDefaultTcacheMax = 32768;

// bin_info_t bin_infos[SC_NBINS] (bin_info.h, bitmap.h without BITMAP_USE_TREE): 40 bytes each.
inline constexpr uint64_t kBinInfoSize = 40;
inline constexpr uint64_t kBinInfoRegSize = 0x00;  // size_t reg_size
inline constexpr uint64_t kBinInfoSlabSize = 0x08; // size_t slab_size
inline constexpr uint64_t kBinInfoNregs = 0x10;    // uint32_t nregs
inline constexpr uint64_t kBinInfoNbits = 0x18;    // bitmap_info_t.nbits (== nregs)
inline constexpr uint64_t kBinInfoNgroups = 0x20;  // bitmap_info_t.ngroups
inline constexpr unsigned kSlabMaxRegs = 512;      // SC_SLAB_MAXREGS (LG_PAGE - SC_LG_TINY_MIN)

// The extent map (emap.h, rtree.h): emap_t arena_emap_global = { rtree_t { base_t *base;
// malloc_mutex_t init_lock; rtree_node_elm_t root[1 << 18]; } }. Two levels of 18 bits each
// (RTREE_NSB = 48 - 12 = 36): root[(addr >> 30) & 0x3ffff] points to a leaf of 1 << 18 elements,
// leaf[(addr >> 12) & 0x3ffff] describes the page at addr.
inline constexpr uint64_t kUserSpaceEnd = 1ull << 47; // x86-64 user addresses lie below
inline constexpr unsigned kRtreeBits = 18;
inline constexpr uint64_t kRtreeEntries = 1ull << kRtreeBits;
inline constexpr uint64_t kRtreeLeafBytes = kRtreeEntries * 8;
inline constexpr unsigned kLeafShift = 12;              // LG_PAGE
inline constexpr unsigned kRootShift = 12 + kRtreeBits; // 30: one leaf covers 1 GiB
inline constexpr uint64_t kRtreeRootOffset = 0x78;      // root[] inside rtree_t
// A leaf element, RTREE_LEAF_COMPACT (rtree.h rtree_leaf_elm_bits_encode):
//   bits 48..63 szind, 7..47 the edata_t pointer (EDATA_ALIGNMENT 128), 2..4 state,
//   1 is_head, 0 slab.
inline constexpr unsigned kLeafSzindShift = 48;
inline constexpr uint64_t kLeafEdataMask = ((1ull << 48) - 1) & ~uint64_t(127);
inline constexpr uint64_t kLeafSlabBit = 1;

/// The edata_t pointer in a leaf element (sign-extended from bit 47), or 0.
inline uint64_t leafEdata(uint64_t bits) {
  uint64_t e = bits & kLeafEdataMask;
  return (e & (1ull << 47)) ? e | ~((1ull << 48) - 1) : e;
}

// edata_t (edata.h): 128 bytes, 128-aligned.
inline constexpr uint64_t kEdataBytes = 128;
inline constexpr uint64_t kEdataBits = 0x00;    // uint64_t e_bits
inline constexpr uint64_t kEdataAddr = 0x08;    // void *e_addr: slab base, or a large user pointer
inline constexpr uint64_t kEdataSizeEsn = 0x10; // size_t e_size_esn: the size in its page bits
inline constexpr uint64_t kEdataBitmap = 0x40;  // slab_data_t: the slab's bitmap, u64[8]
// e_bits fields (EDATA_BITS_*): arena_ind 0..11, slab 12, committed 13, pai 14, zeroed 15,
// guarded 16, state 17..19, szind 20..27, nfree 28..37, bin_shard 38..43, is_head 44.
inline constexpr unsigned kBitsArenaMask = 0xfff;
inline constexpr unsigned kBitsSlabShift = 12;
inline constexpr unsigned kBitsStateShift = 17;
inline constexpr unsigned kBitsSzindShift = 20;
inline constexpr unsigned kBitsNfreeShift = 28;
inline constexpr unsigned kArenaLimit = 4095; // MALLOCX_ARENA_LIMIT

/// extent_state_t (edata.h).
enum class ExtentState : uint8_t {
  Active = 0,
  Dirty = 1,
  Muzzy = 2,
  Retained = 3,
  Transition = 4,
  Merging = 5,
};

struct EdataFields {
  unsigned arena;
  bool slab;
  ExtentState state;
  unsigned szind;
  unsigned nfree;
};
inline EdataFields decodeEdataBits(uint64_t bits) {
  return {static_cast<unsigned>(bits & kBitsArenaMask), ((bits >> kBitsSlabShift) & 1) != 0,
          static_cast<ExtentState>((bits >> kBitsStateShift) & 7),
          static_cast<unsigned>((bits >> kBitsSzindShift) & 0xff),
          static_cast<unsigned>((bits >> kBitsNfreeShift) & 0x3ff)};
}

// arena_t (arena_structs.h) with config_stats: the arena_stats_t before tcache_ql sets its offset;
// `ind`, `base` and the bins follow pa_shard_t. Checked per arena: ind == its index in arenas[]
// and the base's ehooks.ind == that index too.
inline constexpr uint64_t kArenaTcacheQl = 0x2898; // ql_head(tcache_slow_t) tcache_ql
inline constexpr uint64_t kArenaInd = 0x13450;     // unsigned ind
inline constexpr uint64_t kArenaBase = 0x13458;    // base_t *base

// base_t (base.h): ehooks_t ehooks { atomic_u_t ind; ... } first, then ehooks_base, mtx, ...
inline constexpr uint64_t kBaseInd = 0x00;    // the arena index (base_ind_get)
inline constexpr uint64_t kBaseBlocks = 0xa0; // base_block_t *blocks (newest first)
// base_block_t: size_t size; base_block_t *next; edata_t edata.
inline constexpr uint64_t kBlockSize = 0x00;
inline constexpr uint64_t kBlockNext = 0x08;

// tcache_slow_t (tcache_structs.h): ql_elm link { next, prev } first; the arena at 0x28 (after
// the cache_bin_array_descriptor_t), dyn_alloc (the internal allocation holding the stacks) and
// the tcache_t after the per-bin arrays.
inline constexpr uint64_t kSlowNext = 0x00;
inline constexpr uint64_t kSlowArena = 0x28;
inline constexpr uint64_t kSlowDynAlloc = 0xa0;
inline constexpr uint64_t kSlowTcache = 0xa8;
// tcache_t: tcache_slow_t *tcache_slow; cache_bin_t bins[TCACHE_NBINS_MAX = 73].
inline constexpr uint64_t kTcacheBins = 0x08;
inline constexpr unsigned kTcacheNBinsMax = 73;
// cache_bin_t (cache_bin.h): void **stack_head; nrequests; u16 low_bits_low_water, low_bits_full,
// low_bits_empty. The stack grows down: the cached pointers are the
// (low_bits_empty - (u16)stack_head) / 8 words from stack_head up.
inline constexpr uint64_t kCacheBinSize = 24;
inline constexpr uint64_t kCacheBinStackHead = 0x00;
inline constexpr uint64_t kCacheBinLowBitsEmpty = 0x14;

} // namespace dumpsift::jemalloc
