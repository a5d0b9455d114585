// What the tcmalloc walker learns about a process before it walks spans: where tcmalloc's globals
// are (the size map, the central free lists, the page map's root, the thread caches), and the
// page map itself. Internal to src/heap/tcmalloc.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/support/diagnostics.h"
#include "tcmalloc_layout.h"

#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift::tcmalloc {

/// The size classes as the process's SizeMap holds them (SizeMap::Init computed them at start-up).
struct SizeClasses {
  unsigned count = 0;                           // num_size_classes; class 0 is never used
  std::array<uint32_t, kClassSizesMax> size{};  // class_to_size_: the usable size of an object
  std::array<uint32_t, kClassSizesMax> pages{}; // class_to_pages_: the length of its spans
  std::array<uint32_t, kClassSizesMax> batch{}; // num_objects_to_move_: one transfer slot's count
  std::array<uint8_t, kSizeMap.class_array_size> class_of{}; // class_array_, by classIndex

  /// What malloc(requested) makes usable (tc_nallocx(requested, 0)): the class size, or whole
  /// pages above kMaxSize.
  uint64_t usableSize(uint64_t requested) const;
};

/// Bytes of one image's writable data (its writable mappings and the anonymous .bss after them).
struct DataRange {
  uint64_t start = 0;
  uint64_t end = 0;
};

/// A SizeMap found in an image's writable data.
struct SizeMapHit {
  uint64_t address = 0; // Static::sizemap_
  std::string image;    // the image whose data holds it: the library, or the executable
  std::vector<DataRange> data;
  SizeClasses classes;
};

/// Looks in the writable data of every image for an initialized gperftools SizeMap: class sizes
/// 0, 8, 16, ... rising to exactly kMaxSize at num_size_classes - 1, spans of at least one page,
/// and a class_array_ that maps each class's size back to it. Returns the first one found (and
/// counts the others in `others`), or nullopt. Reads only the images' data; cheap.
std::optional<SizeMapHit> findSizeMap(const AddressSpace &memory, unsigned *others = nullptr);

/// Where tcmalloc's globals are, found from the size map.
struct Globals {
  SizeMapHit size_map;
  uint64_t central_cache = 0; // Static::central_cache_[0]
  uint64_t pagemap_root = 0;  // PageHeap::pagemap_.root_
  /// ThreadCache objects that start a list (prev_ is null): ThreadCache::thread_heaps_, and the
  /// caches other globals point at. Walking each along next_ reaches every live thread cache.
  std::vector<uint64_t> thread_cache_heads;
  unsigned anchor_spans = 0; // spans of the central lists that the page map root resolves
};

/// Finds the central free lists (an array of 1216-byte entries whose size_class_ is their index),
/// the page map root (the array of leaves through which the spans on the central lists map to
/// themselves) and the thread cache lists in the image that holds the size map. Fails when the
/// central lists or the root cannot be found; damage to single entries is a warning.
llvm::Expected<Globals> findGlobals(const AddressSpace &memory, SizeMapHit size_map,
                                    Diagnostics &diags);

/// One Span descriptor as read from the dump.
struct SpanRec {
  uint64_t descriptor = 0; // the Span's address
  uint64_t start = 0;      // first page number
  uint64_t length = 0;     // pages
  uint64_t objects = 0;    // free object list head, or the StackTrace of a sampled span
  uint32_t bits = 0;

  unsigned refcount() const { return bits & 0xffff; }
  unsigned sizeclass() const { return (bits >> 16) & 0xff; }
  unsigned location() const { return (bits >> 24) & 3; }
  bool sampled() const { return (bits >> 26) & 1; }
  uint64_t address() const { return start << kPageShift; }
  uint64_t bytes() const { return length << kPageShift; }
};

/// Reads the Span at `descriptor`; false when its 0x30 bytes are not captured.
bool readSpan(const AddressSpace &memory, uint64_t descriptor, SpanRec &out);

/// The page map (PageHeap::pagemap_): its root's leaves, checked once.
class PageMap {
public:
  /// Reads the root at `root` and keeps the leaves whose first entries are captured and that
  /// overlap no other leaf. A root or leaf captured only in part is read as far as it is (with a
  /// warning); the pages of a leaf that is dropped are not walked (with a warning).
  PageMap(const AddressSpace &memory, uint64_t root, Diagnostics &diags);

  struct Leaf {
    uint64_t first_page = 0; // page number of its entry 0
    uint64_t address = 0;
    const uint8_t *entries = nullptr;
    uint64_t count = 0; // entries captured from entry 0: kLeafEntries unless cut
  };
  /// Usable leaves, by first page.
  const std::vector<Leaf> &leaves() const { return leaves_; }

  /// The span that holds `page` (its descriptor checked: start <= page < start + length), or
  /// nullopt. Used for the objects of free lists; the span walk reads the leaves in order.
  std::optional<SpanRec> spanOf(uint64_t page) const;

private:
  const AddressSpace &memory_;
  std::vector<Leaf> leaves_;
};

/// Free objects that no span lists: those in the central lists' transfer slots and in the thread
/// caches.
struct CachedFree {
  std::vector<uint64_t> objects; // sorted, unique
  uint64_t in_transfer_slots = 0;
  uint64_t in_thread_caches = 0;
  unsigned thread_caches = 0;
  unsigned locked_central_lists = 0; // central lists whose lock was held at dump time
};

/// Reads every used transfer slot of every central list and every free list of every thread cache
/// reached from `globals.thread_cache_heads`. Each object must be an object of its list's class in
/// a span in use (through `map`), and a class's lists together hold at most `objects_per_class[c]`
/// objects (every object of that class the span walk saw): a list that breaks these rules, loops,
/// or is not captured is cut there with a warning. Never fails; all work is bounded.
CachedFree collectCachedFree(const AddressSpace &memory, const Globals &globals, const PageMap &map,
                             std::array<uint64_t, kClassSizesMax> objects_per_class,
                             Diagnostics &diags);

} // namespace dumpsift::tcmalloc
