// The reference pass (reference_pass.h): the word loop, the classing of each hit's slot, and the
// pieces of memory spread over threads.
#include "reference_pass.h"

#include "dumpsift/support/parallel.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/SwapByteOrder.h"

#include <algorithm>
#include <cstring>

namespace dumpsift::holders {

namespace {

/// The most bytes of one piece of memory: small enough to spread a large heap over threads and to
/// release its pages soon after, large enough that per-piece work is lost in the reading.
constexpr uint64_t kPieceBytes = 32ull << 20;
/// References a piece keeps between two updates of the shared count against the budget.
constexpr uint64_t kBudgetStep = 1024;

/// Sorts `zones` by start and drops those that overlap the one before (the first kept).
template <typename Zone> void sortZones(std::vector<Zone> &zones) {
  std::stable_sort(zones.begin(), zones.end(),
                   [](const Zone &a, const Zone &b) { return a.start < b.start; });
  std::vector<Zone> kept;
  for (const Zone &z : zones)
    if (z.end > z.start && (kept.empty() || z.start >= kept.back().end))
      kept.push_back(z);
  zones = std::move(kept);
}

/// One piece of captured writable memory.
struct Piece {
  uint64_t start;
  llvm::ArrayRef<uint8_t> bytes;
  const NarrowZone *narrow = nullptr; // its references are 32-bit words of this zone
};

/// What a piece's scan keeps while it runs.
class PieceScan {
public:
  PieceScan(const PassPlan &plan, PieceHits &out, std::atomic<uint64_t> &kept,
            std::atomic<bool> &over)
      : plan_(plan), out_(out), kept_(kept), over_(over) {}
  ~PieceScan() { kept_.fetch_add(unreported_, std::memory_order_relaxed); }

  /// The word at `slot` holds `value`, which points into probe entry `entry`.
  void hit(uint64_t slot, uint64_t value, uint32_t entry) {
    const uint32_t node = plan_.probe_nodes->empty() ? entry : (*plan_.probe_nodes)[entry];
    if (plan_.slots->interior(node, value))
      return; // no reference of a runtime that refers to its objects' starts only
    const Slot from = plan_.slots->classify(slot, cursor_);
    if (from.cls == SlotClass::Drop || (from.cls == SlotClass::Heap && from.node == node) ||
        plan_.slots->ruledOutByRuntime(from, slot, node))
      return; // no reference, a block pointing into itself, or a runtime's bookkeeping
    const uint32_t target = (*plan_.probe_targets)[entry];
    if (target != kNoEntry)
      keepTarget({slot, value, target, from, false}, holderKindOf(from.cls));
    if (!plan_.edges || over_.load(std::memory_order_relaxed))
      return;
    switch (from.cls) {
    case SlotClass::Heap: {
      if (last_.src == from.node && last_.dst == node)
        return; // the same pair again (a vector's begin and end pointers)
      const uint64_t offset = slot - plan_.slots->nodeStart(from.node);
      last_ = {from.node, node, static_cast<uint32_t>(std::min<uint64_t>(offset, UINT32_MAX))};
      out_.edges.push_back(last_);
      count();
      return;
    }
    case SlotClass::Unlisted:
      if (unlisted_seen_.insert(node).second)
        out_.unlisted.push_back(node), count();
      return;
    case SlotClass::Stack:
    case SlotClass::Global:
    case SlotClass::Other: {
      const HolderKind kind = holderKindOf(from.cls);
      if (roots_seen_.insert(uint64_t(node) << 3 | uint64_t(kind)).second)
        out_.roots.push_back({slot, node, from.where, kind}), count();
      return;
    }
    case SlotClass::Drop:
      return;
    }
  }

  /// Keeps `ref` among the first kHoldersShown of its target and kind in this piece; counts it.
  void keepTarget(const TargetRef &ref, HolderKind kind) {
    ++out_.target_counts[ref.target];
    uint32_t &kept = kept_per_target_[uint64_t(ref.target) << 3 | uint64_t(kind)];
    if (kept < kHoldersShown) {
      ++kept;
      out_.target_refs.push_back(ref);
    }
  }

private:
  /// Counts one kept reference against the budget, updating the shared count in steps.
  void count() {
    if (++unreported_ < kBudgetStep)
      return;
    if (kept_.fetch_add(unreported_, std::memory_order_relaxed) + unreported_ > plan_.budget)
      over_.store(true, std::memory_order_relaxed);
    unreported_ = 0;
  }

  const PassPlan &plan_;
  PieceHits &out_;
  std::atomic<uint64_t> &kept_;
  std::atomic<bool> &over_;
  uint64_t unreported_ = 0;
  uint32_t cursor_ = kNoEntry;
  Edge last_{kNoEntry, kNoEntry, 0};
  llvm::DenseSet<uint64_t> roots_seen_;
  llvm::DenseSet<uint32_t> unlisted_seen_;
  llvm::DenseMap<uint64_t, uint32_t> kept_per_target_;
};

/// Reads every `Word`-aligned word of `piece` (byte-swapped when `Swap`) and reports each that may
/// point into the probe directory.
template <typename Word, bool Swap>
void scanWords(const Piece &piece, const PassPlan &plan, PieceScan &scan) {
  const uint8_t *bytes = piece.bytes.data();
  const uint64_t size = piece.bytes.size();
  const uint64_t first = (sizeof(Word) - piece.start % sizeof(Word)) % sizeof(Word);
  const PageFilter &filter = *plan.filter;
  const Directory &probe = *plan.probe;
  auto check = [&](uint64_t off, uint64_t value) {
    if (!filter.maybe(value))
      return;
    const uint32_t entry = probe.find(value);
    if (entry != kNoEntry)
      scan.hit(piece.start + off, value, entry);
  };
  auto load = [&](uint64_t off) -> uint64_t {
    Word word;
    std::memcpy(&word, bytes + off, sizeof(Word));
    if constexpr (Swap)
      word = llvm::sys::getSwappedBytes(word);
    return word;
  };
  // Eight words at a time, with one branch on whether any lies within the bounds of every block:
  // most words of most memory do not (zeros, small numbers, text, random bytes), and the loop
  // then runs at the speed of reading.
  const uint64_t lo = filter.low(), span = filter.span();
  constexpr uint64_t kBatch = 8 * sizeof(Word);
  uint64_t off = first;
  for (; off + kBatch <= size; off += kBatch) {
    uint64_t words[8];
    bool any = false;
    for (unsigned k = 0; k < 8; ++k) {
      words[k] = load(off + k * sizeof(Word));
      any |= words[k] - lo < span;
    }
    if (!any)
      continue;
    for (unsigned k = 0; k < 8; ++k)
      check(off + k * sizeof(Word), words[k]);
  }
  for (; off + sizeof(Word) <= size; off += sizeof(Word))
    check(off, load(off));
}

/// Answers "may `value` be the start of a block in a narrow zone?" in one probe of a bitmap
/// hashed by address: most 32-bit words of a managed heap decode to addresses in the heap (its
/// objects' references to each other), few of them to a listed block's start, and the bitmap
/// turns those away before a search of the directory does.
class StartFilter {
public:
  /// The filter of the blocks of `probe` that start inside `zones`: 4 bits per block (a fifth of
  /// the other values pass; 8 bits, twice the cache, were slower on the JVM bench core), at most
  /// 2^28 bits.
  StartFilter(const Directory &probe, const std::vector<NarrowZone> &zones) {
    std::vector<uint64_t> starts;
    for (const NarrowZone &z : zones)
      for (auto it = std::lower_bound(probe.starts.begin(), probe.starts.end(), z.start);
           it != probe.starts.end() && *it < z.end; ++it)
        starts.push_back(*it);
    bits_log2_ = 16;
    while (bits_log2_ < 28 && (uint64_t(1) << bits_log2_) < 4 * starts.size())
      ++bits_log2_;
    bits_.assign((uint64_t(1) << bits_log2_) / 64, 0);
    for (uint64_t start : starts) {
      const uint64_t bit = slot(start);
      bits_[bit / 64] |= uint64_t(1) << (bit % 64);
    }
  }
  bool maybe(uint64_t value) const {
    const uint64_t bit = slot(value);
    return (bits_[bit / 64] >> (bit % 64)) & 1;
  }

private:
  uint64_t slot(uint64_t address) const {
    return ((address >> 3) * 0x9E3779B97F4A7C15ull) >> (64 - bits_log2_);
  }
  unsigned bits_log2_ = 16;
  std::vector<uint64_t> bits_;
};

/// Reads every 4-byte-aligned 32-bit word n of `piece` other than 0 (byte-swapped when `Swap`) as
/// the reference base + (n << shift) of its zone, and reports each that points at the start of a
/// block of the probe directory: a runtime's objects refer to each other's starts, so a word that
/// decodes to inside a block is an int or a part of an array, not a reference.
template <bool Swap>
void scanNarrow(const Piece &piece, const PassPlan &plan, const StartFilter &starts,
                PieceScan &scan) {
  const uint8_t *bytes = piece.bytes.data();
  const uint64_t size = piece.bytes.size();
  const uint64_t first = (4 - piece.start % 4) % 4;
  const uint64_t base = piece.narrow->base;
  const unsigned shift = piece.narrow->shift;
  const PageFilter &filter = *plan.filter;
  const Directory &probe = *plan.probe;
  auto decode = [&](uint64_t off) -> uint64_t {
    uint32_t word;
    std::memcpy(&word, bytes + off, 4);
    if constexpr (Swap)
      word = llvm::sys::getSwappedBytes(word);
    return word ? base + (uint64_t(word) << shift) : 0;
  };
  auto check = [&](uint64_t off, uint64_t value) {
    if (value == 0 || !starts.maybe(value) || !filter.maybe(value))
      return;
    const uint32_t entry = probe.find(value);
    if (entry != kNoEntry && probe.starts[entry] == value)
      scan.hit(piece.start + off, value, entry);
  };
  // Eight words at a time, as scanWords does.
  const uint64_t lo = filter.low(), span = filter.span();
  uint64_t off = first;
  for (; off + 32 <= size; off += 32) {
    uint64_t values[8];
    bool any = false;
    for (unsigned k = 0; k < 8; ++k) {
      values[k] = decode(off + 4 * k);
      any |= values[k] - lo < span && starts.maybe(values[k]);
    }
    if (!any)
      continue;
    for (unsigned k = 0; k < 8; ++k)
      check(off + 4 * k, values[k]);
  }
  for (; off + 4 <= size; off += 4)
    check(off, decode(off));
}

/// Appends [start, start + bytes.size()) to `pieces`, cut into pieces of at most kPieceBytes.
void appendPieces(std::vector<Piece> &pieces, uint64_t start, llvm::ArrayRef<uint8_t> bytes) {
  for (uint64_t at = 0; at < bytes.size(); at += kPieceBytes)
    pieces.push_back(
        {start + at, bytes.slice(at, std::min<uint64_t>(kPieceBytes, bytes.size() - at))});
}

/// The captured writable memory in pieces of at most kPieceBytes, by address.
std::vector<Piece> writablePieces(const AddressSpace &memory) {
  std::vector<Piece> pieces;
  for (const MemoryRange &m : memory.snapshot().memory) {
    const Region *r = memory.regionContaining(m.start);
    if (r && (r->perms.write || !r->perms.exact))
      appendPieces(pieces, m.start, m.bytes);
  }
  return pieces;
}

/// `pieces` (by address) without the bytes of `ranges` (sorted, not overlapping); `removed`
/// receives how many bytes that took out.
std::vector<Piece> withoutRanges(std::vector<Piece> pieces,
                                 const std::vector<std::pair<uint64_t, uint64_t>> &ranges,
                                 uint64_t &removed) {
  removed = 0;
  if (ranges.empty())
    return pieces;
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (const Piece &p : pieces) {
    const uint64_t end = p.start + p.bytes.size();
    auto skip = std::upper_bound(ranges.begin(), ranges.end(), p.start,
                                 [](uint64_t a, const auto &range) { return a < range.second; });
    uint64_t at = p.start;
    for (; skip != ranges.end() && skip->first < end; ++skip) {
      const uint64_t skip_start = std::max(skip->first, at), skip_end = std::min(skip->second, end);
      if (skip_start >= skip_end)
        continue;
      if (skip_start > at)
        out.push_back({at, p.bytes.slice(at - p.start, skip_start - at), p.narrow});
      removed += skip_end - skip_start;
      at = skip_end;
    }
    if (at < end)
      out.push_back({at, p.bytes.slice(at - p.start, end - at), p.narrow});
  }
  return out;
}

/// `pieces` cut where a zone of `zones` (by start, not overlapping) starts or ends, each piece
/// inside a zone pointing at it.
std::vector<Piece> splitAtZones(std::vector<Piece> pieces, const std::vector<NarrowZone> &zones) {
  if (zones.empty())
    return pieces;
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (const Piece &p : pieces) {
    const uint64_t end = p.start + p.bytes.size();
    uint64_t at = p.start;
    auto z = std::upper_bound(zones.begin(), zones.end(), at,
                              [](uint64_t a, const NarrowZone &zone) { return a < zone.end; });
    while (at < end) {
      const bool inside = z != zones.end() && z->start <= at;
      const uint64_t stop = z == zones.end() ? end : std::min(end, inside ? z->end : z->start);
      out.push_back({at, p.bytes.slice(at - p.start, stop - at), inside ? &*z : nullptr});
      at = stop;
      if (inside)
        ++z;
    }
  }
  return out;
}

} // namespace

std::vector<NarrowZone> narrowZones(llvm::ArrayRef<HeapWalkResult> heaps) {
  std::vector<NarrowZone> zones;
  for (const HeapWalkResult &h : heaps)
    if (h.narrow_references)
      for (const HeapArea &a : h.areas)
        if (a.size && a.start + a.size > a.start)
          zones.push_back(
              {a.start, a.start + a.size, h.narrow_references->base, h.narrow_references->shift});
  sortZones(zones);
  return zones;
}

SlotClassifier::SlotClassifier(const Snapshot &snapshot, llvm::ArrayRef<HeapWalkResult> heaps,
                               const std::vector<bool> &partial, const Directory &nodes,
                               bool complete)
    : nodes_(nodes), complete_(complete) {
  for (size_t h = 0; h < heaps.size(); ++h) {
    for (const HeapArea &a : heaps[h].areas)
      if (a.size && a.start + a.size > a.start)
        areas_.push_back(
            {a.start, a.start + a.size, uint32_t(h), h < partial.size() && partial[h]});
    for (const HeapArea &b : heaps[h].bookkeeping)
      if (b.size && b.start + b.size > b.start)
        bookkeeping_.push_back({b.start, b.start + b.size, uint32_t(h), false});
    held_through_handles_.push_back(heaps[h].held_through_handles);
    at_start_.push_back(heaps[h].references_at_start);
    handles_.emplace_back();
    for (const HeapArea &s : heaps[h].handles)
      if (s.size && s.start + s.size > s.start)
        handles_.back().push_back({s.start, s.start + s.size, uint32_t(h), false});
    sortZones(handles_.back());
    stacks_.emplace_back();
    for (const HeapArea &s : heaps[h].stacks)
      if (s.size && s.start + s.size > s.start)
        stacks_.back().push_back({s.start, s.start + s.size, uint32_t(h), false});
    sortZones(stacks_.back());
  }
  for (size_t t = 0; t < snapshot.threads.size(); ++t) {
    const Thread &th = snapshot.threads[t];
    if (th.stack_end <= th.stack_start)
      continue;
    const uint64_t sp = std::clamp(th.stack_pointer, th.stack_start, th.stack_end);
    live_stacks_.push_back({sp, th.stack_end, uint32_t(t), false});
    dead_stacks_.push_back({th.stack_start, sp, uint32_t(t), false});
  }
  const std::vector<HeapArea> runtime = runtimeStacks(heaps);
  for (size_t k = 0; k < runtime.size(); ++k)
    runtime_stacks_.push_back({runtime[k].start, runtime[k].start + runtime[k].size,
                               uint32_t(snapshot.threads.size() + k), false});
  for (size_t m = 0; m < snapshot.modules.size(); ++m) {
    const Module &mod = snapshot.modules[m];
    modules_.push_back({mod.start, std::max(mod.end, mod.image_end), uint32_t(m), false});
  }
  sortZones(areas_);
  sortZones(bookkeeping_);
  sortZones(live_stacks_);
  sortZones(dead_stacks_);
  sortZones(modules_);
  sortZones(runtime_stacks_);
}

std::vector<HeapArea> runtimeStacks(llvm::ArrayRef<HeapWalkResult> heaps) {
  std::vector<HeapArea> stacks;
  for (const HeapWalkResult &h : heaps)
    for (const HeapArea &s : h.live_stacks)
      if (s.size && s.start + s.size > s.start)
        stacks.push_back(s);
  std::stable_sort(stacks.begin(), stacks.end(),
                   [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
  return stacks;
}

const SlotClassifier::Zone *SlotClassifier::find(const std::vector<Zone> &zones, uint64_t address) {
  auto it = std::upper_bound(zones.begin(), zones.end(), address,
                             [](uint64_t a, const Zone &z) { return a < z.start; });
  if (it == zones.begin() || address >= std::prev(it)->end)
    return nullptr;
  return &*std::prev(it);
}

HolderKind holderKindOf(SlotClass cls) {
  switch (cls) {
  case SlotClass::Stack:
    return HolderKind::Stack;
  case SlotClass::Global:
    return HolderKind::Global;
  case SlotClass::Other:
    return HolderKind::Other;
  default:
    return HolderKind::Heap;
  }
}

bool SlotClassifier::ruledOutByRuntime(const Slot &from, uint64_t slot, uint32_t node) const {
  const uint16_t heap = nodes_.heaps[node];
  if (heap >= held_through_handles_.size())
    return false;
  if (from.cls == SlotClass::Stack)
    return !stacks_[heap].empty() && find(stacks_[heap], slot) == nullptr;
  if (!held_through_handles_[heap])
    return false;
  switch (from.cls) {
  case SlotClass::Heap:
    if (nodes_.heaps[from.node] == heap)
      return false; // one of the runtime's objects holding another
    break;
  case SlotClass::Unlisted:
    if (from.where == heap)
      return false; // an object of the runtime's heap that its walker does not list
    break;
  default:
    break;
  }
  return find(handles_[heap], slot) == nullptr;
}

Slot SlotClassifier::classify(uint64_t slot, uint32_t &cursor) const {
  if (find(bookkeeping_, slot))
    return {SlotClass::Drop};
  // The node holding the slot: the cursor moves up to the last start at or below it.
  const size_t n = nodes_.size();
  if (cursor == kNoEntry || (cursor < n && nodes_.starts[cursor] > slot)) {
    const uint32_t found = nodes_.find(slot);
    if (found != kNoEntry)
      cursor = found;
    else {
      auto it = std::upper_bound(nodes_.starts.begin(), nodes_.starts.end(), slot);
      cursor = it == nodes_.starts.begin() ? kNoEntry
                                           : static_cast<uint32_t>(it - nodes_.starts.begin() - 1);
    }
  } else {
    while (cursor + 1 < n && nodes_.starts[cursor + 1] <= slot)
      ++cursor;
  }
  if (cursor != kNoEntry && cursor < n && slot < nodes_.ends[cursor]) {
    const uint8_t flags = nodes_.flags[cursor];
    if (flags & kHolds)
      return {SlotClass::Heap, cursor};
    if (flags & (kNoscan | kFree))
      return {SlotClass::Drop};
    // A region scan buffer: what its memory is decides below.
  }
  if (!runtime_stacks_.empty())
    if (const Zone *stack = find(runtime_stacks_, slot))
      return {SlotClass::Stack, kNoEntry, stack->where};
  if (const Zone *area = find(areas_, slot)) {
    if (area->partial || !complete_)
      return {SlotClass::Unlisted, kNoEntry, area->where};
    return {SlotClass::Drop}; // an allocator's headers and free memory
  }
  if (const Zone *stack = find(live_stacks_, slot))
    return {SlotClass::Stack, kNoEntry, stack->where};
  if (find(dead_stacks_, slot))
    return {SlotClass::Drop};
  if (const Zone *module = find(modules_, slot))
    return {SlotClass::Global, kNoEntry, module->where};
  return {SlotClass::Other};
}

std::vector<PieceHits> scanMemory(const AddressSpace &memory, const PassPlan &plan,
                                  bool &over_budget, uint64_t &opaque_bytes, ProgressFn progress) {
  static const std::vector<std::pair<uint64_t, uint64_t>> kNone;
  static const std::vector<NarrowZone> kWide;
  uint64_t unread_bytes = 0;
  const std::vector<Piece> pieces =
      splitAtZones(withoutRanges(withoutRanges(writablePieces(memory),
                                               plan.opaque ? *plan.opaque : kNone, opaque_bytes),
                                 plan.unread ? *plan.unread : kNone, unread_bytes),
                   plan.narrow ? *plan.narrow : kWide);
  std::vector<PieceHits> hits(pieces.size());
  uint64_t total = 0;
  for (const Piece &p : pieces)
    total += p.bytes.size();
  const StartFilter starts(*plan.probe, plan.narrow ? *plan.narrow : kWide);
  std::atomic<uint64_t> kept{0}, done{0};
  std::atomic<bool> over{false};
  const SystemInfo &system = memory.snapshot().system;
  const bool swap = system.little_endian != llvm::sys::IsLittleEndianHost;
  const char *phase = "finding holders";
  progress(phase, 0, total);
  memory.adviseAccess(AddressSpace::Access::Sequential);
  parallelFor(
      pieces.size(), plan.threads,
      [&](size_t i) {
        const Piece &piece = pieces[i];
        {
          PieceScan scan(plan, hits[i], kept, over);
          if (piece.narrow)
            swap ? scanNarrow<true>(piece, plan, starts, scan)
                 : scanNarrow<false>(piece, plan, starts, scan);
          else if (system.pointer_size == 4)
            swap ? scanWords<uint32_t, true>(piece, plan, scan)
                 : scanWords<uint32_t, false>(piece, plan, scan);
          else
            swap ? scanWords<uint64_t, true>(piece, plan, scan)
                 : scanWords<uint64_t, false>(piece, plan, scan);
        }
        // The edges wait for the graph with the other pieces': without the growth's slack.
        hits[i].edges.shrink_to_fit();
        hits[i].bytes = piece.bytes.size();
        memory.releasePages(piece.start, piece.bytes.size());
        done.fetch_add(piece.bytes.size(), std::memory_order_relaxed);
      },
      [&] { progress(phase, done.load(std::memory_order_relaxed), total); });
  memory.adviseAccess(AddressSpace::Access::Normal);
  progress(phase, total, total);
  // Every piece's kept references, now all counted.
  over_budget = kept.load() > plan.budget || over.load();
  return hits;
}

PieceHits scanRegisters(const Snapshot &snapshot, const PassPlan &plan) {
  PieceHits out;
  for (size_t t = 0; t < snapshot.threads.size(); ++t) {
    const std::vector<Register> &registers = snapshot.threads[t].registers;
    for (size_t r = 0; r < registers.size() && r < 256; ++r) {
      const uint64_t value = registers[r].value;
      if (!plan.filter->maybe(value))
        continue;
      const uint32_t entry = plan.probe->find(value);
      if (entry == kNoEntry)
        continue;
      const uint32_t node = plan.probe_nodes->empty() ? entry : (*plan.probe_nodes)[entry];
      if (plan.slots->interior(node, value))
        continue;
      const uint32_t where = static_cast<uint32_t>(t * 256 + r);
      const uint32_t target = (*plan.probe_targets)[entry];
      if (target != kNoEntry) {
        ++out.target_counts[target];
        out.target_refs.push_back({0, value, target, {SlotClass::Other, kNoEntry, where}, true});
      }
      if (plan.edges)
        out.roots.push_back({0, node, where, HolderKind::Register});
    }
  }
  return out;
}

} // namespace dumpsift::holders
