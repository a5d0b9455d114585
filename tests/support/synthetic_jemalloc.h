// A small hand-laid jemalloc 5.3 heap (x86-64, Debian's configuration) for the synthetic jemalloc
// tests and the jemalloc walker's fuzz seeds. The structures are written field by field from the
// layouts in docs/heap-jemalloc.md (not from the walker's own tables). Header-only and free of
// Catch2, so tests/fuzz/make_seeds.cpp can use it too.
//
// The process has jemalloc linked into its executable (/opt/app/program):
//   0x400000  text (AT_ENTRY inside), 0x401000 data: arenas[4095]; 0x409000 .bss:
//             sz_index2size_tab, bin_infos, arena_emap_global {base, mutex, root[1 << 18]}
//   0x10000000 arena 0's base block (base_t at +0xc0), arena_t at 0x10000400 (only the pieces
//             the walker reads are mapped), edata_t descriptors at 0x10010000, the rtree leaf for
//             GiB 1 at 0x10100000
//   0x20000000 a thread's tcache_slow_t and tcache_t, and its cache bin stack
//   0x40000000 the heap: a slab of 16 regions of 256 bytes, a large extent of 16 KiB at
//             0x40010000 (user pointer +64), a dirty extent of 3 pages at 0x40020000
#pragma once

#include "support/synthetic_heaps.h"

#include <cstdint>
#include <functional>
#include <numeric>

namespace dumpsift::test {

/// Where putJemallocHeap put things.
struct JemallocHeap {
  static constexpr uint64_t kText = 0x400000, kEntry = 0x400100, kData = 0x401000;
  static constexpr uint64_t kArenas = kData;          // arenas[0]
  static constexpr uint64_t kBss = 0x409000;          // .bss, anonymous
  static constexpr uint64_t kIndex2Size = kBss;       // u64[232]
  static constexpr uint64_t kBinInfos = kBss + 0x800; // 36 x 40 bytes
  static constexpr uint64_t kEmap = kBss + 0x1000;    // rtree_t: base_t *base first
  static constexpr uint64_t kRoot = kEmap + 0x78;     // rtree root[1 << 18]
  static constexpr uint64_t kBlock = 0x10000000;      // base_block_t
  static constexpr uint64_t kBase = kBlock + 0xc0;    // base_t
  static constexpr uint64_t kArena = 0x10000400;      // arena_t
  static constexpr uint64_t kEdata = 0x10010000;      // edata_t[3], 128 bytes each
  static constexpr uint64_t kLeaf = 0x10100000;       // the leaf for GiB 1
  static constexpr uint64_t kSlow = 0x20000000;       // tcache_slow_t
  static constexpr uint64_t kTcache = 0x20000100;     // tcache_t
  static constexpr uint64_t kStackEnd = 0x20001000;   // cache bin stacks grow down from here
  static constexpr uint64_t kSlab = 0x40000000;       // 256-byte regions, szind 12
  static constexpr uint64_t kLarge = 0x40010000;      // 16 KiB + 4 KiB pad, szind 36
  static constexpr uint64_t kLargeUser = kLarge + 64; // its user pointer
  static constexpr uint64_t kDirty = 0x40020000;      // 3 free pages
  static constexpr unsigned kSlabRegions = 16;
  static constexpr unsigned kFreeRegions[2] = {3, 4}; // free in the slab's bitmap
  static constexpr unsigned kCachedRegion = 5;        // in the thread's cache bin 12
  static constexpr unsigned kStackRegion = 15;        // the tcache's stack allocation
  uint64_t index2size[232] = {};
};

/// The leaf element (RTREE_LEAF_COMPACT) for `edata` with size class `szind`, `state` and `slab`.
inline uint64_t jemallocLeafBits(uint64_t edata, unsigned szind, unsigned state, bool slab) {
  return uint64_t(szind) << 48 | edata | uint64_t(state) << 2 | (slab ? 1 : 0);
}

/// e_bits: arena_ind 0..11, slab 12, committed 13, state 17..19, szind 20..27, nfree 28..37.
inline uint64_t jemallocEdataBits(unsigned arena, bool slab, unsigned state, unsigned szind,
                                  unsigned nfree) {
  return uint64_t(arena) | uint64_t(slab) << 12 | uint64_t(1) << 13 | uint64_t(state) << 17 |
         uint64_t(szind) << 20 | uint64_t(nfree) << 28;
}

/// Writes the heap described above into `m`. `add_exe_region(start, size)` must add a region
/// backed by the executable (its text and data); the rest are anonymous regions added here.
inline JemallocHeap putJemallocHeap(FakeMemory &m,
                                    const std::function<void(uint64_t, uint64_t)> &add_exe_region) {
  using H = JemallocHeap;
  H h;
  add_exe_region(H::kText, 0x1000);
  add_exe_region(H::kData, 0x8000);
  m.addRegion(H::kBss, 0x202000);
  m.addRegion(H::kBlock, 0x200);
  m.addRegion(H::kArena + 0x2800, 0x100);
  m.addRegion(H::kArena + 0x13400, 0x100);
  m.addRegion(H::kEdata, 0x400);
  m.addRegion(H::kLeaf, 0x200000);
  m.addRegion(H::kSlow, 0x2000);
  m.addRegion(H::kSlab, 0x30000);

  // Size classes (sc.c): 8, 16 ... 128 by 16, then four per doubling; a slab is the least common
  // multiple of the page and the region size.
  unsigned n = 0;
  h.index2size[n++] = 8;
  for (uint64_t s = 16; s <= 128; s += 16)
    h.index2size[n++] = s;
  for (uint64_t base = 128; n < 232; base *= 2)
    for (uint64_t k = 1; k <= 4 && n < 232; ++k)
      h.index2size[n++] = base + k * base / 4;
  for (unsigned i = 0; i < 232; ++i)
    m.put64(H::kIndex2Size + 8 * i, h.index2size[i]);
  for (unsigned i = 0; i < 36; ++i) {
    const uint64_t reg = h.index2size[i], slab = std::lcm(uint64_t(4096), reg);
    const uint64_t at = H::kBinInfos + 40 * i;
    m.put64(at, reg);
    m.put64(at + 8, slab);
    m.put32(at + 0x10, uint32_t(slab / reg));
    m.put32(at + 0x14, 1);
    m.put64(at + 0x18, slab / reg);
    m.put64(at + 0x20, (slab / reg + 63) / 64);
  }

  // arenas[0], its base and base block, the extent map's root for GiB 1.
  m.put64(H::kArenas, H::kArena);
  m.put64(H::kEmap, H::kBase);
  m.put64(H::kRoot + 8 * 1, H::kLeaf);
  m.put64(H::kBlock, 0x200000); // size
  m.put64(H::kBlock + 8, 0);    // next
  m.put32(H::kBase, 0);         // ehooks.ind
  m.put64(H::kBase + 0xa0, H::kBlock);
  m.put64(H::kArena + 0x2898, H::kSlow); // tcache_ql
  m.put32(H::kArena + 0x13450, 0);       // ind
  m.put64(H::kArena + 0x13458, H::kBase);

  // The extents and the leaf elements of their pages (every page of a slab, the first and last
  // page of the others).
  const uint64_t slab_edata = H::kEdata, large_edata = H::kEdata + 128,
                 dirty_edata = H::kEdata + 256;
  uint64_t bitmap = 0;
  for (unsigned r : H::kFreeRegions)
    bitmap |= uint64_t(1) << r;
  m.put64(slab_edata, jemallocEdataBits(0, true, 0, 12, 2));
  m.put64(slab_edata + 8, H::kSlab);
  m.put64(slab_edata + 0x10, 0x1000 | 7); // size | edata serial number
  m.put64(slab_edata + 0x40, bitmap);
  m.put64(H::kLeaf, jemallocLeafBits(slab_edata, 12, 0, true));
  m.put64(large_edata, jemallocEdataBits(0, false, 0, 36, 0));
  m.put64(large_edata + 8, H::kLargeUser);
  m.put64(large_edata + 0x10, 0x5000);
  m.put64(H::kLeaf + 8 * 0x10, jemallocLeafBits(large_edata, 36, 0, false));
  m.put64(H::kLeaf + 8 * 0x14, jemallocLeafBits(large_edata, 36, 0, false));
  m.put64(dirty_edata, jemallocEdataBits(0, false, 1, 232 & 0xff, 0));
  m.put64(dirty_edata + 8, H::kDirty);
  m.put64(dirty_edata + 0x10, 0x3000);
  m.put64(H::kLeaf + 8 * 0x20, jemallocLeafBits(dirty_edata, 232, 1, false));
  m.put64(H::kLeaf + 8 * 0x22, jemallocLeafBits(dirty_edata, 232, 1, false));

  // One thread cache, alone on the arena's ring: bin 12 holds one freed region.
  m.put64(H::kSlow, H::kSlow);                                // link.qre_next
  m.put64(H::kSlow + 8, H::kSlow);                            // link.qre_prev
  m.put64(H::kSlow + 0x28, H::kArena);                        // arena
  m.put64(H::kSlow + 0xa0, H::kSlab + 256 * H::kStackRegion); // dyn_alloc
  m.put64(H::kSlow + 0xa8, H::kTcache);                       // tcache
  m.put64(H::kTcache, H::kSlow);                              // tcache_slow
  const uint64_t bin12 = H::kTcache + 8 + 24 * 12;
  m.put64(bin12, H::kStackEnd - 8);              // stack_head
  m.put16(bin12 + 0x14, uint16_t(H::kStackEnd)); // low_bits_empty
  m.put64(H::kStackEnd - 8, H::kSlab + 256 * H::kCachedRegion);
  m.put8(H::kSlow + 0x1fff, 0); // the whole page is written

  // Some bytes in the slab (only up to there is the heap in a fuzz seed).
  m.putBytes(H::kSlab, "region zero");
  return h;
}

} // namespace dumpsift::test
