// The mimalloc walker: segments found by their headers (mimalloc_segments.cpp) and agreeing on
// one cookie, then every page in use of each, its blocks reported in address order with the state
// its free lists give them.
#include "mimalloc_walker.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "mimalloc_model.h"

#include <algorithm>

namespace dumpsift {

namespace {

using namespace mimalloc;

/// The file name of the mimalloc library the process maps ("libmimalloc.so.2.0"), or "".
std::string mappedLibrary(const Snapshot &snap) {
  std::optional<llvm::StringRef> library = snap.findModule(kMimallocNames);
  return library ? fileName(*library).str() : "";
}

/// Why a library file name suggests a layout other than 2.0.9's release build, or "".
std::string libraryMismatch(llvm::StringRef name) {
  if (name.contains("-debug") || name.contains("-secure"))
    return "is a debug or secure build (padded blocks or encoded free lists)";
  llvm::StringRef version = name.split(".so").second;
  if (version.empty() || version == ".2" || version.startswith(".2.0"))
    return "";
  return "states version " + version.drop_front().str() + ", not the 2.0.x this walker knows";
}

/// The segment key (cookie ^ address) most segments share; of keys shared by as many, the one of
/// the lowest segment. `segments` is sorted by address and not empty.
uint64_t majorityKey(const std::vector<Segment> &segments) {
  std::vector<uint64_t> keys;
  keys.reserve(segments.size());
  for (const Segment &s : segments)
    keys.push_back(s.key);
  std::sort(keys.begin(), keys.end());
  auto count = [&](uint64_t key) {
    auto [lo, hi] = std::equal_range(keys.begin(), keys.end(), key);
    return hi - lo;
  };
  uint64_t best = segments.front().key;
  for (const Segment &s : segments)
    if (count(s.key) > count(best))
      best = s.key;
  return best;
}

/// _mi_os_good_alloc_size (os.c): the size mimalloc asks the OS for, rounded up by size range.
uint64_t goodAllocSize(uint64_t size) {
  const uint64_t align = size < (512u << 10)  ? 4096
                         : size < (2u << 20)  ? (64u << 10)
                         : size < (8u << 20)  ? (256u << 10)
                         : size < (32u << 20) ? (1u << 20)
                                              : (4u << 20);
  return (size + align - 1) & ~(align - 1);
}

/// The end of the mapping that holds `segment`: a huge segment's mapping is its size rounded up by
/// goodAllocSize (the tail past its slices belongs to it too), clipped to the region holding it.
uint64_t mappingEnd(const AddressSpace &memory, const Segment &segment) {
  if (segment.kind != kKindHuge)
    return segment.end();
  uint64_t end = segment.address + goodAllocSize(segment.end() - segment.address);
  if (const Region *r = memory.regionContaining(segment.address))
    end = std::min(end, std::max(r->end(), segment.end()));
  return end;
}

const char *listEndReason(ListEnd end) {
  switch (end) {
  case ListEnd::Foreign:
    return "is not a block of this page";
  case ListEnd::Repeat:
    return "is on a list already (a loop)";
  case ListEnd::NotCaptured:
    return "holds a link that is not captured";
  case ListEnd::Complete:
    break;
  }
  return "";
}

class MimallocWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "mimalloc"; }

  /// Processes of any operating system, 64-bit little-endian, linked with libmimalloc or with
  /// mimalloc inside; sizes are size classes, which say nothing of the request.
  const WalkerTraits &traits() const override {
    static const WalkerTraits traits{
        .platforms = Platforms::littleEndian64(),
        .modules = {std::begin(kMimallocNames), std::end(kMimallocNames)},
        .requests = nullptr,
        .thresholds = {}};
    return traits;
  }

  /// True when the process holds at least one mimalloc segment header in its captured anonymous
  /// memory.
  bool detect(const AddressSpace &memory) const override { return !findSegments(memory).empty(); }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions & /*one thread*/) const override;
};

/// Reports the blocks of pages: the state of each from its page's free, local-free and
/// thread-free lists and the heaps' delayed-free lists.
class PageReporter {
public:
  PageReporter(const AddressSpace &memory, const std::vector<uint64_t> &delayed,
               AllocationSink sink, HeapWalkResult &result, Diagnostics &diags)
      : memory_(memory), delayed_(delayed), sink_(sink), result_(result), diags_(diags) {}

  /// Reports every block of `page` ([0, capacity)) of a segment that is huge or not.
  void report(const Page &page, bool huge) {
    ++pages;
    aligned_pages += (page.flags & kHasAligned) != 0;
    if (page.capacity == 0)
      return;
    free_bits_.assign((page.capacity + 63) / 64, 0);
    const uint8_t *blocks = memory_.tryView(page.start, page.blocksEnd() - page.start);
    bool certain = true;
    uint32_t free_or_local = 0;
    const std::pair<const char *, uint64_t> lists[] = {
        {"free", page.free}, {"local-free", page.local_free}, {"thread-free", page.thread_free}};
    for (const auto &[list, head] : lists) {
      uint32_t marked = 0;
      uint64_t stop = 0;
      const ListEnd end = markList(memory_, page, blocks, head, free_bits_, marked, stop);
      if (list != lists[2].first)
        free_or_local += marked;
      if (end != ListEnd::Complete) {
        certain = false;
        diags_.warn(hexAddress(page.descriptor),
                    std::string(list) + " list: " + hexAddress(stop) + " " + listEndReason(end) +
                        "; the list is cut there and the page's other blocks are reported unknown");
      }
    }
    for (auto it = std::lower_bound(delayed_.begin(), delayed_.end(), page.start);
         it != delayed_.end() && *it < page.blocksEnd(); ++it) {
      const int64_t k = page.blockIndex(*it);
      if (k < 0)
        continue;
      uint64_t &word = free_bits_[static_cast<uint64_t>(k) >> 6];
      word |= 1ull << (k & 63);
      ++delayed_frees;
    }
    // `used` counts the blocks on neither `free` nor `local_free` (mimalloc-types.h).
    if (certain && uint64_t(page.capacity) - free_or_local != page.used) {
      certain = false;
      diags_.warn(hexAddress(page.descriptor),
                  "page's used count " + std::to_string(page.used) + " disagrees with its lists (" +
                      std::to_string(page.capacity - free_or_local) + " of " +
                      std::to_string(page.capacity) +
                      " blocks off the free lists); its other blocks are reported unknown");
    }
    Allocation a;
    a.arena = page.heap;
    a.mmapped = huge; // a huge segment is one mapping for one block
    a.size = a.chunk_size = page.block_size;
    const AllocState not_free = certain ? AllocState::Used : AllocState::Unknown;
    uint64_t address = page.start;
    for (uint32_t k = 0; k < page.capacity; ++k, address += page.block_size) {
      a.address = a.chunk_address = address;
      a.state = (free_bits_[k >> 6] >> (k & 63)) & 1 ? AllocState::Free : not_free;
      sink_(0, a); // one thread: lane 0
      result_.stats.add(a);
    }
    blocks_ += page.capacity;
  }

  uint64_t pages = 0, aligned_pages = 0, delayed_frees = 0;
  uint64_t blocks() const { return blocks_; }

private:
  const AddressSpace &memory_;
  const std::vector<uint64_t> &delayed_;
  AllocationSink sink_;
  HeapWalkResult &result_;
  Diagnostics &diags_;
  std::vector<uint64_t> free_bits_; // one bit per block of the page being reported: free
  uint64_t blocks_ = 0;
};

llvm::Expected<HeapWalkResult> MimallocWalker::walk(const AddressSpace &memory, AllocationSink sink,
                                                    Diagnostics &diags,
                                                    const WalkOptions & /*one thread*/) const {
  std::vector<Segment> found = findSegments(memory);
  if (found.empty())
    return createError("no mimalloc segment header in captured anonymous memory");
  const std::string library = mappedLibrary(memory.snapshot());
  if (std::string why = libraryMismatch(library); !why.empty())
    diags.warn("mimalloc", library + " " + why +
                               "; this walker knows mimalloc 2.0.9's release "
                               "layout: expect misreadings");

  // Every segment's cookie is its address XORed with _mi_heap_main's cookie: the segments of one
  // mimalloc agree on that key.
  const uint64_t key = majorityKey(found);
  std::vector<Segment> segments;
  for (const Segment &s : found) {
    if (s.key == key)
      segments.push_back(s);
    else
      diags.warn(hexAddress(s.address),
                 "segment header whose cookie disagrees with the other segments' (damage, or a "
                 "second mimalloc in the process); not walked");
  }
  const size_t foreign = found.size() - segments.size();
  found.clear();

  // Pass 1, over the descriptors only: the heaps that own pages, and a bound for list walks.
  std::vector<uint64_t> heaps;
  uint64_t capacity_total = 0;
  for (const Segment &s : segments)
    forEachPage(
        s,
        [&](const Page &p) {
          capacity_total += p.capacity;
          if (p.heap && (heaps.empty() || heaps.back() != p.heap))
            heaps.push_back(p.heap);
        },
        nullptr);
  std::sort(heaps.begin(), heaps.end());
  heaps.erase(std::unique(heaps.begin(), heaps.end()), heaps.end());
  const std::vector<uint64_t> delayed =
      delayedFrees(memory, segments, heaps, capacity_total, diags);
  uint64_t main_heap = 0;
  for (uint64_t heap : heaps) {
    uint64_t cookie = 0;
    if (memory.readU64(heap + kHeap.cookie, cookie) && cookie == key) {
      main_heap = heap;
      break;
    }
  }

  // Pass 2: report, segment by segment, in address order.
  HeapWalkResult result;
  result.size_classes = true;
  PageReporter reporter(memory, delayed, sink, result, diags);
  uint64_t huge = 0, abandoned = 0, unused = 0, cut = 0;
  for (const Segment &s : segments) {
    const bool is_huge = s.kind == kKindHuge;
    huge += is_huge;
    abandoned += s.thread_id == 0 && s.used > 0;
    unused += s.used == 0;
    result.areas.push_back(
        {is_huge ? "huge-segment" : "segment", s.address, mappingEnd(memory, s) - s.address, 0});
    const uint64_t pages_before = reporter.pages;
    PageWalkEnd end = forEachPage(
        s, [&](const Page &p) { reporter.report(p, is_huge); }, &diags);
    if (!end.why.empty()) {
      ++cut;
      diags.warn(hexAddress(end.where), end.why + " (segment at " + hexAddress(s.address) +
                                            "; the rest of this segment is not walked)");
    } else if (reporter.pages - pages_before != s.used) {
      diags.warn(hexAddress(s.address), "segment header counts " + std::to_string(s.used) +
                                            " pages in use, its slices " +
                                            std::to_string(reporter.pages - pages_before));
    }
  }

  auto fact = [&](const char *name, std::string value) {
    result.facts.emplace_back(name, std::move(value));
  };
  fact("mimalloc_layout", "2.0.9 release build, 32 MiB segments of 64 KiB slices");
  fact("library", library.empty() ? "none mapped (linked in statically?)" : library);
  fact("segments", std::to_string(segments.size()));
  fact("huge_segments", std::to_string(huge));
  fact("abandoned_segments", std::to_string(abandoned));
  fact("unused_segments", std::to_string(unused));
  fact("heaps", std::to_string(heaps.size()));
  fact("main_heap", main_heap ? hexAddress(main_heap) : "not found");
  fact("pages", std::to_string(reporter.pages));
  fact("aligned_pages", std::to_string(reporter.aligned_pages));
  fact("blocks", std::to_string(reporter.blocks()));
  fact("delayed_frees", std::to_string(reporter.delayed_frees));
  if (foreign)
    fact("segments_not_walked", std::to_string(foreign));
  if (cut)
    fact("segments_cut_short", std::to_string(cut));
  return result;
}

} // namespace

std::unique_ptr<HeapWalker> makeMimallocWalker() {
  return std::make_unique<MimallocWalker>();
}

} // namespace dumpsift
