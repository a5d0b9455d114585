// The tcmalloc walker: tcmalloc's globals (tcmalloc_discover.cpp), a first walk of the page map's
// spans that counts the objects of each size class, the free objects of the transfer slots and
// thread caches (tcmalloc_freelists.cpp), then a second walk of the spans that reports every
// object, large allocation and free page run in address order.
#include "tcmalloc_walker.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "tcmalloc_model.h"

#include <algorithm>

namespace dumpsift {

namespace {

using namespace tcmalloc;

/// Why the span at its first page cannot be walked, or "" when it can: a length that leaves the
/// page map, a location or class that does not exist, a class span of the wrong length, memory
/// the process did not map.
std::string spanDamage(const AddressSpace &memory, const SpanRec &s, const SizeClasses &classes) {
  if (s.length == 0 || s.length > kPageNumberLimit - s.start)
    return "length " + std::to_string(s.length) + " pages leaves the page map";
  if (s.location() > kOnReturnedFreelist)
    return "location " + std::to_string(s.location()) + " is not one tcmalloc uses";
  if (s.location() == kInUse && s.sizeclass() != 0) {
    if (s.sizeclass() >= classes.count)
      return "size class " + std::to_string(s.sizeclass()) + " is not below " +
             std::to_string(classes.count);
    if (s.length != classes.pages[s.sizeclass()])
      return std::to_string(s.length) + " pages where size class " + std::to_string(s.sizeclass()) +
             " has spans of " + std::to_string(classes.pages[s.sizeclass()]);
  }
  if (memory.classify(s.address()) == Fault::Unmapped ||
      memory.classify(s.address() + s.bytes() - 1) == Fault::Unmapped)
    return "its pages " + hexAddress(s.address()) + "-" + hexAddress(s.address() + s.bytes()) +
           " are not mapped";
  return "";
}

/// Calls on_span(span) for every span in page order: each span whose first page's page map entry
/// points at a descriptor that starts at that page (entries of other pages are stale or interior
/// and are passed over) and that spanDamage accepts (a warning for one it does not). The spans
/// never overlap: pages a span covers are skipped. Reads each leaf once.
template <typename OnSpan>
void forEachSpan(const AddressSpace &memory, const PageMap &map, const SizeClasses &classes,
                 Diagnostics &diags, OnSpan &&on_span) {
  uint64_t covered = 0; // pages below this one belong to a span already walked
  for (const PageMap::Leaf &leaf : map.leaves()) {
    for (uint64_t i = covered > leaf.first_page ? covered - leaf.first_page : 0; i < leaf.count;
         ++i) {
      const uint64_t descriptor = read64le(leaf.entries + 8 * i);
      if (descriptor == 0)
        continue;
      const uint64_t page = leaf.first_page + i;
      SpanRec s;
      if (!readSpan(memory, descriptor, s) || s.start != page)
        continue;
      if (std::string why = spanDamage(memory, s, classes); !why.empty()) {
        diags.warn(hexAddress(descriptor),
                   "span at " + hexAddress(s.address()) + " is not walked: " + why);
        continue;
      }
      on_span(s);
      covered = page + s.length;
      i = covered - 1 - leaf.first_page; // may pass the leaf's end: then the next leaf goes on
    }
  }
}

/// What the span walk found, for the facts and for bounding the free lists.
struct Census {
  uint64_t small_spans = 0, large_spans = 0, sampled_spans = 0, free_spans = 0, returned_spans = 0,
           objects = 0;
  std::array<uint64_t, kClassSizesMax> objects_per_class{};
};

/// Reports the spans of a page map walk: objects of small spans (free when their span, a transfer
/// slot or a thread cache lists them), large and sampled allocations, free page runs; and the
/// runs of adjacent spans as areas.
class SpanReporter {
public:
  SpanReporter(const AddressSpace &memory, const SizeClasses &classes, const CachedFree &cached,
               AllocationSink sink, HeapWalkResult &result, Diagnostics &diags)
      : memory_(memory), classes_(classes), cached_(cached.objects), sink_(sink), result_(result),
        diags_(diags) {}

  void report(const SpanRec &s) {
    extendArea(s);
    if (s.location() != kInUse) {
      emit(s.address(), s.bytes(), s, AllocState::Free, /*whole_pages=*/true);
    } else if (s.sizeclass() != 0) {
      reportObjects(s);
    } else if (s.sampled()) {
      const uint64_t size = sampledSize(s);
      emit(s.address(), size, s, AllocState::Used, size > kMaxSize);
    } else {
      emit(s.address(), s.bytes(), s, AllocState::Used, /*whole_pages=*/true);
    }
  }

  /// Objects both a span and a cache list hold (a double free, or a list caught mid-update).
  uint64_t doublyFree() const { return doubly_free_; }

private:
  void emit(uint64_t address, uint64_t size, const SpanRec &s, AllocState state, bool whole_pages) {
    a_.address = a_.chunk_address = address;
    a_.size = size;
    a_.chunk_size = s.sizeclass() ? size : s.bytes();
    a_.arena = s.address();
    a_.state = state;
    a_.whole_pages = whole_pages;
    sink_(0, a_); // one thread: lane 0
    result_.stats.add(a_);
  }

  /// The usable size of a sampled allocation: tc_nallocx of the size its StackTrace recorded.
  uint64_t sampledSize(const SpanRec &s) {
    uint64_t requested = 0;
    if (memory_.readU64(s.objects, requested) && requested != 0 &&
        classes_.usableSize(requested) <= s.bytes())
      return classes_.usableSize(requested);
    diags_.warn(hexAddress(s.descriptor), "sampled span at " + hexAddress(s.address()) +
                                              " has no readable stack trace; its whole " +
                                              std::to_string(s.bytes()) + " bytes are reported");
    return s.bytes();
  }

  /// Every object of a small span, in address order.
  void reportObjects(const SpanRec &s) {
    const uint64_t size = classes_.size[s.sizeclass()];
    const uint64_t count = s.bytes() / size;
    const uint64_t base = s.address();
    const uint8_t *bytes = memory_.tryView(base, s.bytes());
    if (!bytes) {
      diags_.warn(hexAddress(base), "span of " + std::to_string(count) + " " +
                                        std::to_string(size) +
                                        "-byte objects is not captured; its objects are not "
                                        "reported");
      return;
    }
    // The span's own free list, as a bitmap of object indexes.
    free_bits_.assign((count + 63) / 64, 0);
    uint64_t on_list = 0;
    for (uint64_t object = s.objects; object != 0;) {
      const uint64_t offset = object - base;
      if (object < base || offset >= count * size || offset % size != 0 ||
          (free_bits_[offset / size / 64] >> (offset / size % 64)) & 1) {
        diags_.warn(hexAddress(s.descriptor), "free list of the span at " + hexAddress(base) +
                                                  " is cut at " + hexAddress(object) +
                                                  ": not an object of the span, or seen twice");
        break;
      }
      free_bits_[offset / size / 64] |= uint64_t(1) << (offset / size % 64);
      ++on_list;
      object = read64le(bytes + offset);
    }
    if (count - on_list != s.refcount())
      diags_.warn(hexAddress(s.descriptor),
                  "span at " + hexAddress(base) + " counts " + std::to_string(s.refcount()) +
                      " objects handed out, but " + std::to_string(on_list) + " of its " +
                      std::to_string(count) + " are on its free list");

    auto cached = std::lower_bound(cached_.begin(), cached_.end(), base);
    for (uint64_t k = 0; k < count; ++k) {
      const uint64_t address = base + k * size;
      bool free = (free_bits_[k / 64] >> (k % 64)) & 1;
      if (cached != cached_.end() && *cached == address) {
        doubly_free_ += free;
        free = true;
        ++cached;
      }
      emit(address, size, s, free ? AllocState::Free : AllocState::Used, false);
    }
  }

  /// Adjacent spans make one "page-heap" area.
  void extendArea(const SpanRec &s) {
    if (!result_.areas.empty() && result_.areas.back().kind == "page-heap" &&
        result_.areas.back().start + result_.areas.back().size == s.address()) {
      result_.areas.back().size += s.bytes();
      return;
    }
    result_.areas.push_back({"page-heap", s.address(), s.bytes(), 0});
  }

  const AddressSpace &memory_;
  const SizeClasses &classes_;
  const std::vector<uint64_t> &cached_;
  AllocationSink sink_;
  HeapWalkResult &result_;
  Diagnostics &diags_;
  Allocation a_; // reused: no per-object construction
  std::vector<uint64_t> free_bits_;
  uint64_t doubly_free_ = 0;
};

class TcmallocWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "tcmalloc"; }

  /// Linux processes of 64-bit little-endian words that map a libtcmalloc or hold tcmalloc in
  /// an image; sizes are size classes, or whole pages (Allocation::whole_pages).
  const WalkerTraits &traits() const override {
    static const WalkerTraits traits{
        .platforms = Platforms::littleEndian64({Os::Linux}),
        .modules = {std::begin(kTcmallocNames), std::end(kTcmallocNames)},
        .requests = nullptr,
        .thresholds = {}};
    return traits;
  }

  /// True when the process maps a libtcmalloc library, or when an image's data holds an
  /// initialized tcmalloc size map (tcmalloc linked in statically).
  bool detect(const AddressSpace &memory) const override {
    return memory.snapshot().findModule(traits().modules) || findSizeMap(memory).has_value();
  }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions & /*one thread*/) const override;
};

llvm::Expected<HeapWalkResult> TcmallocWalker::walk(const AddressSpace &memory, AllocationSink sink,
                                                    Diagnostics &diags,
                                                    const WalkOptions & /*one thread*/) const {
  const Snapshot &snap = memory.snapshot();
  if (std::optional<llvm::StringRef> debug = snap.findModule([](llvm::StringRef name) {
        return namesModule(kTcmallocNames, name) && name.contains("_debug");
      }))
    return createError(*debug + " is tcmalloc's debug allocator, whose blocks carry headers and "
                                "guards this walker does not read");

  unsigned others = 0;
  std::optional<SizeMapHit> size_map = findSizeMap(memory, &others);
  if (!size_map)
    return createError("no initialized tcmalloc size map in any image's data (gperftools 2.10 "
                       "layout, 8 KiB pages)");
  if (others)
    diags.warn(hexAddress(size_map->address),
               std::to_string(others) +
                   " more tcmalloc size maps in the images' data (several "
                   "tcmallocs in one process?); only the one in " +
                   size_map->image + " is walked");
  llvm::Expected<Globals> found = findGlobals(memory, std::move(*size_map), diags);
  if (!found)
    return found.takeError();
  const Globals &globals = *found;
  const SizeClasses &classes = globals.size_map.classes;

  PageMap map(memory, globals.pagemap_root, diags);
  Census census;
  forEachSpan(memory, map, classes, diags, [&](const SpanRec &s) {
    if (s.location() == kOnNormalFreelist)
      ++census.free_spans;
    else if (s.location() == kOnReturnedFreelist)
      ++census.returned_spans;
    else if (s.sizeclass() != 0) {
      ++census.small_spans;
      census.objects_per_class[s.sizeclass()] += s.bytes() / classes.size[s.sizeclass()];
    } else if (s.sampled())
      ++census.sampled_spans;
    else
      ++census.large_spans;
  });
  for (uint64_t n : census.objects_per_class)
    census.objects += n;
  CachedFree cached = collectCachedFree(memory, globals, map, census.objects_per_class, diags);

  HeapWalkResult result;
  result.size_classes = true;
  SpanReporter reporter(memory, classes, cached, sink, result, diags);
  forEachSpan(memory, map, classes, diags, [&](const SpanRec &s) { reporter.report(s); });
  if (reporter.doublyFree())
    diags.warn(hexAddress(globals.central_cache),
               std::to_string(reporter.doublyFree()) +
                   " objects are both on their span's free list and in a transfer slot or "
                   "thread cache");
  for (const PageMap::Leaf &leaf : map.leaves())
    result.areas.push_back({"pagemap-leaf", leaf.address, 8 * leaf.count, 0});
  std::sort(result.areas.begin(), result.areas.end(),
            [](const HeapArea &x, const HeapArea &y) { return x.start < y.start; });

  auto fact = [&](const char *key, std::string value) {
    result.facts.emplace_back(key, std::move(value));
  };
  auto count = [&](const char *key, uint64_t n) { fact(key, std::to_string(n)); };
  fact("layout", "gperftools 2.10 (8 KiB pages)");
  fact("globals_in", globals.size_map.image);
  fact("size_map", hexAddress(globals.size_map.address));
  fact("central_cache", hexAddress(globals.central_cache));
  fact("pagemap_root", hexAddress(globals.pagemap_root));
  count("size_classes", classes.count);
  count("pagemap_leaves", map.leaves().size());
  count("small_spans", census.small_spans);
  count("large_spans", census.large_spans);
  count("sampled_spans", census.sampled_spans);
  count("free_spans", census.free_spans);
  count("returned_spans", census.returned_spans);
  count("objects", census.objects);
  count("thread_caches", cached.thread_caches);
  count("free_in_thread_caches", cached.in_thread_caches);
  count("free_in_transfer_slots", cached.in_transfer_slots);
  return result;
}

} // namespace

std::unique_ptr<HeapWalker> makeTcmallocWalker() {
  return std::make_unique<TcmallocWalker>();
}

} // namespace dumpsift
