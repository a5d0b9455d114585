// What the jemalloc walker learns about a process before it walks extents: where jemalloc's
// globals live, its size classes, the extent map's root, its arenas and what their thread caches
// hold. Internal to src/heap/jemalloc.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/support/diagnostics.h"
#include "jemalloc_layout.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift::jemalloc {

/// Calls visit(index, word) for every non-zero u64 of the array of `count` words at `at` that the
/// dump holds, in index order, until visit returns false. Returns how many of the words the dump
/// does not hold (a mapping cut short in the core: those read as absent).
template <typename Visit>
uint64_t forEachWord(const AddressSpace &memory, uint64_t at, uint64_t count, Visit &&visit) {
  const std::vector<MemoryRange> &ranges = memory.snapshot().memory;
  const uint64_t end = at + 8 * count;
  uint64_t missing = 0, cursor = at;
  while (cursor < end) {
    const MemoryRange *range = memory.rangeContaining(cursor);
    if (!range) {
      auto next = std::upper_bound(ranges.begin(), ranges.end(), cursor,
                                   [](uint64_t a, const MemoryRange &m) { return a < m.start; });
      uint64_t skip_to = next == ranges.end() ? end : std::min(end, next->start);
      uint64_t words = (skip_to - cursor + 7) / 8;
      missing += words;
      cursor += 8 * words;
      continue;
    }
    const uint64_t words = (std::min(end, range->end()) - cursor) / 8;
    if (words == 0) { // a word straddling two ranges: read it alone
      uint64_t w = 0;
      if (!memory.readU64(cursor, w))
        ++missing;
      else if (w && !visit((cursor - at) / 8, w))
        return missing;
      cursor += 8;
      continue;
    }
    const uint8_t *p = range->bytes.data() + (cursor - range->start);
    const uint64_t first = (cursor - at) / 8;
    for (uint64_t i = 0; i < words; ++i)
      if (uint64_t w = read64le(p + 8 * i); w && !visit(first + i, w))
        return missing;
    cursor += 8 * words;
  }
  return missing;
}

/// The module whose writable data holds jemalloc's globals: a mapped libjemalloc, or the
/// executable itself when jemalloc is linked in statically.
struct Home {
  std::string path;
  bool statically_linked = false;
  /// Its writable mappings, each followed by the anonymous mapping that continues it (.bss).
  std::vector<std::pair<uint64_t, uint64_t>> ranges; // [start, end), sorted
};

/// A mapped libjemalloc, else the executable (from the auxiliary vector); nullopt when the
/// process has neither or neither has writable data. Cheap: reads only the region list.
std::optional<Home> findHome(const Snapshot &snapshot);

struct BinInfo {
  uint64_t reg_size = 0;
  uint64_t slab_size = 0;
  uint32_t nregs = 0;
};

/// The size classes, read from the dump (they are computed at boot, so they live in writable
/// memory): sz_index2size_tab and bin_infos.
struct SizeClasses {
  uint64_t index2size[kNSizes] = {};
  BinInfo bins[kNBins];
  uint64_t index2size_at = 0;
  uint64_t bin_infos_at = 0;
};

/// Finds sz_index2size_tab in the home's writable data by its first entries and checks the rest;
/// nullopt when it is not there. Bounded by the size of the home's data.
std::optional<uint64_t> findIndex2Size(const AddressSpace &memory, const Home &home);

/// Reads the size classes: the index2size table at `index2size_at` and bin_infos (found by its
/// first record, checked against the table). Fails when either is missing or inconsistent.
llvm::Expected<SizeClasses> readSizeClasses(const AddressSpace &memory, const Home &home,
                                            uint64_t index2size_at);

/// The root index (the GiB) that the leaf at `leaf_at` maps, from its first non-empty elements (up
/// to 16): each names a descriptor whose extent covers the page it stands for at one index. Two
/// agreeing elements (or all of them) are needed; nullopt otherwise. Adds the bytes it read to
/// `bytes_read`.
std::optional<uint64_t> leafRootIndex(const AddressSpace &memory, uint64_t leaf_at,
                                      uint64_t &bytes_read);

/// Finds the extent map's rtree root array (arena_emap_global.rtree.root) in the home's data: an
/// array of 2^18 leaf pointers whose leaves' first elements describe extents covering the pages
/// they stand for, after the rtree's base_t pointer (arena 0's base: `base0` when known, else
/// any base_t of arena 0). 0 when not found. Reads a bounded number of candidate leaves' bytes.
uint64_t findRtreeRoot(const AddressSpace &memory, const Home &home, uint64_t base0);

/// The arenas: arena_t addresses by index (0 where an index has none), found as the array
/// `arenas[MALLOCX_ARENA_LIMIT]` in the home's data whose every non-null entry k is an arena_t
/// with ind == k and a base_t for arena k. Empty when not found (a build with another arena
/// layout).
struct Arenas {
  uint64_t array_at = 0;
  std::vector<uint64_t> by_index;
  unsigned count = 0; // non-null entries
};
Arenas findArenas(const AddressSpace &memory, const Home &home);

/// A pointer held by a thread cache (freed, still marked allocated in its slab), or the internal
/// allocation that holds a cache's stacks.
struct CachedPointer {
  uint64_t address = 0;
  uint16_t bin = 0; // the cache bin = the size class index; kInternal for a stack allocation
  static constexpr uint16_t kInternal = 0xffff;
  bool operator<(const CachedPointer &o) const { return address < o.address; }
};

/// Everything the thread caches hold.
struct Tcaches {
  std::vector<CachedPointer> pointers; // sorted by address, unique
  unsigned count = 0;                  // tcaches read
  uint64_t cached = 0;                 // cached pointers
};

/// Reads every tcache on each arena's tcache ring (tcache_ql, kept with config_stats): each
/// cache bin's stack of freed pointers, and each tcache's stack allocation. A ring that loops, a
/// tcache that does not point back to its arena or a stack that cannot be read is cut there with a
/// warning; every walk is bounded.
Tcaches readTcaches(const AddressSpace &memory, const Arenas &arenas, Diagnostics &diags);

/// A heap area of metadata: one base block (base_t.blocks) of an arena, [start, start+size).
struct BaseBlock {
  uint64_t start = 0;
  uint64_t size = 0;
  unsigned arena = 0;
};

/// Every arena's base blocks (jemalloc's own metadata: arena_t, edata_t, rtree leaves). A list
/// that loops or leaves the dump is cut there with a warning.
std::vector<BaseBlock> readBaseBlocks(const AddressSpace &memory, const Arenas &arenas,
                                      Diagnostics &diags);

} // namespace dumpsift::jemalloc
