// Finding tcmalloc's globals in a dump without debug symbols.
//
// All of them are static members of tcmalloc::Static and ThreadCache, so they lie in the writable
// data of the image that holds tcmalloc: libtcmalloc*.so, or the executable (or any other image)
// when tcmalloc is linked in statically. The order: (1) the SizeMap, by the class sizes it holds;
// (2) the central free lists, an array whose entries carry their own index; (3) the spans on those
// lists, which the page map maps to themselves: the root is the array through which they do;
// (4) the thread caches, whose 86 free lists each carry their class's object size.
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "tcmalloc_model.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace dumpsift::tcmalloc {

namespace {

/// Spans taken from the central lists to find and check the page map root.
constexpr unsigned kMaxAnchorSpans = 32;

/// The writable data of every ELF image, by path: each writable image region and the anonymous
/// writable region right after it (the rest of that image's .bss). Files mapped for their data
/// (the module's first bytes are captured and are not an ELF header) are left out.
std::map<std::string, std::vector<DataRange>> imageData(const AddressSpace &memory) {
  const Snapshot &snapshot = memory.snapshot();
  std::set<std::string> not_elf;
  for (const Module &m : snapshot.modules)
    if (const uint8_t *p = memory.tryView(m.start, 4); p && std::memcmp(p,
                                                                        "\x7f"
                                                                        "ELF",
                                                                        4) != 0)
      not_elf.insert(m.path);
  std::map<std::string, std::vector<DataRange>> out;
  const std::vector<Region> &regions = snapshot.regions;
  for (size_t i = 0; i < regions.size(); ++i) {
    const Region &r = regions[i];
    if (r.cls != RegionClass::Image || !r.perms.write || not_elf.count(r.backing_file))
      continue;
    std::vector<DataRange> &data = out[r.backing_file];
    data.push_back({r.start, r.end()});
    if (i + 1 < regions.size()) {
      const Region &next = regions[i + 1];
      if (next.start == r.end() && next.backing_file.empty() && next.perms.write)
        data.push_back({next.start, next.end()});
    }
  }
  return out;
}

/// Calls fn(address, bytes, size) for each captured piece of `data`.
template <typename Fn>
void forEachCaptured(const AddressSpace &memory, const std::vector<DataRange> &data, Fn &&fn) {
  for (const DataRange &d : data)
    for (const MemoryRange &m : memory.snapshot().memory) {
      uint64_t lo = std::max(m.start, d.start), hi = std::min(m.end(), d.end);
      if (lo < hi)
        fn(lo, m.bytes.data() + (lo - m.start), hi - lo);
    }
}

/// Calls fn(address, value) for each captured, 8-aligned, non-zero word of `data` whose value is
/// 8-aligned (a pointer candidate).
template <typename Fn>
void forEachPointerWord(const AddressSpace &memory, const std::vector<DataRange> &data, Fn &&fn) {
  forEachCaptured(memory, data, [&](uint64_t addr, const uint8_t *bytes, uint64_t size) {
    for (uint64_t off = (8 - (addr & 7)) & 7; off + 8 <= size; off += 8) {
      uint64_t v = read64le(bytes + off);
      if (v != 0 && (v & 7) == 0)
        fn(addr + off, v);
    }
  });
}

/// Reads and checks a SizeMap at `base`; false when it is not one. See findSizeMap.
bool readSizeMap(const AddressSpace &memory, uint64_t base, SizeClasses &out) {
  const uint8_t *p = memory.tryView(base, kSizeMap.size);
  if (!p)
    return false;
  const uint64_t n = read64le(p + kSizeMap.num_size_classes);
  if (n < 8 || n > kClassSizesMax)
    return false;
  SizeClasses c;
  c.count = static_cast<unsigned>(n);
  for (unsigned i = 0; i < kClassSizesMax; ++i) {
    c.size[i] = read32le(p + kSizeMap.class_to_size + 4 * i);
    uint64_t pages = read64le(p + kSizeMap.class_to_pages + 8 * i);
    c.batch[i] = read32le(p + kSizeMap.num_objects_to_move + 4 * i);
    if (i == 0 || i >= n) {
      if (c.size[i] != 0)
        return false;
      continue;
    }
    if (c.size[i] <= c.size[i - 1] || c.size[i] % 8 != 0 || pages == 0 || pages > 1024 ||
        c.batch[i] == 0 || c.batch[i] > kMaxBatch)
      return false;
    c.pages[i] = static_cast<uint32_t>(pages);
  }
  if (c.size[n - 1] != kMaxSize)
    return false;
  std::memcpy(c.class_of.data(), p + kSizeMap.class_array, c.class_of.size());
  // Every entry names a class that exists: usableSize indexes `size` with it.
  if (std::any_of(c.class_of.begin(), c.class_of.end(), [&](uint8_t k) { return k >= n; }))
    return false;
  for (unsigned i = 1; i < n; ++i)
    if (c.class_of[classIndex(c.size[i])] != i)
      return false;
  out = c;
  return true;
}

/// Reads and checks the central free lists at `base`: entry k's size_class_ is k for every class,
/// its used_slots_ at most 64 and its two span lists initialized (non-null, aligned links).
bool isCentralCache(const AddressSpace &memory, uint64_t base, unsigned classes) {
  const uint8_t *p = memory.tryView(base, kCentral.stride * classes);
  if (!p)
    return false;
  for (unsigned k = 0; k < classes; ++k) {
    const uint8_t *e = p + kCentral.stride * k;
    if (read64le(e + kCentral.size_class) != k)
      return false;
    uint32_t used = read32le(e + kCentral.used_slots);
    if (used > kCentral.max_slots)
      return false;
    for (uint64_t list : {kCentral.empty, kCentral.nonempty})
      for (uint64_t link : {kSpan.next, kSpan.prev}) {
        uint64_t v = read64le(e + list + link);
        if (v == 0 || (v & 7) != 0)
          return false;
      }
  }
  return true;
}

/// True when `addr` holds a ThreadCache: each of its free lists up to `classes` carries that
/// class's object size (ThreadCache::Init).
bool isThreadCache(const AddressSpace &memory, uint64_t addr, const SizeClasses &classes) {
  const uint8_t *p = memory.tryView(addr, kThreadCache.size);
  if (!p)
    return false;
  for (unsigned c = 0; c < classes.count; ++c)
    if (read32le(p + kThreadCache.lists + kThreadCache.list_stride * c +
                 kThreadCache.list_object_size) != classes.size[c])
      return false;
  return true;
}

/// A span on a central list: the first of each class's empty_ and nonempty_ lists, when it is a
/// span of that class in use.
std::vector<SpanRec> anchorSpans(const AddressSpace &memory, uint64_t central,
                                 const SizeClasses &classes) {
  std::vector<SpanRec> anchors;
  for (unsigned c = 1; c < classes.count && anchors.size() < kMaxAnchorSpans; ++c)
    for (uint64_t list : {kCentral.nonempty, kCentral.empty}) {
      uint64_t sentinel = central + kCentral.stride * c + list;
      uint64_t first = 0;
      SpanRec s;
      if (!memory.readU64(sentinel + kSpan.next, first) || first == sentinel ||
          !readSpan(memory, first, s))
        continue;
      if (s.sizeclass() == c && s.location() == kInUse && s.length == classes.pages[c] &&
          s.start != 0 && s.start < kPageNumberLimit)
        anchors.push_back(s);
    }
  return anchors;
}

/// How many of `anchors` the root at `root` maps to themselves.
unsigned resolvedAnchors(const AddressSpace &memory, uint64_t root,
                         const std::vector<SpanRec> &anchors) {
  unsigned resolved = 0;
  for (const SpanRec &s : anchors) {
    uint64_t leaf = 0, entry = 0;
    if (memory.readU64(root + 8 * (s.start >> kLeafBits), leaf) &&
        memory.readU64(leaf + 8 * (s.start & (kLeafEntries - 1)), entry) && entry == s.descriptor)
      ++resolved;
  }
  return resolved;
}

} // namespace

uint64_t SizeClasses::usableSize(uint64_t requested) const {
  if (requested > kMaxSize)
    return ((requested + kPageSize - 1) >> kPageShift) << kPageShift;
  return size[class_of[classIndex(requested)]];
}

bool readSpan(const AddressSpace &memory, uint64_t descriptor, SpanRec &out) {
  const uint8_t *p = memory.tryView(descriptor, kSpan.size);
  if (!p)
    return false;
  out.descriptor = descriptor;
  out.start = read64le(p + kSpan.start);
  out.length = read64le(p + kSpan.length);
  out.objects = read64le(p + kSpan.objects);
  out.bits = read32le(p + kSpan.bits);
  return true;
}

std::optional<SizeMapHit> findSizeMap(const AddressSpace &memory, unsigned *others) {
  // class_to_size_ begins 0, 8, 16 as little-endian i32 in every build of 2.x: found from its
  // 8, which memchr finds fast in a .bss of zeros (and in the 0x80 bytes of the page map cache).
  std::optional<SizeMapHit> found;
  unsigned extra = 0;
  for (const auto &entry : imageData(memory)) {
    const std::string &image = entry.first; // no structured binding: clang 14 cannot capture one
    const std::vector<DataRange> &data = entry.second;
    forEachCaptured(memory, data, [&](uint64_t addr, const uint8_t *bytes, uint64_t size) {
      const uint8_t *end = bytes + size;
      for (const uint8_t *at = bytes + std::min<uint64_t>(size, 4); at + 8 <= end; ++at) {
        at =
            static_cast<const uint8_t *>(std::memchr(at, 8, static_cast<size_t>(end - 8 - at) + 1));
        if (!at)
          break;
        const uint64_t where = addr + static_cast<uint64_t>(at - bytes) - 4; // class_to_size_[0]
        SizeClasses classes;
        if (where % 4 != 0 || read32le(at - 4) != 0 || read32le(at) != 8 ||
            read32le(at + 4) != 16 || where < kSizeMap.class_to_size ||
            !readSizeMap(memory, where - kSizeMap.class_to_size, classes))
          continue;
        if (found)
          ++extra;
        else
          found = SizeMapHit{where - kSizeMap.class_to_size, image, data, classes};
      }
    });
  }
  if (others)
    *others = extra;
  return found;
}

llvm::Expected<Globals> findGlobals(const AddressSpace &memory, SizeMapHit size_map,
                                    Diagnostics &diags) {
  Globals g;
  g.size_map = std::move(size_map);
  const SizeClasses &classes = g.size_map.classes;
  const std::vector<DataRange> &data = g.size_map.data;

  // (2) Static::central_cache_: entries 1, 2 and 3 carry size_class_ 1, 2, 3, 1216 bytes apart.
  forEachCaptured(memory, data, [&](uint64_t addr, const uint8_t *bytes, uint64_t size) {
    for (uint64_t off = (8 - (addr & 7)) & 7; off + 8 <= size && !g.central_cache; off += 8) {
      if (read64le(bytes + off) != 1)
        continue;
      uint64_t entry1 = addr + off - kCentral.size_class;
      uint64_t two = 0, three = 0;
      if (memory.readU64(entry1 + kCentral.stride + kCentral.size_class, two) && two == 2 &&
          memory.readU64(entry1 + 2 * kCentral.stride + kCentral.size_class, three) && three == 3 &&
          isCentralCache(memory, entry1 - kCentral.stride, classes.count))
        g.central_cache = entry1 - kCentral.stride;
    }
  });
  if (!g.central_cache)
    return createError("tcmalloc's central free lists (an array of " + llvm::Twine(classes.count) +
                       " entries whose size_class_ is their index) are not in " + g.size_map.image +
                       "'s data");

  // (3) PageHeap::pagemap_.root_: through it, each span on a central list maps to itself.
  std::vector<SpanRec> anchors = anchorSpans(memory, g.central_cache, classes);
  if (anchors.empty())
    return createError("no span on any of tcmalloc's central free lists, so the page map cannot "
                       "be located (no small object in use?)");
  const SpanRec &first = anchors.front();
  const uint64_t root_offset = 8 * (first.start >> kLeafBits);
  const uint64_t leaf_offset = 8 * (first.start & (kLeafEntries - 1));
  llvm::DenseSet<uint64_t> tried;
  unsigned best = 0;
  forEachPointerWord(memory, data, [&](uint64_t addr, uint64_t leaf) {
    uint64_t entry = 0;
    if (addr < root_offset || !memory.readU64(leaf + leaf_offset, entry) ||
        entry != first.descriptor)
      return;
    uint64_t root = addr - root_offset;
    if (!tried.insert(root).second)
      return;
    unsigned resolved = resolvedAnchors(memory, root, anchors);
    if (resolved > best) {
      best = resolved;
      g.pagemap_root = root;
    }
  });
  if (!g.pagemap_root)
    return createError("tcmalloc's page map root is not in " + g.size_map.image +
                       "'s data (no captured array of leaves maps the span at " +
                       hexAddress(first.descriptor) + " to itself)");
  g.anchor_spans = best;
  if (best < anchors.size())
    diags.warn(hexAddress(g.pagemap_root), "page map root maps only " + std::to_string(best) +
                                               " of " + std::to_string(anchors.size()) +
                                               " spans of the central lists to themselves");

  // (4) ThreadCache::thread_heaps_ (and any other global that points at a list head).
  llvm::DenseSet<uint64_t> checked; // each pointed-at address is checked once
  forEachPointerWord(memory, data, [&](uint64_t, uint64_t cache) {
    uint64_t prev = 1;
    if (!checked.insert(cache).second || !isThreadCache(memory, cache, classes) ||
        !memory.readU64(cache + kThreadCache.prev, prev) || prev != 0)
      return;
    g.thread_cache_heads.push_back(cache);
  });
  std::sort(g.thread_cache_heads.begin(), g.thread_cache_heads.end());
  return g;
}

PageMap::PageMap(const AddressSpace &memory, uint64_t root, Diagnostics &diags) : memory_(memory) {
  const uint64_t root_entries = std::min(memory.capturedRunFrom(root) / 8, kRootEntries);
  const uint8_t *entries = root_entries ? memory.tryView(root, 8 * root_entries) : nullptr;
  if (root_entries < kRootEntries)
    diags.warn(hexAddress(root),
               "page map root is captured for its first " + std::to_string(root_entries) + " of " +
                   std::to_string(kRootEntries) + " leaves only; pages from " +
                   hexAddress((root_entries << kLeafBits) << kPageShift) + " are not walked");
  for (uint64_t i = 0; i < root_entries; ++i) {
    const uint64_t leaf = read64le(entries + 8 * i);
    if (leaf == 0)
      continue;
    const uint64_t first_page = i << kLeafBits;
    const uint64_t count =
        (leaf & 7) ? 0 : std::min(memory.capturedRunFrom(leaf) / 8, kLeafEntries);
    if (count < kLeafEntries)
      diags.warn(hexAddress(leaf),
                 "page map leaf for the pages from " + hexAddress(first_page << kPageShift) +
                     " is captured for " + std::to_string(count) + " of its " +
                     std::to_string(kLeafEntries) + " pages only; the rest are not walked");
    if (count)
      leaves_.push_back({first_page, leaf, memory.tryView(leaf, 8 * count), count});
  }
  // Leaves never share memory; one that does is damage, and reading it would repeat work.
  std::vector<size_t> by_address(leaves_.size());
  for (size_t i = 0; i < by_address.size(); ++i)
    by_address[i] = i;
  std::sort(by_address.begin(), by_address.end(), [&](size_t a, size_t b) {
    return std::tie(leaves_[a].address, leaves_[a].first_page) <
           std::tie(leaves_[b].address, leaves_[b].first_page);
  });
  std::vector<bool> drop(leaves_.size(), false);
  uint64_t end = 0; // the end of the highest leaf kept so far
  for (size_t i : by_address) {
    const Leaf &leaf = leaves_[i];
    if (leaf.address < end) {
      drop[i] = true;
      diags.warn(hexAddress(leaf.address), "page map leaf for the pages from " +
                                               hexAddress(leaf.first_page << kPageShift) +
                                               " overlaps another leaf; its pages are not walked");
      continue;
    }
    end = leaf.address + 8 * leaf.count;
  }
  size_t kept = 0;
  for (size_t i = 0; i < leaves_.size(); ++i)
    if (!drop[i])
      leaves_[kept++] = leaves_[i];
  leaves_.resize(kept);
}

std::optional<SpanRec> PageMap::spanOf(uint64_t page) const {
  auto it = std::lower_bound(leaves_.begin(), leaves_.end(), page & ~(kLeafEntries - 1),
                             [](const Leaf &l, uint64_t first) { return l.first_page < first; });
  if (it == leaves_.end() || it->first_page != (page & ~(kLeafEntries - 1)))
    return std::nullopt;
  const uint64_t index = page & (kLeafEntries - 1);
  if (index >= it->count)
    return std::nullopt;
  const uint64_t descriptor = read64le(it->entries + 8 * index);
  SpanRec s;
  if (descriptor == 0 || !readSpan(memory_, descriptor, s) || s.start > page ||
      page - s.start >= s.length)
    return std::nullopt;
  return s;
}

} // namespace dumpsift::tcmalloc
