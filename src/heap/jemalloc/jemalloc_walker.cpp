// The jemalloc walker: discovery (jemalloc_discover.cpp), then one pass over the extent map's
// leaves in address order. Each active slab gives its regions (the bitmap says which are
// allocated), each active large extent one allocation; what a thread cache holds is free.
#include "jemalloc_walker.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "jemalloc_model.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

namespace dumpsift {

namespace {

using namespace jemalloc;

class JemallocWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "jemalloc"; }

  /// Linux x86_64 processes (64-bit little-endian) that map libjemalloc or hold its tables in
  /// their executable's data; sizes are size classes, which say nothing of the request.
  const WalkerTraits &traits() const override {
    static const WalkerTraits traits{
        .platforms = Platforms::littleEndian64({Os::Linux}, {"x86_64"}),
        .modules = {std::begin(kJemallocNames), std::end(kJemallocNames)},
        .requests = nullptr,
        .thresholds = {}};
    return traits;
  }

  /// True when the process maps a libjemalloc, or when its executable's data holds jemalloc's
  /// size class table (jemalloc linked in statically).
  bool detect(const AddressSpace &memory) const override {
    const Snapshot &snap = memory.snapshot();
    std::optional<Home> home = findHome(snap);
    if (!home)
      return false;
    return !home->statically_linked || findIndex2Size(memory, *home).has_value();
  }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions & /*one thread*/) const override;
};

/// One pass over the extents in address order, reporting allocations and collecting areas.
class ExtentPass {
public:
  ExtentPass(const AddressSpace &memory, uint64_t root, const SizeClasses &classes,
             const Arenas &arenas, const Tcaches &tcaches, AllocationSink sink, Diagnostics &diags,
             HeapWalkResult &result)
      : memory_(memory), root_(root), classes_(classes), arenas_(arenas), tcaches_(tcaches),
        sink_(sink), diags_(diags), result_(result), tcaches_known_(!arenas.by_index.empty()) {}

  /// Walks one leaf at `leaf_at`: the extents whose first page lies in GiB `root_index`. Returns
  /// how many of its elements the dump does not hold.
  uint64_t walkLeaf(uint64_t root_index, uint64_t leaf_at) {
    uint64_t next = 0; // every page of a slab points to its edata: skip those met already
    return forEachWord(memory_, leaf_at, kRtreeEntries, [&](uint64_t j, uint64_t bits) {
      if (j < next)
        return true;
      if (uint64_t edata = leafEdata(bits)) {
        uint64_t page = (root_index << kRootShift) | (j << kLeafShift);
        next = j + walkExtent(page, bits, edata);
      }
      return true;
    });
  }

  /// Reports what no extent claimed: thread-cached pointers outside every extent.
  void finish() {
    uint64_t unmatched = tcaches_.pointers.size() - matched_;
    if (unmatched)
      diags_.warn("jemalloc tcaches", std::to_string(unmatched) +
                                          " cached pointers lie in no active extent (stale or "
                                          "damaged thread caches)");
  }

  uint64_t slabs = 0, large = 0, regions = 0, free_extents = 0, retained = 0, in_flight = 0;
  uint64_t internal = 0, bitmap_mismatches = 0, cached_mismatches = 0;

private:
  /// Handles the extent whose edata a leaf element at `page` names, if `page` is its first page.
  /// Returns how many pages the extent spans from `page` (0 when it was skipped).
  uint64_t walkExtent(uint64_t page, uint64_t leaf_bits, uint64_t edata_at) {
    const uint8_t *edata = memory_.tryView(edata_at, kEdataBytes);
    if (!edata) {
      // Keyed by the descriptor, so that the pages of one extent make one warning.
      diags_.warn(hexAddress(edata_at), "extent descriptor is not captured; its extent is skipped");
      return 0;
    }
    const uint64_t e_addr = read64le(edata + kEdataAddr);
    const uint64_t size = read64le(edata + kEdataSizeEsn) & ~(kPage - 1);
    if ((e_addr & ~(kPage - 1)) != page)
      return 0; // a later page of an extent met before, or a stale element
    const EdataFields f = decodeEdataBits(read64le(edata + kEdataBits));
    if (size == 0 || page + size < page) {
      diags_.warn(hexAddress(edata_at), "extent at " + hexAddress(page) + " has size 0");
      return 0;
    }
    if (page < last_end_) {
      diags_.warn(hexAddress(edata_at),
                  "extent at " + hexAddress(page) + " overlaps the one before; skipped");
      return 0;
    }
    // Every extent is mapped at its first and last page (emap_register_boundary): a descriptor
    // whose last page maps elsewhere has a wrong size.
    if (size > kPage && !lastPageMapsTo(page + size - kPage, edata_at)) {
      diags_.warn(hexAddress(edata_at), "extent at " + hexAddress(page) + " of " +
                                            std::to_string(size) +
                                            " bytes: its last page is not mapped to it; skipped");
      return 0;
    }
    last_end_ = page + size;
    const uint64_t arena = f.arena < arenas_.by_index.size() ? arenas_.by_index[f.arena] : 0;
    const uint64_t pages = size / kPage;
    switch (f.state) {
    case ExtentState::Active:
      if (f.slab != ((leaf_bits & kLeafSlabBit) != 0)) {
        diags_.warn(hexAddress(edata_at), "extent at " + hexAddress(page) +
                                              ": the extent map and the descriptor disagree on "
                                              "slab; skipped");
        return pages;
      }
      if (f.slab)
        walkSlab(edata, edata_at, e_addr, size, f, arena);
      else
        walkLarge(edata_at, e_addr, page, size, static_cast<unsigned>(leaf_bits >> kLeafSzindShift),
                  f, arena);
      return pages;
    case ExtentState::Dirty:
    case ExtentState::Muzzy:
      ++free_extents;
      addArea(f.state == ExtentState::Dirty ? "dirty" : "muzzy", page, size, arena);
      return pages;
    case ExtentState::Retained:
      ++retained;
      addArea("retained", page, size, arena);
      return pages;
    case ExtentState::Transition:
    case ExtentState::Merging:
      ++in_flight; // being split or merged when the process stopped
      addArea("in-flight", page, size, arena);
      return pages;
    }
    diags_.warn(hexAddress(edata_at), "extent at " + hexAddress(page) + " has unknown state " +
                                          std::to_string(static_cast<unsigned>(f.state)));
    return pages;
  }

  /// Reports the regions of an active slab: allocated unless the bitmap says free or a thread
  /// cache holds them.
  void walkSlab(const uint8_t *edata, uint64_t edata_at, uint64_t base, uint64_t size,
                const EdataFields &f, uint64_t arena) {
    if (f.szind >= kNBins || size != classes_.bins[f.szind].slab_size || base % kPage != 0) {
      diags_.warn(hexAddress(edata_at),
                  "slab at " + hexAddress(base) + " has size class " + std::to_string(f.szind) +
                      " and " + std::to_string(size) + " bytes, which do not match; skipped");
      return;
    }
    ++slabs;
    addArea("slabs", base, size, arena);
    const BinInfo &bin = classes_.bins[f.szind];
    const bool maybe_cached_unknown = !tcaches_known_ && bin.reg_size <= kDefaultTcacheMax;
    uint64_t bitmap[kSlabMaxRegs / 64];
    for (unsigned g = 0; g < kSlabMaxRegs / 64; ++g)
      bitmap[g] = read64le(edata + kEdataBitmap + 8 * g);
    unsigned nfree = 0;
    a_.arena = arena;
    a_.size = a_.chunk_size = bin.reg_size;
    a_.mmapped = false;
    for (uint32_t r = 0; r < bin.nregs; ++r) {
      const uint64_t address = base + r * bin.reg_size;
      const bool is_free = (bitmap[r >> 6] >> (r & 63)) & 1; // a set bit is a free region
      nfree += is_free;
      const CachedPointer *cached = lookupCached(address);
      if (cached && cached->bin == CachedPointer::kInternal) {
        ++internal; // a tcache's stacks: jemalloc's own memory
        continue;
      }
      if (cached && (is_free || cached->bin != f.szind))
        ++cached_mismatches;
      a_.address = a_.chunk_address = address;
      a_.state = is_free || cached      ? AllocState::Free
                 : maybe_cached_unknown ? AllocState::Unknown
                                        : AllocState::Used;
      emit();
    }
    if (nfree != f.nfree && ++bitmap_mismatches <= 16)
      diags_.warn(hexAddress(edata_at), "slab at " + hexAddress(base) + ": bitmap has " +
                                            std::to_string(nfree) + " free regions, nfree says " +
                                            std::to_string(f.nfree) +
                                            " (changing when the process stopped?)");
  }

  /// Reports an active large extent: one allocation at e_addr whose usable size is the size class
  /// that the extent map records for its page (what malloc_usable_size reads).
  void walkLarge(uint64_t edata_at, uint64_t e_addr, uint64_t base, uint64_t size,
                 unsigned leaf_szind, const EdataFields &f, uint64_t arena) {
    if (leaf_szind >= kNSizes || leaf_szind != f.szind ||
        e_addr - base + classes_.index2size[leaf_szind] > size) {
      diags_.warn(hexAddress(edata_at), "large extent at " + hexAddress(base) + " (" +
                                            std::to_string(size) + " bytes) has size class " +
                                            std::to_string(leaf_szind) + " in the extent map and " +
                                            std::to_string(f.szind) +
                                            " in its descriptor, which do not fit; skipped");
      return;
    }
    addArea("large", base, size, arena);
    const CachedPointer *cached = lookupCached(e_addr);
    if (cached && cached->bin == CachedPointer::kInternal) {
      ++internal;
      return;
    }
    ++large;
    const uint64_t usable = classes_.index2size[leaf_szind];
    if (cached && cached->bin != leaf_szind)
      ++cached_mismatches;
    a_.address = e_addr;
    a_.size = usable;
    a_.chunk_address = base;
    a_.chunk_size = size;
    a_.arena = arena;
    a_.mmapped = false;
    a_.state = cached                                           ? AllocState::Free
               : !tcaches_known_ && usable <= kDefaultTcacheMax ? AllocState::Unknown
                                                                : AllocState::Used;
    emit();
  }

  /// False when the extent map's element for the page at `last` is in the dump and names another
  /// descriptor than `edata_at` (or there is no leaf for it).
  bool lastPageMapsTo(uint64_t last, uint64_t edata_at) const {
    const uint64_t gib = last >> kRootShift;
    uint64_t leaf = 0, bits = 0;
    if (gib >= kRtreeEntries)
      return false;
    if (!memory_.readU64(root_ + 8 * gib, leaf))
      return true; // not in the dump: cannot tell
    if (!leaf)
      return false;
    if (!memory_.readU64(leaf + 8 * ((last >> kLeafShift) & (kRtreeEntries - 1)), bits))
      return true;
    return leafEdata(bits) == edata_at;
  }

  /// The thread-cache entry at `address`, or nullptr. Addresses must come in increasing order.
  const CachedPointer *lookupCached(uint64_t address) {
    const std::vector<CachedPointer> &p = tcaches_.pointers;
    while (cursor_ < p.size() && p[cursor_].address < address)
      ++cursor_;
    if (cursor_ < p.size() && p[cursor_].address == address) {
      ++matched_;
      return &p[cursor_++];
    }
    return nullptr;
  }

  void emit() {
    sink_(0, a_); // one thread: lane 0
    result_.stats.add(a_);
    ++regions;
  }

  /// Adds an area, merged with the one before when it continues it (same kind and arena).
  void addArea(const char *kind, uint64_t start, uint64_t size, uint64_t arena) {
    std::vector<HeapArea> &areas = result_.areas;
    if (!areas.empty() && areas.back().kind == kind && areas.back().arena == arena &&
        areas.back().start + areas.back().size == start)
      areas.back().size += size;
    else
      areas.push_back({kind, start, size, arena});
  }

  const AddressSpace &memory_;
  const uint64_t root_;
  const SizeClasses &classes_;
  const Arenas &arenas_;
  const Tcaches &tcaches_;
  AllocationSink sink_;
  Diagnostics &diags_;
  HeapWalkResult &result_;
  const bool tcaches_known_; // the arenas' tcache rings were read (none may be on them)
  Allocation a_;             // reused: no per-region construction
  uint64_t last_end_ = 0;
  size_t cursor_ = 0;
  uint64_t matched_ = 0;
};

/// The extent map's leaves as (root index, leaf address), in root index order. Root words the dump
/// does not hold are a warning. Root entries that share a leaf (or overlap) are corruption: of
/// those, only the one whose index the leaf's own elements name is kept.
std::vector<std::pair<uint64_t, uint64_t>> readLeaves(const AddressSpace &memory, uint64_t root,
                                                      Diagnostics &diags) {
  std::vector<std::pair<uint64_t, uint64_t>> leaves;
  uint64_t missing = forEachWord(memory, root, kRtreeEntries, [&](uint64_t i, uint64_t leaf) {
    leaves.emplace_back(i, leaf);
    return true;
  });
  if (missing)
    diags.warn(hexAddress(root), std::to_string(missing) +
                                     " words of the extent map root are not in the dump; the "
                                     "memory they map is not walked");
  std::vector<std::pair<uint64_t, uint64_t>> by_leaf; // (leaf address, root index)
  for (const auto &[index, leaf] : leaves)
    by_leaf.emplace_back(leaf, index);
  llvm::sort(by_leaf);
  constexpr uint64_t kReadBudget = 256ull << 20; // bytes of shared leaves read to decide
  uint64_t read = 0;
  std::vector<uint64_t> dropped; // root indexes
  for (size_t k = 0; k < by_leaf.size();) {
    size_t end = k + 1; // [k, end): leaves that overlap the one before
    while (end < by_leaf.size() && by_leaf[end].first - by_leaf[end - 1].first < kRtreeLeafBytes)
      ++end;
    if (end - k > 1) {
      diags.warn(hexAddress(by_leaf[k].first),
                 std::to_string(end - k) +
                     " extent map root entries share or overlap this leaf; only the one it maps "
                     "is walked");
      std::optional<uint64_t> own; // the index the first leaf of the group maps
      if (read <= kReadBudget)
        own = leafRootIndex(memory, by_leaf[k].first, read);
      for (size_t m = k; m < end; ++m)
        if (!own || by_leaf[m].first != by_leaf[k].first || by_leaf[m].second != *own)
          dropped.push_back(by_leaf[m].second);
    }
    k = end;
  }
  llvm::sort(dropped);
  llvm::erase_if(leaves, [&](const auto &l) {
    return std::binary_search(dropped.begin(), dropped.end(), l.first);
  });
  return leaves;
}

llvm::Expected<HeapWalkResult> JemallocWalker::walk(const AddressSpace &memory, AllocationSink sink,
                                                    Diagnostics &diags,
                                                    const WalkOptions & /*one thread*/) const {
  const Snapshot &snap = memory.snapshot();
  std::optional<Home> home = findHome(snap);
  if (!home)
    return createError("no jemalloc library or executable data mapped");
  std::optional<uint64_t> index2size = findIndex2Size(memory, *home);
  if (!index2size)
    return createError("jemalloc's size class table (sz_index2size_tab) not found in the data of " +
                       home->path + " (not jemalloc 5.x with 4 KiB pages and 16-byte quantum?)");
  auto classes = readSizeClasses(memory, *home, *index2size);
  if (!classes)
    return classes.takeError();
  Arenas arenas = findArenas(memory, *home);
  if (arenas.by_index.empty())
    diags.warn("jemalloc", "arenas not found (another arena_t layout?): thread caches cannot be "
                           "read, so regions of up to " +
                               std::to_string(kDefaultTcacheMax) +
                               " bytes that look allocated are reported unknown");
  uint64_t base0 = 0;
  if (!arenas.by_index.empty() && !memory.readU64(arenas.by_index[0] + kArenaBase, base0))
    base0 = 0;
  const uint64_t root = findRtreeRoot(memory, *home, base0);
  if (!root)
    return createError("jemalloc's extent map (arena_emap_global) not found in the data of " +
                       home->path);
  Tcaches tcaches = readTcaches(memory, arenas, diags);

  std::vector<std::pair<uint64_t, uint64_t>> leaves = readLeaves(memory, root, diags);
  HeapWalkResult result;
  result.size_classes = true;
  ExtentPass pass(memory, root, *classes, arenas, tcaches, sink, diags, result);
  for (const auto &[index, leaf] : leaves)
    if (uint64_t missing = pass.walkLeaf(index, leaf))
      diags.warn(hexAddress(leaf), "extent map leaf for " + hexAddress(index << kRootShift) + ": " +
                                       std::to_string(missing) +
                                       " elements are not in the dump; their pages are not "
                                       "walked");
  pass.finish();
  if (pass.cached_mismatches)
    diags.warn("jemalloc tcaches", std::to_string(pass.cached_mismatches) +
                                       " cached pointers are in a region of another size class "
                                       "or one its slab marks free");
  if (pass.bitmap_mismatches > 16)
    diags.warn("jemalloc", std::to_string(pass.bitmap_mismatches) +
                               " slabs whose bitmap disagrees with their free count");
  if (pass.in_flight)
    diags.warn("jemalloc", std::to_string(pass.in_flight) +
                               " extents were being split or merged when the process stopped");

  for (const BaseBlock &b : readBaseBlocks(memory, arenas, diags))
    result.areas.push_back({"metadata", b.start, b.size, arenas.by_index[b.arena]});
  std::stable_sort(result.areas.begin(), result.areas.end(),
                   [](const HeapArea &x, const HeapArea &y) { return x.start < y.start; });

  auto fact = [&](const char *key, std::string value) {
    result.facts.emplace_back(key, std::move(value));
  };
  fact("jemalloc_layout", "5.3");
  fact("found_in", home->path + (home->statically_linked ? " (linked in statically)" : ""));
  fact("size_classes", "index2size " + hexAddress(classes->index2size_at) + ", bin_infos " +
                           hexAddress(classes->bin_infos_at));
  fact("extent_map", "rtree root " + hexAddress(root) + ", " + std::to_string(leaves.size()) +
                         (leaves.size() == 1 ? " leaf" : " leaves"));
  fact("arenas", arenas.by_index.empty() ? std::string("not found")
                                         : std::to_string(arenas.count) + " (arenas[] at " +
                                               hexAddress(arenas.array_at) + ")");
  fact("tcaches", std::to_string(tcaches.count));
  fact("tcache_cached", std::to_string(tcaches.cached));
  fact("small_state", !arenas.by_index.empty()
                          ? "slab bitmaps and thread caches read"
                          : "unknown: thread caches not found (allocated regions of up to 32 KiB "
                            "may be cached, reported unknown)");
  fact("slabs", std::to_string(pass.slabs));
  fact("large_extents", std::to_string(pass.large));
  fact("free_extents", std::to_string(pass.free_extents));
  fact("retained_extents", std::to_string(pass.retained));
  fact("regions", std::to_string(pass.regions));
  if (pass.internal)
    fact("internal_allocations", std::to_string(pass.internal));
  return result;
}

} // namespace

std::unique_ptr<HeapWalker> makeJemallocWalker() {
  return std::make_unique<JemallocWalker>();
}

} // namespace dumpsift
