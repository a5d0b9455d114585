// The free objects tcmalloc keeps outside its spans' own lists: batches in the central lists'
// transfer slots and the per-thread caches. Both are singly linked through each object's first
// word (linked_list.h).
#include "dumpsift/support/bytes.h"
#include "dumpsift/support/hex.h"
#include "tcmalloc_model.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>

namespace dumpsift::tcmalloc {

namespace {

/// Most thread caches followed: one per thread, so far more than any process has.
constexpr unsigned kMaxThreadCaches = 1u << 16;

/// Follows free-object chains of one size class, checking each object against the page map.
class ChainReader {
public:
  ChainReader(const AddressSpace &memory, const PageMap &map, const SizeClasses &classes,
              std::array<uint64_t, kClassSizesMax> &budget, std::vector<uint64_t> &out)
      : memory_(memory), map_(map), classes_(classes), budget_(budget), out_(out) {}

  /// Takes the objects of the chain at `head` (class `c`), stopping at a null link or after
  /// `limit` objects. Returns how many were taken and sets `next` to the link after the last one;
  /// `why` says why the chain was cut when it was (not an object of the class, a link not captured,
  /// more objects than the class has).
  uint64_t follow(uint64_t head, unsigned c, uint64_t limit, uint64_t &next, std::string &why) {
    uint64_t taken = 0;
    next = head;
    while (next != 0 && taken < limit) {
      const uint64_t object = next;
      if (!isObject(object, c)) {
        why = hexAddress(object) + " is not a " + std::to_string(classes_.size[c]) +
              "-byte object of a span in use";
        return taken;
      }
      if (budget_[c] == 0) {
        why = "it holds more objects than the spans of its class";
        return taken;
      }
      if (!memory_.readU64(object, next)) {
        why = "the link in " + hexAddress(object) + " is not captured";
        return taken;
      }
      --budget_[c];
      out_.push_back(object);
      ++taken;
    }
    return taken;
  }

private:
  /// True when `a` starts an object of class `c` in a span in use.
  bool isObject(uint64_t a, unsigned c) {
    if (!(have_span_ && a >= span_.address() && a - span_.address() < span_.bytes())) {
      std::optional<SpanRec> s = map_.spanOf(a >> kPageShift);
      if (!s)
        return false;
      span_ = *s;
      have_span_ = true;
    }
    const uint64_t size = classes_.size[c];
    const uint64_t offset = a - span_.address();
    return span_.location() == kInUse && span_.sizeclass() == c && offset % size == 0 &&
           offset + size <= span_.bytes();
  }

  const AddressSpace &memory_;
  const PageMap &map_;
  const SizeClasses &classes_;
  std::array<uint64_t, kClassSizesMax> &budget_;
  std::vector<uint64_t> &out_;
  SpanRec span_;
  bool have_span_ = false;
};

/// What is wrong with a chain that was followed for `expected` objects, `taken` of them taken,
/// `next` the link after the last: "" when it held exactly that many.
std::string chainLengthProblem(uint64_t taken, uint64_t expected, uint64_t next) {
  if (taken < expected)
    return "its chain ends after " + std::to_string(taken) + " of " + std::to_string(expected) +
           " objects";
  if (next != 0)
    return "its chain is longer than " + std::to_string(expected) + " objects";
  return "";
}

/// "class 17 (256 bytes)".
std::string className(const SizeClasses &classes, unsigned c) {
  return "class " + std::to_string(c) + " (" + std::to_string(classes.size[c]) + " bytes)";
}

} // namespace

CachedFree collectCachedFree(const AddressSpace &memory, const Globals &globals, const PageMap &map,
                             std::array<uint64_t, kClassSizesMax> objects_per_class,
                             Diagnostics &diags) {
  const SizeClasses &classes = globals.size_map.classes;
  CachedFree out;
  ChainReader chains(memory, map, classes, objects_per_class, out.objects);

  // Transfer slots: tc_slots_[0, used_slots_) of each central list, each a chain of exactly
  // num_objects_to_move objects from head to tail (central_freelist.cc, InsertRange).
  for (unsigned c = 1; c < classes.count; ++c) {
    const uint64_t list = globals.central_cache + kCentral.stride * c;
    const uint8_t *p = memory.tryView(list, kCentral.stride);
    if (!p)
      continue; // checked whole by findGlobals
    if (read32le(p + kCentral.lock) != 0)
      ++out.locked_central_lists;
    const uint32_t used = std::min<uint32_t>(read32le(p + kCentral.used_slots), kCentral.max_slots);
    for (uint32_t slot = 0; slot < used; ++slot) {
      const uint64_t head = read64le(p + kCentral.tc_slots + 16 * slot);
      const uint64_t tail = read64le(p + kCentral.tc_slots + 16 * slot + 8);
      const uint64_t before = out.objects.size();
      uint64_t next = 0;
      std::string why;
      uint64_t taken = chains.follow(head, c, classes.batch[c], next, why);
      const uint64_t last = taken ? out.objects.back() : 0;
      if (why.empty())
        why = chainLengthProblem(taken, classes.batch[c], next);
      if (why.empty() && last != tail)
        why = "its chain of " + std::to_string(taken) + " objects does not end at its tail " +
              hexAddress(tail);
      if (!why.empty())
        diags.warn(hexAddress(list + kCentral.tc_slots + 16 * slot),
                   "transfer slot " + std::to_string(slot) + " of the central list of " +
                       className(classes, c) + " is cut: " + why);
      out.in_transfer_slots += out.objects.size() - before;
    }
  }
  if (out.locked_central_lists)
    diags.warn(hexAddress(globals.central_cache),
               std::to_string(out.locked_central_lists) +
                   " central free lists were locked when the dump was taken: their spans and "
                   "slots may be caught mid-update");

  // Thread caches: from each list head along next_; each list_[c] holds length_ objects.
  llvm::DenseSet<uint64_t> seen;
  for (uint64_t head : globals.thread_cache_heads) {
    for (uint64_t cache = head; cache != 0;) {
      if (isReservedDenseKey(cache) || !seen.insert(cache).second)
        break; // reached from an earlier head, a loop, or no address
      if (seen.size() > kMaxThreadCaches) {
        diags.warn(hexAddress(cache), "more than " + std::to_string(kMaxThreadCaches) +
                                          " thread caches; the rest are not read");
        break;
      }
      const uint8_t *p = memory.tryView(cache, kThreadCache.size);
      bool looks_right = p != nullptr;
      for (unsigned c = 0; looks_right && c < classes.count; ++c)
        looks_right = read32le(p + kThreadCache.lists + kThreadCache.list_stride * c +
                               kThreadCache.list_object_size) == classes.size[c];
      if (!looks_right) {
        diags.warn(hexAddress(cache), "thread cache list leads to memory that is not a thread "
                                      "cache; the rest of the list is not read");
        break;
      }
      ++out.thread_caches;
      for (unsigned c = 1; c < classes.count; ++c) {
        const uint8_t *list = p + kThreadCache.lists + kThreadCache.list_stride * c;
        const uint64_t first = read64le(list + kThreadCache.list_head);
        const uint32_t length = read32le(list + kThreadCache.list_length);
        if (first == 0 && length == 0)
          continue;
        const uint64_t before = out.objects.size();
        uint64_t next = 0;
        std::string why;
        if (length > kMaxThreadListLength)
          why = "its length " + std::to_string(length) + " is above the most tcmalloc keeps (" +
                std::to_string(kMaxThreadListLength) + ")";
        else if (uint64_t taken = chains.follow(first, c, length, next, why); why.empty())
          why = chainLengthProblem(taken, length, next);
        if (!why.empty())
          diags.warn(hexAddress(cache + (list - p)), "free list of " + className(classes, c) +
                                                         " in the thread cache at " +
                                                         hexAddress(cache) + " is cut: " + why);
        out.in_thread_caches += out.objects.size() - before;
      }
      cache = read64le(p + kThreadCache.next);
      if (cache & 7) {
        diags.warn(hexAddress(cache), "thread cache list has a misaligned link; the rest of the "
                                      "list is not read");
        break;
      }
    }
  }

  std::sort(out.objects.begin(), out.objects.end());
  const size_t listed = out.objects.size();
  out.objects.erase(std::unique(out.objects.begin(), out.objects.end()), out.objects.end());
  if (out.objects.size() != listed)
    diags.warn(hexAddress(globals.central_cache),
               std::to_string(listed - out.objects.size()) +
                   " objects are on more than one transfer slot or thread cache list");
  return out;
}

} // namespace dumpsift::tcmalloc
