// Finding musl mallocng's context and groups in a dump without symbols.
//
// A static binary names no libc, so the context is found by what it holds: init_done == 1, the
// secret, and the head of the meta-area chain, a captured page that starts with that same secret
// and holds 101 metas. It lives in the data or .bss of the executable (static) or of libc.so
// (dynamic), which is all that is scanned. The chain then gives every struct meta; a meta describes
// a live group when the group's header points back at it.
#include "dumpsift/support/hex.h"
#include "musl_model.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <string_view>

namespace dumpsift::musl {

namespace {

/// The largest mapping a meta may claim, in pages (2^48 bytes: the user address space).
constexpr uint64_t kMaxMapPages = uint64_t(1) << 36;

/// Why the page at `addr` is not a meta area carrying `secret` (nullptr when it is one); `bytes`
/// gets its captured bytes.
const char *areaProblem(const AddressSpace &memory, uint64_t addr, uint64_t secret,
                        const uint8_t *&bytes) {
  if (addr % kAreaSize != 0)
    return "meta area is not page-aligned";
  bytes = memory.tryView(addr, kAreaSize);
  if (!bytes)
    return "meta area is not captured";
  if (read64le(bytes + kAreaCheck) != secret)
    return "meta area's check word is not the context's secret";
  if (read32le(bytes + kAreaNslots) != kMetasPerArea)
    return "meta area does not hold 101 metas";
  return nullptr;
}

/// The regions that may hold ctx, by index: writable data backed by a file and the anonymous
/// memory right after it (a .bss); every writable region but stacks when no region names a file.
std::vector<bool> contextRegions(const Snapshot &snap, std::vector<std::string> &where) {
  const bool files_known = std::any_of(snap.regions.begin(), snap.regions.end(),
                                       [](const Region &r) { return !r.backing_file.empty(); });
  std::vector<bool> wanted(snap.regions.size(), false);
  where.assign(snap.regions.size(), "");
  for (size_t i = 0; i < snap.regions.size(); ++i) {
    const Region &r = snap.regions[i];
    const bool perms_known = r.perms.read || r.perms.write || r.perms.execute;
    if (perms_known && !r.perms.write)
      continue;
    if (!files_known) {
      wanted[i] = r.cls != RegionClass::Stack;
      where[i] = "anonymous memory";
    } else if (!r.backing_file.empty()) {
      wanted[i] = true;
      where[i] = "the data of " + r.backing_file;
    } else if (i > 0 && snap.regions[i - 1].end() == r.start &&
               !snap.regions[i - 1].backing_file.empty()) {
      wanted[i] = true;
      where[i] = "the .bss after " + snap.regions[i - 1].backing_file;
    }
  }
  return wanted;
}

/// Why the meta `m` (its 40 bytes, read at `meta`) describes no valid group, nullptr when it
/// does; fills `g` either way.
const char *groupProblem(const AddressSpace &memory, uint64_t meta, const uint8_t *m, Group &g) {
  g.meta = meta;
  g.mem = read64le(m + kMetaMem);
  const uint64_t bits = read64le(m + kMetaBits);
  g.last_idx = bits & 31;
  g.freeable = (bits >> 5) & 1;
  g.sizeclass = (bits >> 6) & 63;
  g.maplen = bits >> 12;
  const uint32_t slots_mask = uint32_t((uint64_t(2) << g.last_idx) - 1);
  g.avail_mask = read32le(m + kMetaAvailMask) & slots_mask;
  g.freed_mask = read32le(m + kMetaFreedMask) & slots_mask;
  if (g.mem % kUnit != 0)
    return "group address is not 16-aligned";
  if (g.sizeclass >= kClasses && g.sizeclass != kMmapClass)
    return "size class does not exist";
  if (g.sizeclass == kMmapClass && (g.last_idx != 0 || g.maplen == 0))
    return "an allocation in its own mapping has several slots or no mapping";
  if (g.maplen > kMaxMapPages || g.mem > UINT64_MAX - (kMaxMapPages + 1) * kPageUnit)
    return "group mapping is too large";
  if (g.slotsEnd() > g.claimEnd())
    return "slots run past the group's mapping";
  const Region *region = memory.regionContaining(g.mem);
  if (!region || g.claimEnd() > region->end())
    return "group runs past the mapping that holds it";
  uint64_t back = 0;
  if (!memory.readU64(g.mem, back))
    return "group header is not captured";
  if (back != meta)
    return "group header does not point back at the meta";
  return nullptr;
}

/// Keeps the valid groups of the meta area at `area` (its bytes `bytes`) in `plan`. Each reason
/// for rejecting metas is one warning, naming the first meta it rejected and how many.
void readArea(const AddressSpace &memory, uint64_t area, const uint8_t *bytes, Plan &plan,
              Diagnostics &diags) {
  struct Rejection {
    std::string_view why;
    uint64_t first_meta;
    unsigned count;
  };
  std::vector<Rejection> rejections; // a handful of distinct reasons at most
  for (uint32_t k = 0; k < kMetasPerArea; ++k) {
    const uint64_t offset = kAreaSlots + uint64_t(k) * kMetaSize;
    const uint8_t *m = bytes + offset;
    if (read64le(m + kMetaMem) == 0)
      continue; // never used, or freed (free_meta zeroes it)
    Group g;
    const char *why = groupProblem(memory, area + offset, m, g);
    if (!why) {
      plan.groups.push_back(g);
      continue;
    }
    ++plan.metas_rejected;
    auto it = std::find_if(rejections.begin(), rejections.end(),
                           [&](const Rejection &r) { return r.why == why; });
    if (it == rejections.end())
      rejections.push_back({why, area + offset, 1});
    else
      ++it->count;
  }
  for (const Rejection &r : rejections)
    diags.warn(hexAddress(r.first_meta), std::string(r.why) + " (" + std::to_string(r.count) +
                                             " metas of the meta area at " + hexAddress(area) +
                                             "; their groups are not walked)");
}

} // namespace

std::optional<Context> findContext(const AddressSpace &memory) {
  const Snapshot &snap = memory.snapshot();
  std::vector<std::string> where;
  const std::vector<bool> wanted = contextRegions(snap, where);
  std::optional<Context> found;
  for (const MemoryRange &range : snap.memory) {
    const Region *region = memory.regionContaining(range.start);
    if (!region || !wanted[size_t(region - snap.regions.data())])
      continue;
    const uint8_t *bytes = range.bytes.data();
    const uint64_t size = range.bytes.size();
    // The whole struct lies in the range: it is in one data segment or .bss.
    for (uint64_t at = (8 - range.start % 8) % 8; size >= kCtxSize && at <= size - kCtxSize;
         at += 8) {
      if (read32le(bytes + at + kCtxInitDone) != 1)
        continue;
      const uint64_t secret = read64le(bytes + at + kCtxSecret);
      const uint64_t head = read64le(bytes + at + kCtxMetaAreaHead);
      const uint64_t tail = read64le(bytes + at + kCtxMetaAreaTail);
      const uint8_t *area = nullptr;
      if (secret == 0 || head == 0 || tail == 0 || tail % kAreaSize != 0 ||
          areaProblem(memory, head, secret, area))
        continue;
      if (found) {
        ++found->candidates;
        continue;
      }
      found = Context{
          range.start + at, secret, head, tail, where[size_t(region - snap.regions.data())], 1};
    }
  }
  return found;
}

Plan collectGroups(const AddressSpace &memory, const Context &ctx, Diagnostics &diags) {
  Plan plan;
  llvm::DenseSet<uint64_t> seen; // page-aligned: never DenseSet's reserved keys
  uint64_t area = ctx.meta_area_head, last = 0;
  while (area) {
    const uint8_t *bytes = nullptr;
    if (const char *why = areaProblem(memory, area, ctx.secret, bytes)) {
      diags.warn(hexAddress(area),
                 std::string(why) + " (the meta-area chain stops here; its metas are not read)");
      break;
    }
    if (!seen.insert(area).second) {
      diags.warn(hexAddress(area), "the meta-area chain loops back here; it is not read again");
      break;
    }
    plan.meta_areas.push_back({"meta-area", area, kAreaSize, ctx.address});
    readArea(memory, area, bytes, plan, diags);
    last = area;
    area = read64le(bytes + kAreaNext);
  }
  if (last != ctx.meta_area_tail)
    diags.warn(hexAddress(ctx.meta_area_tail),
               "the meta-area chain ends at " + hexAddress(last) +
                   " before reaching the context's tail area; groups described past it are missed");
  std::sort(plan.groups.begin(), plan.groups.end(),
            [](const Group &a, const Group &b) { return a.mem < b.mem; });
  return plan;
}

} // namespace dumpsift::musl
