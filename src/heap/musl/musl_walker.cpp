// The musl walker: the context and groups (musl_discover.cpp), then every slot of every group in
// address order, a group nested in a larger group's slot walked in that slot's place. A slot's
// state is its bit in avail_mask | freed_mask (musl has no caches); a used slot's user pointer
// and malloc_usable_size come from its in-band header, checked the way get_meta and
// get_nominal_size check them.
#include "musl_walker.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "musl_model.h"

#include <algorithm>

namespace dumpsift {

namespace {

using namespace musl;

/// Reads the bytes of one group's slots, [start, end): through one view when they are captured in
/// one piece, else read by read. Never reads outside them.
class GroupBytes {
public:
  GroupBytes(const AddressSpace &memory, uint64_t start, uint64_t end)
      : memory_(memory), start_(start), end_(end), whole_(memory.tryView(start, end - start)) {}

  /// The little-endian T (an unsigned word) at `addr`; false when outside the group or not
  /// captured.
  template <typename T> bool load(uint64_t addr, T &out) const {
    if (addr < start_ || addr > end_ - sizeof(T))
      return false;
    const uint8_t *p = whole_ ? whole_ + (addr - start_) : memory_.tryView(addr, sizeof(T));
    if (!p)
      return false;
    out = static_cast<T>(readUnsigned(p, sizeof(T), llvm::support::little));
    return true;
  }

private:
  const AddressSpace &memory_;
  uint64_t start_, end_;
  const uint8_t *whole_;
};

/// Why `p` is not the user pointer of used slot `index` of `g` (nullptr when it is), checked as
/// get_meta and get_nominal_size do: the slot index, the offset back to the group, the reserved
/// byte count and the zero bytes after the allocation. `end` is the slot's end minus the next
/// slot's in-band header. Sets `usable` to malloc_usable_size(p).
const char *userPointerProblem(const GroupBytes &bytes, const Group &g, unsigned index,
                               uint64_t end, uint64_t p, uint64_t &usable) {
  uint8_t flag = 0, code_index = 0;
  uint16_t units16 = 0;
  if (!bytes.load(p - 4, flag) || !bytes.load(p - 3, code_index) || !bytes.load(p - 2, units16))
    return "the slot header is not captured";
  if ((code_index & kIndexMask) != index)
    return "the header names another slot index";
  uint64_t units = units16;
  if (flag) { // aligned_alloc far into a big slot: a 32-bit offset at p-8
    uint32_t units32 = 0;
    if (units16 != 0 || !bytes.load(p - 8, units32) || units32 <= 0xffff)
      return "the header's 32-bit group offset is invalid";
    units = units32;
  }
  if (p != g.mem + kGroupHeader + kUnit * units)
    return "the header's offset does not lead back to the group";
  const uint8_t code = code_index >> kCodeShift;
  if (code == kCodeNestedGroup)
    return "the header marks a nested group that no meta describes";
  if (code == kCodeOffset)
    return "an offset header where the user pointer should be";
  uint64_t reserved = code;
  if (code == kCodeReservedInTail) {
    uint32_t tail = 0;
    uint8_t zero = 1;
    if (!bytes.load(end - 4, tail) || !bytes.load(end - 5, zero) || tail < 5 || zero != 0)
      return "the reserved byte count at the slot end is invalid";
    reserved = tail;
  }
  uint8_t after = 1, next_flag = 1;
  if (reserved > end - p || !bytes.load(end - reserved, after) || !bytes.load(end, next_flag) ||
      after != 0 || next_flag != 0)
    return "the bytes after the allocation are not the zeros malloc leaves";
  usable = end - reserved - p;
  return nullptr;
}

/// The user pointer of used slot `index` of `g`, which starts at `start`, and its usable size;
/// else why the header is not valid. A slot start holding an offset header (code 7: a cycled
/// offset, or aligned_alloc) points at the user pointer in units of 16 bytes, modulo 2^16 when
/// aligned_alloc moved it 1 MiB or more (aligned_alloc.c stores it truncated), so each candidate
/// 1 MiB apart is tried.
const char *decodeUsedSlot(const GroupBytes &bytes, const Group &g, unsigned index, uint64_t start,
                           uint64_t end, uint64_t &p, uint64_t &usable) {
  uint8_t code_index = 0;
  uint16_t units = 0;
  if (!bytes.load(start - 3, code_index) || !bytes.load(start - 2, units))
    return "the slot header is not captured";
  if ((code_index >> kCodeShift) != kCodeOffset) {
    p = start;
    return userPointerProblem(bytes, g, index, end, p, usable);
  }
  const char *first_why = nullptr;
  for (uint64_t candidate = start + kUnit * units; candidate <= end; candidate += kUnit * 0x10000) {
    const char *why = userPointerProblem(bytes, g, index, end, candidate, usable);
    if (!why) {
      p = candidate;
      return nullptr;
    }
    if (!first_why)
      first_why = why;
  }
  return first_why ? first_why : "the slot's offset header points past the slot";
}

/// Where the user data of the free slot at `start` began: the pointer free() marked (0xff before
/// it) when the slot start's offset header still leads to it, else the slot start.
uint64_t freeSlotAddress(const GroupBytes &bytes, uint64_t start, uint64_t end) {
  uint8_t code_index = 0, mark = 0;
  uint16_t units = 0;
  if (!bytes.load(start - 3, code_index) || (code_index >> kCodeShift) != kCodeOffset ||
      !bytes.load(start - 2, units))
    return start;
  const uint64_t p = start + kUnit * units;
  return p <= end && bytes.load(p - 3, mark) && mark == kFreedSlot ? p : start;
}

/// The kind of area a group walked at the top level claims.
const char *areaKind(const Group &g) {
  if (g.ownMapping())
    return g.last_idx == 0 ? "mmapped" : "group";
  return g.freeable ? "nested-group" : "donated";
}

/// Adjacent areas of one kind become one.
void mergeAreas(std::vector<HeapArea> &areas) {
  std::stable_sort(areas.begin(), areas.end(),
                   [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
  std::vector<HeapArea> merged;
  for (HeapArea &a : areas) {
    if (!merged.empty() && merged.back().kind == a.kind &&
        merged.back().start + merged.back().size == a.start)
      merged.back().size += a.size;
    else
      merged.push_back(std::move(a));
  }
  areas = std::move(merged);
}

/// One walk over the sorted groups: emits every slot, in address order.
class SlotWalk {
public:
  SlotWalk(const AddressSpace &memory, const Context &ctx, const std::vector<Group> &groups,
           AllocationSink sink, HeapWalkResult &result, Diagnostics &diags)
      : memory_(memory), ctx_(ctx), groups_(groups), sink_(sink), result_(result), diags_(diags) {
    a_.arena = ctx.address;
  }

  /// Walks every group not nested in another, and what nests in it; then warns about groups that
  /// overlap others and nested groups no walked slot holds.
  void run() {
    uint64_t walked_to = 0;
    while (next_ < groups_.size()) {
      const Group &g = groups_[next_++];
      if (g.mem < walked_to) {
        countOverlap(g);
        continue;
      }
      walkGroup(g);
      result_.areas.push_back({areaKind(g), g.mem, g.claimEnd() - g.mem, ctx_.address});
      if (g.ownMapping())
        g.last_idx == 0 ? ++single_slot_mappings : ++mapped_groups;
      else if (!g.freeable)
        ++donated_groups;
      else if (orphans++ == 0)
        first_orphan_ = g.mem;
      walked_to = g.claimEnd();
    }
    if (overlaps)
      diags_.warn(hexAddress(first_overlap_), "group lies inside memory another group claims (" +
                                                  std::to_string(overlaps) +
                                                  " such groups are not walked)");
    if (orphans)
      diags_.warn(hexAddress(first_orphan_),
                  "group has no mapping of its own but lies in no walked group's slot (" +
                      std::to_string(orphans) + " such groups are walked on their own)");
  }

  uint64_t slots = 0, nested_groups = 0, mapped_groups = 0, single_slot_mappings = 0,
           donated_groups = 0, orphans = 0, overlaps = 0, unknown_slots = 0;

private:
  /// Emits the slots of `g`, and in place of a slot holding a nested group, that group's slots.
  void walkGroup(const Group &g) {
    const uint64_t stride = g.stride();
    const GroupBytes bytes(memory_, g.mem, g.slotsEnd());
    const uint32_t free_mask = g.avail_mask | g.freed_mask;
    unsigned bad = 0;
    uint64_t first_bad = 0;
    const char *first_why = nullptr;
    for (unsigned i = 0; i < g.slots(); ++i) {
      const uint64_t start = g.mem + kGroupHeader + stride * i;
      const uint64_t end = start + stride - kInBand;
      while (next_ < groups_.size() && groups_[next_].mem < start)
        countOverlap(groups_[next_++]);
      if (next_ < groups_.size() && nestsIn(groups_[next_], g, start, stride)) {
        ++nested_groups;
        walkGroup(groups_[next_++]);
        continue;
      }
      a_.chunk_address = start;
      a_.chunk_size = stride;
      a_.mmapped = g.ownMapping() && g.last_idx == 0;
      if (free_mask >> i & 1) {
        a_.address = freeSlotAddress(bytes, start, end);
        a_.size = end - a_.address;
        a_.state = AllocState::Free;
      } else if (const char *why = decodeUsedSlot(bytes, g, i, start, end, a_.address, a_.size)) {
        // In use by the masks, but malloc or free was midway, or the header is damaged.
        if (bad++ == 0)
          first_bad = start, first_why = why;
        a_.address = start;
        a_.size = end - start;
        a_.state = AllocState::Unknown;
      } else {
        a_.state = AllocState::Used;
      }
      sink_(0, a_); // one thread: lane 0
      result_.stats.add(a_);
      ++slots;
    }
    if (bad) {
      unknown_slots += bad;
      diags_.warn(hexAddress(first_bad), std::string(first_why) + " (" + std::to_string(bad) +
                                             " used slots of the " + "group at " +
                                             hexAddress(g.mem) + " are reported unknown)");
    }
  }

  /// True when `inner` is a group nested in the slot at `start` of `outer`: it lies inside the
  /// slot, has no mapping of its own and a smaller size class (so nesting is at most 48 deep).
  static bool nestsIn(const Group &inner, const Group &outer, uint64_t start, uint64_t stride) {
    return inner.mem >= start && inner.mem < start + stride && inner.slotsEnd() <= start + stride &&
           !inner.ownMapping() && inner.freeable && outer.sizeclass < kClasses &&
           inner.sizeclass < outer.sizeclass;
  }

  /// Counts a group that starts inside memory already walked; it is not walked.
  void countOverlap(const Group &g) {
    if (overlaps++ == 0)
      first_overlap_ = g.mem;
  }

  const AddressSpace &memory_;
  const Context &ctx_;
  const std::vector<Group> &groups_;
  AllocationSink sink_;
  HeapWalkResult &result_;
  Diagnostics &diags_;
  Allocation a_; // reused: no per-slot construction
  size_t next_ = 0;
  uint64_t first_overlap_ = 0, first_orphan_ = 0;
};

class MuslWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "musl"; }

  /// Linux processes of 64-bit little-endian words; musl names no module of its own (a static
  /// binary holds it), and its slots are size classes.
  const WalkerTraits &traits() const override {
    static const WalkerTraits traits{.platforms = Platforms::littleEndian64({Os::Linux}),
                                     .modules = {},
                                     .requests = nullptr,
                                     .thresholds = {}};
    return traits;
  }

  /// True when the process holds musl's malloc context.
  bool detect(const AddressSpace &memory) const override { return findContext(memory).has_value(); }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions & /*one thread*/) const override {
    std::optional<Context> ctx = findContext(memory);
    if (!ctx)
      return createError("no musl malloc context found (a 64-bit process whose "
                         "__malloc_context holds the secret of its meta areas)");
    if (ctx->candidates > 1)
      diags.warn(hexAddress(ctx->address),
                 std::to_string(ctx->candidates) +
                     " places look like musl's malloc context; the first is walked");
    Plan plan = collectGroups(memory, *ctx, diags);
    HeapWalkResult result;
    SlotWalk slots(memory, *ctx, plan.groups, sink, result, diags);
    slots.run();
    result.areas.insert(result.areas.end(), plan.meta_areas.begin(), plan.meta_areas.end());
    mergeAreas(result.areas);

    auto fact = [&](const char *key, std::string value) {
      result.facts.emplace_back(key, std::move(value));
    };
    fact("malloc_context", hexAddress(ctx->address) + " (in " + ctx->where + ")");
    fact("mallocng_layout", "1.2.1-1.2.5, 64-bit");
    fact("meta_areas", std::to_string(plan.meta_areas.size()));
    fact("groups", std::to_string(plan.groups.size() - slots.overlaps));
    fact("mapped_groups", std::to_string(slots.mapped_groups));
    fact("single_slot_mappings", std::to_string(slots.single_slot_mappings));
    fact("nested_groups", std::to_string(slots.nested_groups));
    fact("donated_groups", std::to_string(slots.donated_groups));
    fact("slots", std::to_string(slots.slots));
    if (plan.metas_rejected)
      fact("metas_rejected", std::to_string(plan.metas_rejected));
    if (slots.overlaps)
      fact("groups_overlapping", std::to_string(slots.overlaps));
    if (slots.unknown_slots)
      fact("unknown_slots", std::to_string(slots.unknown_slots));
    return result;
  }
};

} // namespace

std::unique_ptr<HeapWalker> makeMuslWalker() {
  return std::make_unique<MuslWalker>();
}

} // namespace dumpsift
