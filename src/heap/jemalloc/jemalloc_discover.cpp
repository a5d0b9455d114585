// Finding jemalloc's structures without symbols: its home module, the size class tables, the
// extent map's root, the arenas, their thread caches and base blocks. See jemalloc_model.h for
// the contracts and docs/heap-jemalloc.md for the signatures.
#include "dumpsift/support/bytes.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "jemalloc_model.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <string_view>

namespace dumpsift::jemalloc {

namespace {

constexpr uint64_t kAtPhdr = 3, kAtEntry = 9; // auxiliary vector keys (elf.h)

/// The executable's path: the module holding AT_PHDR or AT_ENTRY, or empty.
std::string executablePath(const Snapshot &snap) {
  for (uint64_t key : {kAtPhdr, kAtEntry})
    for (const auto &[type, value] : snap.auxv)
      if (type == key)
        for (const Module &m : snap.modules)
          if (value >= m.start && value < m.end)
            return m.path;
  return "";
}

/// The writable mappings backed by `path`, each extended over the anonymous writable mappings
/// that follow it without a gap (the rest of its .bss).
std::vector<std::pair<uint64_t, uint64_t>> writableData(const Snapshot &snap,
                                                        const std::string &path) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  const std::vector<Region> &regions = snap.regions;
  for (size_t i = 0; i < regions.size(); ++i) {
    if (regions[i].backing_file != path || !regions[i].perms.write)
      continue;
    uint64_t start = regions[i].start, end = regions[i].end();
    while (i + 1 < regions.size() && regions[i + 1].start == end &&
           regions[i + 1].backing_file.empty() && regions[i + 1].perms.write)
      end = regions[++i].end();
    if (!ranges.empty() && ranges.back().second == start)
      ranges.back().second = end;
    else
      ranges.emplace_back(start, end);
  }
  return ranges;
}

/// Calls visit(address, bytes) for each captured piece of the home's data, in address order.
template <typename Visit>
void forEachCaptured(const AddressSpace &memory, const Home &home, Visit &&visit) {
  for (const auto &[start, end] : home.ranges)
    for (uint64_t cursor = start; cursor < end;) {
      const MemoryRange *range = memory.rangeContaining(cursor);
      if (!range) {
        auto next =
            std::upper_bound(memory.snapshot().memory.begin(), memory.snapshot().memory.end(),
                             cursor, [](uint64_t a, const MemoryRange &m) { return a < m.start; });
        if (next == memory.snapshot().memory.end() || next->start >= end)
          break;
        cursor = next->start;
        continue;
      }
      uint64_t stop = std::min(end, range->end());
      visit(cursor,
            llvm::ArrayRef<uint8_t>(range->bytes.data() + (cursor - range->start), stop - cursor));
      cursor = stop;
    }
}

/// Every 8-aligned address in the home's data where `pattern` starts, until `visit` returns true.
template <typename Visit>
void findPattern(const AddressSpace &memory, const Home &home, llvm::ArrayRef<uint8_t> pattern,
                 Visit &&visit) {
  bool done = false;
  forEachCaptured(memory, home, [&](uint64_t start, llvm::ArrayRef<uint8_t> bytes) {
    std::string_view hay(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    std::string_view needle(reinterpret_cast<const char *>(pattern.data()), pattern.size());
    for (size_t at = hay.find(needle); !done && at != std::string_view::npos;
         at = hay.find(needle, at + 1))
      if ((start + at) % 8 == 0)
        done = visit(start + at);
  });
}

/// True when `arena` looks like arena `index`: its ind says so and its base_t says so too.
bool isArena(const AddressSpace &memory, uint64_t arena, unsigned index) {
  uint32_t ind = 0, base_ind = 0;
  uint64_t base = 0;
  return arena % 8 == 0 && memory.readU32(arena + kArenaInd, ind) && ind == index &&
         memory.readU64(arena + kArenaBase, base) && base && base % 8 == 0 &&
         memory.readU32(base + kBaseInd, base_ind) && base_ind == index;
}

} // namespace

std::optional<Home> findHome(const Snapshot &snap) {
  for (const Region &r : snap.regions)
    if (r.perms.write && namesModule(kJemallocNames, r.backing_file)) {
      Home home{r.backing_file, false, writableData(snap, r.backing_file)};
      return home;
    }
  std::string exe = executablePath(snap);
  if (exe.empty())
    return std::nullopt;
  Home home{exe, true, writableData(snap, exe)};
  if (home.ranges.empty())
    return std::nullopt;
  return home;
}

std::optional<uint64_t> findIndex2Size(const AddressSpace &memory, const Home &home) {
  std::optional<uint64_t> found;
  llvm::ArrayRef<uint8_t> pattern(reinterpret_cast<const uint8_t *>(kIndex2SizeStart),
                                  sizeof kIndex2SizeStart);
  findPattern(memory, home, pattern, [&](uint64_t at) {
    uint8_t table[kNSizes * 8];
    if (llvm::Error e = memory.read(at, table)) {
      llvm::consumeError(std::move(e));
      return false;
    }
    // Past the start, each group of four classes steps by a power of two that never shrinks.
    uint64_t prev = read64le(table + 8 * (std::size(kIndex2SizeStart) - 1)), prev_step = 64;
    for (unsigned i = std::size(kIndex2SizeStart); i < kNSizes; ++i) {
      uint64_t size = read64le(table + 8 * i);
      if (size <= prev)
        return false;
      uint64_t step = size - prev;
      if ((step & (step - 1)) != 0 || step < prev_step || size % step != 0)
        return false;
      prev = size;
      prev_step = step;
    }
    found = at;
    return true;
  });
  return found;
}

llvm::Expected<SizeClasses> readSizeClasses(const AddressSpace &memory, const Home &home,
                                            uint64_t index2size_at) {
  SizeClasses classes;
  uint8_t table[kNSizes * 8];
  if (llvm::Error e = memory.read(index2size_at, table))
    return e;
  for (unsigned i = 0; i < kNSizes; ++i)
    classes.index2size[i] = read64le(table + 8 * i);
  classes.index2size_at = index2size_at;

  // bin_infos[0] = {reg_size 8, slab_size one page, nregs 512}; every record must agree with the
  // size table: nregs regions of reg_size fill a slab of whole pages.
  uint8_t first[20];
  llvm::support::endian::write64le(first, 8);
  llvm::support::endian::write64le(first + 8, kPage);
  llvm::support::endian::write32le(first + 16, kSlabMaxRegs);
  findPattern(memory, home, first, [&](uint64_t at) {
    uint8_t infos[kNBins * kBinInfoSize];
    if (llvm::Error e = memory.read(at, infos)) {
      llvm::consumeError(std::move(e));
      return false;
    }
    for (unsigned i = 0; i < kNBins; ++i) {
      const uint8_t *rec = infos + i * kBinInfoSize;
      BinInfo bin{read64le(rec + kBinInfoRegSize), read64le(rec + kBinInfoSlabSize),
                  read32le(rec + kBinInfoNregs)};
      if (bin.reg_size != classes.index2size[i] || bin.slab_size == 0 ||
          bin.slab_size % kPage != 0 || bin.nregs == 0 || bin.nregs > kSlabMaxRegs ||
          bin.nregs != bin.slab_size / bin.reg_size || read64le(rec + kBinInfoNbits) != bin.nregs ||
          read64le(rec + kBinInfoNgroups) != (bin.nregs + 63) / 64)
        return false;
      classes.bins[i] = bin;
    }
    classes.bin_infos_at = at;
    return true;
  });
  if (!classes.bin_infos_at)
    return createError("jemalloc's bin_infos table (slab sizes) not found in " + home.path);
  return classes;
}

std::optional<uint64_t> leafRootIndex(const AddressSpace &memory, uint64_t leaf_at,
                                      uint64_t &bytes_read) {
  constexpr unsigned kElementsChecked = 16;
  std::optional<uint64_t> index; // the root index the leaf's elements agree on
  unsigned checked = 0, fitting = 0;
  bool bad = false;
  uint64_t stopped_at = kRtreeEntries;
  forEachWord(memory, leaf_at, kRtreeEntries, [&](uint64_t j, uint64_t bits) {
    uint64_t edata = leafEdata(bits);
    if (!edata)
      return true;
    // The page is (index << 30) | (j << 12) for the index of the GiB that holds it. An element
    // whose descriptor cannot be read or does not cover it counts against the leaf.
    uint64_t e_addr = 0, e_size = 0;
    std::optional<uint64_t> fits;
    if (memory.readU64(edata + kEdataAddr, e_addr) &&
        memory.readU64(edata + kEdataSizeEsn, e_size)) {
      uint64_t base = e_addr & ~(kPage - 1), size = e_size & ~(kPage - 1);
      if (base + size > kUserSpaceEnd)
        size = 0;
      for (uint64_t gib : {base >> kRootShift, (base + size - 1) >> kRootShift}) {
        uint64_t page = (gib << kRootShift) | (j << kLeafShift);
        if (size && base + size > base && gib < kRtreeEntries && page >= base && page < base + size)
          fits = gib;
      }
    }
    if (fits) {
      bad = index && *index != *fits;
      index = fits;
      ++fitting;
    }
    if (!bad && ++checked < kElementsChecked)
      return true;
    stopped_at = j + 1;
    return false;
  });
  bytes_read += 8 * stopped_at;
  if (bad || (fitting < 2 && fitting != checked)) // two that agree, or all
    return std::nullopt;
  return index;
}

uint64_t findRtreeRoot(const AddressSpace &memory, const Home &home, uint64_t base0) {
  // A candidate is a word pointing at a leaf (base_alloc'ed with cache line alignment); the GiB
  // its elements describe is the root index of the word, hence where the root starts.
  constexpr uint64_t kReadBudget = 256ull << 20; // bytes of candidate leaves read
  uint64_t read = 0;
  uint64_t root = 0;
  forEachCaptured(memory, home, [&](uint64_t start, llvm::ArrayRef<uint8_t> bytes) {
    for (uint64_t off = (8 - start % 8) % 8; !root && off + 8 <= bytes.size(); off += 8) {
      uint64_t leaf_at = read64le(bytes.data() + off);
      if (!leaf_at || leaf_at % 64 != 0 || leaf_at > UINT64_MAX - kRtreeLeafBytes ||
          !memory.rangeContaining(leaf_at) || read > kReadBudget)
        continue;
      std::optional<uint64_t> index = leafRootIndex(memory, leaf_at, read);
      if (!index || start + off < 8 * *index)
        continue;
      // The root starts in the same captured piece of the home's data, after rtree_t.base: arena
      // 0's base_t (whose ehooks.ind is 0).
      uint64_t candidate = start + off - 8 * *index, base = 0;
      uint32_t base_ind = 1;
      if (candidate >= start + kRtreeRootOffset &&
          memory.readU64(candidate - kRtreeRootOffset, base) && base &&
          memory.readU32(base + kBaseInd, base_ind) && base_ind == 0 && (!base0 || base == base0))
        root = candidate;
    }
  });
  return root;
}

Arenas findArenas(const AddressSpace &memory, const Home &home) {
  Arenas arenas;
  forEachCaptured(memory, home, [&](uint64_t start, llvm::ArrayRef<uint8_t> bytes) {
    for (uint64_t off = (8 - start % 8) % 8; !arenas.array_at && off + 8 <= bytes.size();
         off += 8) {
      uint64_t first = read64le(bytes.data() + off);
      if (!first || !isArena(memory, first, 0))
        continue;
      // arenas[0] is arena 0; then every non-null entry must be the arena of its index (this
      // tells the array from a lone pointer to arena 0, such as jemalloc's `a0`). The array may
      // run from the library's file-backed data into its .bss, so each entry is read alone.
      const uint64_t at = start + off;
      std::vector<uint64_t> by_index(kArenaLimit);
      unsigned count = 0, last = 0;
      bool ok = true;
      for (unsigned k = 0; k < kArenaLimit && ok; ++k) {
        if (!memory.readU64(at + 8 * k, by_index[k]))
          break; // the rest of the array is not in the dump
        if (!by_index[k])
          continue;
        ok = isArena(memory, by_index[k], k);
        ++count;
        last = k;
      }
      if (!ok)
        continue;
      by_index.resize(last + 1);
      arenas = {at, std::move(by_index), count};
    }
  });
  return arenas;
}

Tcaches readTcaches(const AddressSpace &memory, const Arenas &arenas, Diagnostics &diags) {
  constexpr unsigned kMaxTcaches = 1u << 16;      // per arena ring
  constexpr uint64_t kMaxCachedPerBin = 1u << 13; // the u16 stack offsets allow no more
  Tcaches out;
  for (unsigned k = 0; k < arenas.by_index.size(); ++k) {
    const uint64_t arena = arenas.by_index[k];
    uint64_t head = 0;
    if (!arena || !memory.readU64(arena + kArenaTcacheQl, head) || !head)
      continue;
    const std::string where = "jemalloc arena " + std::to_string(k);
    llvm::DenseSet<uint64_t> seen;
    uint64_t slow = head;
    for (unsigned steps = 0;; ++steps) {
      if (steps == kMaxTcaches || isReservedDenseKey(slow) || !seen.insert(slow).second) {
        diags.warn(where, "tcache ring loops at " + hexAddress(slow) + "; cut there");
        break;
      }
      uint64_t owner = 0, tcache = 0, back = 0, dyn = 0, next = 0;
      if (!memory.readU64(slow + kSlowArena, owner) || owner != arena ||
          !memory.readU64(slow + kSlowTcache, tcache) || !memory.readU64(tcache, back) ||
          back != slow || !memory.readU64(slow + kSlowNext, next)) {
        diags.warn(where, "tcache " + hexAddress(slow) +
                              " is not captured or does not belong to this arena; the ring is "
                              "cut there");
        break;
      }
      ++out.count;
      if (memory.readU64(slow + kSlowDynAlloc, dyn) && dyn)
        out.pointers.push_back({dyn, CachedPointer::kInternal});
      const uint8_t *bins = memory.tryView(tcache + kTcacheBins, kTcacheNBinsMax * kCacheBinSize);
      for (unsigned b = 0; bins && b < kTcacheNBinsMax; ++b) {
        const uint8_t *bin = bins + b * kCacheBinSize;
        uint64_t stack = read64le(bin + kCacheBinStackHead);
        uint16_t empty = read16le(bin + kCacheBinLowBitsEmpty);
        uint64_t n = static_cast<uint16_t>(empty - static_cast<uint16_t>(stack)) / 8;
        if (n == 0)
          continue;
        const uint8_t *items = n <= kMaxCachedPerBin ? memory.tryView(stack, n * 8) : nullptr;
        if (!items) {
          diags.warn(hexAddress(tcache), "cache bin " + std::to_string(b) + " claims " +
                                             std::to_string(n) +
                                             " cached pointers that cannot be read; skipped");
          continue;
        }
        for (uint64_t i = 0; i < n; ++i)
          if (uint64_t p = read64le(items + 8 * i))
            out.pointers.push_back({p, static_cast<uint16_t>(b)});
      }
      if (!bins)
        diags.warn(hexAddress(tcache), "tcache bins are not captured");
      slow = next;
      if (slow == head)
        break;
    }
  }
  std::sort(out.pointers.begin(), out.pointers.end());
  size_t before = out.pointers.size();
  out.pointers.erase(std::unique(out.pointers.begin(), out.pointers.end(),
                                 [](const CachedPointer &a, const CachedPointer &b) {
                                   return a.address == b.address;
                                 }),
                     out.pointers.end());
  if (out.pointers.size() != before)
    diags.warn("jemalloc tcaches", std::to_string(before - out.pointers.size()) +
                                       " pointers are cached twice (a double free?)");
  for (const CachedPointer &p : out.pointers)
    out.cached += p.bin != CachedPointer::kInternal;
  return out;
}

std::vector<BaseBlock> readBaseBlocks(const AddressSpace &memory, const Arenas &arenas,
                                      Diagnostics &diags) {
  constexpr unsigned kMaxBlocks = 1u << 16; // per base
  std::vector<BaseBlock> blocks;
  for (unsigned k = 0; k < arenas.by_index.size(); ++k) {
    uint64_t base = 0, block = 0;
    if (!arenas.by_index[k] || !memory.readU64(arenas.by_index[k] + kArenaBase, base) ||
        !memory.readU64(base + kBaseBlocks, block))
      continue;
    llvm::DenseSet<uint64_t> seen;
    for (unsigned steps = 0; block; ++steps) {
      uint64_t size = 0, next = 0;
      if (steps == kMaxBlocks || isReservedDenseKey(block) || !seen.insert(block).second ||
          !memory.readU64(block + kBlockSize, size) || !memory.readU64(block + kBlockNext, next) ||
          size == 0 || block + size < block) {
        diags.warn("jemalloc arena " + std::to_string(k),
                   "base block list breaks at " + hexAddress(block) + "; cut there");
        break;
      }
      blocks.push_back({block, size, k});
      block = next;
    }
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const BaseBlock &a, const BaseBlock &b) { return a.start < b.start; });
  return blocks;
}

} // namespace dumpsift::jemalloc
