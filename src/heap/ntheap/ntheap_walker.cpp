// The NT heap walker. Finds the heaps a process's PEBs list (ProcessHeap and the ProcessHeaps
// array; a WOW64 process has a 64-bit and a 32-bit PEB) and the heaps whose record starts a 64 KiB
// granule of captured memory (0xFFEEFFEE at the segment signature and 0xEEFFEEFF at the heap
// signature: a PEB or its array the dump does not hold), picks each one's layout (nt_layout.h) by
// those two signatures, and walks:
// - its segments, from _HEAP.SegmentList: each from FirstEntry to LastValidEntry, entry by entry,
//   every entry's 8 encoded bytes XORed with the heap's Encoding and checked by its checksum
//   (SmallTagIndex = the XOR of the three bytes before it), jumping over the uncommitted ranges the
//   segment's UCRSegmentList lists; a busy entry is a used block of Size granules whose request
//   was the block less UnusedBytes (header included), a free entry a free block;
// - its large blocks, from _HEAP.VirtualAllocdBlocks: each a _HEAP_VIRTUAL_ALLOC_ENTRY whose user
//   data follows it, CommitSize less the header and the unused bytes its encoded BusyBlock.Size
//   counts.
// A busy entry that holds an LFH subsegment's blocks (a _HEAP_USERDATA_HEADER, signature
// 0xF0E0D0C0) is reported whole and counted: its blocks are at most 16 KiB each. A segment heap
// (0xDDEEDDEE) is reported unwalked. Damage ends the walk of one segment or list with a warning.
#include "ntheap_walker.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "nt_layout.h"

#include <algorithm>
#include <array>
#include <set>

namespace dumpsift {

namespace {

using nt::Layout;

/// Bounds on what one heap's lists may hold: far above any real heap's, they stop a loop a
/// damaged list would make.
constexpr size_t kMaxSegments = 4096;
constexpr size_t kMaxLargeBlocks = size_t(1) << 20;
/// Heaps are VirtualAlloc'd: they start at the allocation granularity.
constexpr uint64_t kHeapAlignment = 64 * 1024;
/// A segment is at most this large (the largest reservation a heap makes is far less).
constexpr uint64_t kMaxSegmentBytes = uint64_t(1) << 36;

/// One heap record the walker will walk, where it was found.
struct HeapRecord {
  uint64_t address = 0;
  const Layout *layout = nullptr;
  bool listed = false; // a PEB lists it
};

/// The decoded 8 bytes of a _HEAP_ENTRY.
struct Entry {
  uint16_t size = 0; // granules
  uint8_t flags = 0;
  uint8_t checksum = 0;
  uint16_t previous_size = 0;
  uint8_t unused = 0;
  bool valid() const {
    return checksum == static_cast<uint8_t>((size & 0xff) ^ (size >> 8) ^ flags);
  }
};

class NtHeapWalk {
public:
  NtHeapWalk(const AddressSpace &memory, Diagnostics &diags, AllocationSink sink)
      : memory_(memory), diags_(diags), sink_(sink) {}

  llvm::Expected<HeapWalkResult> run() {
    std::vector<HeapRecord> heaps = findHeaps();
    if (heaps.empty())
      return createError(
          "no NT heap walked: no record with both NT heap signatures (0xFFEEFFEE, 0xEEFFEEFF) "
          "at an address a captured PEB lists or at the start of a captured 64 KiB granule" +
          std::string(segment_heaps_ ? " (segment heaps are not walked)" : ""));
    std::set<std::string> layouts;
    for (const HeapRecord &h : heaps) {
      walkHeap(h);
      layouts.insert(h.layout->name);
    }
    std::sort(result_.areas.begin(), result_.areas.end(),
              [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
    std::string names;
    for (const std::string &l : layouts)
      names += (names.empty() ? "" : ", ") + l;
    result_.facts.push_back({"ntheap_layout", names});
    result_.facts.push_back({"ntheap_heaps", std::to_string(heaps.size())});
    result_.facts.push_back({"ntheap_heaps_listed", std::to_string(listed_)});
    result_.facts.push_back({"ntheap_segments", std::to_string(segments_)});
    result_.facts.push_back({"ntheap_large_blocks", std::to_string(large_blocks_)});
    if (lfh_subsegments_)
      result_.facts.push_back({"ntheap_lfh_subsegments", std::to_string(lfh_subsegments_)});
    if (segment_heaps_)
      result_.facts.push_back({"ntheap_segment_heaps_unwalked", std::to_string(segment_heaps_)});
    return std::move(result_);
  }

private:
  /// The process's word of `size` bytes (4 or 8) at `addr`.
  std::optional<uint64_t> word(uint64_t addr, unsigned size) const {
    if (size == 8)
      return memory_.readU64(addr);
    if (std::optional<uint32_t> v = memory_.readU32(addr))
      return *v;
    return std::nullopt;
  }

  /// The pointer sizes of the heaps this process may hold: its own, and 4 too in a WOW64
  /// process dumped as a 64-bit one.
  std::vector<unsigned> widths() const {
    const SystemInfo &system = memory_.snapshot().system;
    if (system.pointer_size == 4)
      return {4};
    if (system.wow64)
      return {8, 4};
    return {8};
  }

  /// The layout of the NT heap record at `address` whose pointers are `width` bytes: the first
  /// whose segment and heap signatures both match; nullptr when none does.
  static const Layout *layoutOf(const AddressSpace &memory, uint64_t address, unsigned width) {
    for (const Layout *layout : nt::kLayouts)
      if (layout->pointer_size == width &&
          memory.readU32(address + layout->segment_signature) == nt::kSegmentSignature &&
          memory.readU32(address + layout->heap_signature) == nt::kHeapSignature)
        return layout;
    return nullptr;
  }

  /// True when a segment heap's record starts at `address` (pointers of `width` bytes).
  bool isSegmentHeap(uint64_t address, unsigned width) const {
    return memory_.readU32(address + (width == 8 ? 0x10 : 0x08)) == nt::kSegmentHeapSignature;
  }

  /// Adds the heap at `address` (listed by a PEB or not) once, with its layout; a segment heap
  /// is counted and warned about instead, and a listed address that is neither says why.
  void addHeap(std::vector<HeapRecord> &heaps, std::set<uint64_t> &seen, uint64_t address,
               unsigned width, bool listed) {
    if (address == 0 || !seen.insert(address).second)
      return;
    if (const Layout *layout = layoutOf(memory_, address, width)) {
      heaps.push_back({address, layout, listed});
      listed_ += listed;
      return;
    }
    if (isSegmentHeap(address, width)) {
      ++segment_heaps_;
      diags_.warn("heap " + hexAddress(address),
                  "a segment heap (signature 0xDDEEDDEE), which the ntheap walker does not walk "
                  "(its records need the build's symbols: docs/heap-windows.md); the region scan "
                  "covered what the dump holds of it");
      return;
    }
    if (listed)
      diags_.warn("heap " + hexAddress(address),
                  memory_.readU32(address) ? "listed by the PEB, but no NT heap record the walker "
                                             "knows starts there (its signatures do not match)"
                                           : "listed by the PEB, but the dump does not hold it");
  }

  /// The heaps the PEBs list, then those found at 64 KiB granules, in address order.
  std::vector<HeapRecord> findHeaps() {
    const Snapshot &snap = memory_.snapshot();
    std::vector<HeapRecord> heaps;
    std::set<uint64_t> seen;
    struct Peb {
      uint64_t address;
      unsigned width;
    };
    const Peb pebs[] = {{snap.process.peb, snap.system.pointer_size}, {snap.process.peb32, 4}};
    for (const Peb &peb : pebs) {
      if (peb.address == 0 || (peb.width != 4 && peb.width != 8))
        continue;
      const nt::PebLayout &l = peb.width == 8 ? nt::kPeb64 : nt::kPeb32;
      if (std::optional<uint64_t> heap = word(peb.address + l.process_heap, peb.width))
        addHeap(heaps, seen, *heap, peb.width, true);
      const std::optional<uint32_t> count = memory_.readU32(peb.address + l.number_of_heaps);
      const std::optional<uint32_t> most = memory_.readU32(peb.address + l.maximum_number_of_heaps);
      const std::optional<uint64_t> array = word(peb.address + l.process_heaps, peb.width);
      // MemProcFS's sanity bound: NumberOfHeaps <= MaximumNumberOfHeaps < 0x80.
      if (!count || !most || !array || *count > *most || *most >= 0x80)
        continue;
      for (uint32_t i = 0; i < *count; ++i)
        if (std::optional<uint64_t> heap = word(*array + uint64_t(i) * peb.width, peb.width))
          addHeap(heaps, seen, *heap, peb.width, true);
    }
    for (const MemoryRange &m : snap.memory)
      for (uint64_t at = (m.start + kHeapAlignment - 1) & ~(kHeapAlignment - 1); at < m.end();
           at += kHeapAlignment)
        for (unsigned width : widths())
          if (layoutOf(memory_, at, width) || isSegmentHeap(at, width))
            addHeap(heaps, seen, at, width, false);
    std::sort(heaps.begin(), heaps.end(),
              [](const HeapRecord &a, const HeapRecord &b) { return a.address < b.address; });
    return heaps;
  }

  /// The entries of `list_head`'s list (a LIST_ENTRY of `width`-byte pointers), each as the
  /// address of its link: forward from the head's Flink to the head, then, where a link the dump
  /// does not hold breaks the chain, backward from the head's Blink to an entry seen before (a
  /// dump of some pages holds parts of a list). At most `limit`; a loop or the limit ends it with
  /// a warning, and so does a break.
  std::vector<uint64_t> listLinks(uint64_t list_head, unsigned width, size_t limit,
                                  const std::string &where) {
    std::vector<uint64_t> links;
    std::set<uint64_t> seen{list_head};
    // Follows the links at `offset` (0: Flink, width: Blink) from the head's; true when the
    // chain came back to the head or to an entry seen before, false when the dump broke it.
    auto follow = [&](unsigned offset, bool stop_at_seen) {
      std::optional<uint64_t> link = word(list_head + offset, width);
      while (link && *link != list_head) {
        if (!seen.insert(*link).second) {
          if (!stop_at_seen)
            diags_.warn(where,
                        "its list loops back at " + hexAddress(*link) + "; walked up to there");
          return true;
        }
        if (links.size() == limit) {
          diags_.warn(where, "its list holds more than " + std::to_string(limit) +
                                 " entries; only those were walked");
          return true;
        }
        links.push_back(*link);
        link = word(*link + offset, width);
      }
      return link.has_value();
    };
    if (!follow(0, false) && !links.empty()) {
      const uint64_t broken_at = links.back();
      follow(width, true);
      diags_.warn(where, "its list leads to " + hexAddress(broken_at) +
                             ", whose link the dump does not hold; the rest was read backwards "
                             "from the list's head, as far as the dump holds it");
    }
    return links;
  }

  /// The heap's encoding key (8 bytes, zeros when its entries are not encoded).
  std::array<uint8_t, 8> keyOf(const HeapRecord &h) const {
    std::array<uint8_t, 8> key{};
    const Layout &l = *h.layout;
    const std::optional<uint32_t> mask = memory_.readU32(h.address + l.encode_flag_mask);
    if (mask && (*mask & nt::kEncodingOn))
      if (const uint8_t *p = memory_.tryView(h.address + l.encoding + l.encodedAt(), 8))
        std::copy(p, p + 8, key.begin());
    return key;
  }

  /// The entry at `at` decoded with `key`; nullopt when the dump does not hold it.
  std::optional<Entry> entryAt(uint64_t at, const Layout &l,
                               const std::array<uint8_t, 8> &key) const {
    const uint8_t *p = memory_.tryView(at + l.encodedAt(), 8);
    if (!p)
      return std::nullopt;
    uint8_t b[8];
    for (int i = 0; i < 8; ++i)
      b[i] = p[i] ^ key[i];
    Entry e;
    e.size = static_cast<uint16_t>(b[0] | b[1] << 8);
    e.flags = b[2];
    e.checksum = b[3];
    e.previous_size = static_cast<uint16_t>(b[4] | b[5] << 8);
    e.unused = b[7];
    return e;
  }

  void walkHeap(const HeapRecord &h) {
    const Layout &l = *h.layout;
    const unsigned w = l.pointer_size;
    const std::array<uint8_t, 8> key = keyOf(h);
    const std::string where = "NT heap " + hexAddress(h.address);
    // Its segments: the first one is the heap record itself.
    std::vector<uint64_t> segments;
    for (uint64_t link :
         listLinks(h.address + l.segment_list, w, kMaxSegments, where + " segments"))
      segments.push_back(link - l.segment_list_entry);
    if (std::find(segments.begin(), segments.end(), h.address) == segments.end())
      segments.push_back(h.address);
    std::sort(segments.begin(), segments.end());
    std::vector<uint64_t> not_held;
    for (uint64_t segment : segments) {
      const std::optional<uint32_t> signature = memory_.readU32(segment + l.segment_signature);
      if (!signature)
        not_held.push_back(segment);
      else if (*signature != nt::kSegmentSignature)
        diags_.warn(where, "its segment list names " + hexAddress(segment) +
                               ", which is no segment (no 0xFFEEFFEE signature); skipped");
      else
        walkSegment(h, segment, key);
    }
    if (!not_held.empty())
      diags_.warn(where, std::to_string(not_held.size()) +
                             " of its segments are not in the dump (the first at " +
                             hexAddress(not_held.front()) + ")");
    for (uint64_t node : listLinks(h.address + l.virtual_allocd_blocks, w, kMaxLargeBlocks,
                                   where + " large blocks"))
      walkLargeBlock(h, node, key);
  }

  /// The uncommitted ranges the segment lists, as (start, end), sorted, inside [first, last).
  std::vector<std::pair<uint64_t, uint64_t>> uncommitted(uint64_t segment, const Layout &l,
                                                         uint64_t first, uint64_t last,
                                                         const std::string &where) {
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (uint64_t link : listLinks(segment + l.ucr_segment_list, l.pointer_size, kMaxLargeBlocks,
                                   where + " uncommitted ranges")) {
      const uint64_t descriptor = link - l.ucr_segment_entry;
      std::optional<uint64_t> start = word(descriptor + l.ucr_address, l.pointer_size);
      std::optional<uint64_t> size = word(descriptor + l.ucr_size, l.pointer_size);
      if (start && size && *start >= first && *size <= last - *start)
        ranges.emplace_back(*start, *start + *size);
    }
    std::sort(ranges.begin(), ranges.end());
    return ranges;
  }

  void walkSegment(const HeapRecord &h, uint64_t segment, const std::array<uint8_t, 8> &key) {
    const Layout &l = *h.layout;
    const std::string where =
        "NT heap " + hexAddress(h.address) + " segment " + hexAddress(segment);
    const std::optional<uint64_t> first = word(segment + l.first_entry, l.pointer_size);
    const std::optional<uint64_t> last = word(segment + l.last_valid_entry, l.pointer_size);
    if (!first || !last || *first < segment || *last <= *first ||
        *last - segment > kMaxSegmentBytes) {
      diags_.warn(where, "its FirstEntry and LastValidEntry are not captured or not sane; not "
                         "walked");
      return;
    }
    ++segments_;
    result_.areas.push_back({"nt-segment", segment, *last - segment, h.address});
    const auto holes = uncommitted(segment, l, *first, *last, where);
    auto hole = holes.begin();
    const uint64_t granule = l.entry_size;
    uint64_t at = *first;
    uint64_t previous = 0; // the size in granules of the entry before, 0 after a hole
    uint64_t mismatches = 0;
    while (at < *last) {
      while (hole != holes.end() && hole->second <= at)
        ++hole;
      if (hole != holes.end() && hole->first <= at) {
        at = hole->second;
        previous = 0;
        continue;
      }
      std::optional<Entry> e = entryAt(at, l, key);
      if (!e) {
        // Not captured: a dump of some pages only. Go on after the next hole, if any.
        diags_.warn(where, "the dump does not hold the entry at " + hexAddress(at) +
                               (hole != holes.end() ? "; walked on from the next uncommitted range"
                                                    : "; the rest of the segment is not walked"));
        if (hole == holes.end())
          break;
        at = hole->second;
        previous = 0;
        continue;
      }
      const uint64_t bytes = uint64_t(e->size) * granule;
      if (!e->valid() || e->size == 0 || bytes > *last - at) {
        diags_.warn(where, "the entry at " + hexAddress(at) +
                               (e->valid() ? " has a size past the segment's end"
                                           : " does not decode (its checksum fails)") +
                               "; the rest of the segment is not walked");
        break;
      }
      if (previous && e->previous_size != previous)
        ++mismatches;
      emitEntry(h, at, *e, bytes);
      previous = e->size;
      at += bytes;
    }
    if (mismatches)
      diags_.warn(where, std::to_string(mismatches) +
                             " entries give a PreviousSize other than the size of the entry "
                             "before them");
  }

  void emitEntry(const HeapRecord &h, uint64_t at, const Entry &e, uint64_t bytes) {
    const Layout &l = *h.layout;
    Allocation a;
    a.chunk_address = at;
    a.chunk_size = bytes;
    a.address = at + l.entry_size;
    a.arena = h.address;
    if (e.flags & nt::kEntryBusy) {
      a.state = AllocState::Used;
      // UnusedBytes counts the header too; where it does not fit, the whole block is given.
      a.size =
          e.unused >= l.entry_size && e.unused <= bytes ? bytes - e.unused : bytes - l.entry_size;
      if (memory_.readU32(a.address + l.lfh_signature) == nt::kLfhSignature)
        ++lfh_subsegments_;
    } else {
      a.state = AllocState::Free;
      a.size = bytes - l.entry_size;
    }
    result_.stats.add(a);
    sink_(0, a); // one thread: lane 0
  }

  void walkLargeBlock(const HeapRecord &h, uint64_t node, const std::array<uint8_t, 8> &key) {
    const Layout &l = *h.layout;
    const std::optional<uint64_t> commit = word(node + l.va_commit_size, l.pointer_size);
    const std::optional<Entry> busy = entryAt(node + l.va_busy_block, l, key);
    if (!commit || !busy || *commit <= l.va_data || *commit > kMaxSegmentBytes) {
      diags_.warn("NT heap " + hexAddress(h.address) + " large block " + hexAddress(node),
                  "its record is not captured or its CommitSize is not sane; skipped");
      return;
    }
    ++large_blocks_;
    Allocation a;
    a.chunk_address = node;
    a.chunk_size = *commit;
    a.address = node + l.va_data;
    // BusyBlock.Size counts the unused bytes at the end of the committed pages.
    const uint64_t room = *commit - l.va_data;
    a.size = busy->size < room ? room - busy->size : room;
    a.state = AllocState::Used;
    a.mmapped = true;
    a.arena = h.address;
    result_.areas.push_back({"nt-large", node, *commit, h.address});
    result_.stats.add(a);
    sink_(0, a);
  }

  const AddressSpace &memory_;
  Diagnostics &diags_;
  AllocationSink sink_;
  HeapWalkResult result_;
  uint64_t listed_ = 0, segments_ = 0, large_blocks_ = 0, lfh_subsegments_ = 0;
  uint64_t segment_heaps_ = 0;
};

/// A large block's requests: its user size exactly (the walker reads it from the block).
RequestRange exactRequest(const Allocation &block) {
  return {block.size, block.size};
}

class NtHeapWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "ntheap"; }

  /// Windows processes of 32-bit or 64-bit little-endian words (a WOW64 process's both); the NT
  /// heap lives in ntdll.dll. A used block's size is its request (Size less UnusedBytes).
  const WalkerTraits &traits() const override {
    static const WalkerTraits traits{.platforms = {.os = {Os::Windows},
                                                   .arch = {},
                                                   .pointer_sizes = {4, 8},
                                                   .byte_orders = {llvm::support::little}},
                                     .modules = {{"ntdll.dll", ModuleName::Match::AnyCase}},
                                     .requests = exactRequest,
                                     .thresholds = {},
                                     .native_heap = true};
    return traits;
  }

  /// A captured PEB, or a captured 64 KiB granule that starts with an NT heap or segment heap
  /// record.
  bool detect(const AddressSpace &memory) const override {
    const Snapshot &snap = memory.snapshot();
    if (snap.process.peb && memory.readU8(snap.process.peb))
      return true;
    for (const MemoryRange &m : snap.memory)
      for (uint64_t at = (m.start + kHeapAlignment - 1) & ~(kHeapAlignment - 1); at < m.end();
           at += kHeapAlignment)
        for (uint64_t offset : {0x8, 0x10})
          if (std::optional<uint32_t> s = memory.readU32(at + offset);
              s == nt::kSegmentSignature || s == nt::kSegmentHeapSignature)
            return true;
    return false;
  }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions & /*one thread*/) const override {
    return NtHeapWalk(memory, diags, sink).run();
  }
};

} // namespace

std::unique_ptr<HeapWalker> makeNtHeapWalker() {
  return std::make_unique<NtHeapWalker>();
}

} // namespace dumpsift
