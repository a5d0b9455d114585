#include "dumpsift/support/hex.h"
#include "dumpsift/support/utf8.h"
#include "readers.h"

#include <algorithm>

namespace dumpsift::detail {

namespace {

// Keeps the first of any overlapping items (sorted by start) and warns about the others.
template <typename T, typename EndFn>
void dropOverlaps(std::vector<T> &items, EndFn end, Diagnostics &diags, const char *what) {
  std::stable_sort(items.begin(), items.end(),
                   [](const T &a, const T &b) { return a.start < b.start; });
  std::vector<T> kept;
  kept.reserve(items.size());
  for (T &item : items) {
    if (!kept.empty() && item.start < end(kept.back())) {
      diags.warn(std::string(what) + " at " + hexAddress(item.start),
                 "overlaps the one at " + hexAddress(kept.back().start) + "; ignored");
      continue;
    }
    kept.push_back(std::move(item));
  }
  items = std::move(kept);
}

// Marks the threads' stacks: the Anonymous or Other regions that lie inside a thread's known stack
// range, and the one holding its stack pointer, become Stack. A thread with no known range takes
// the range of the region holding its stack pointer. Stack ranges are merged first, so the work is
// bounded by threads plus regions however many threads claim the same memory.
void markThreadStacks(Snapshot &snapshot) {
  std::vector<Region> &regions = snapshot.regions;
  auto regionHolding = [&](uint64_t addr) -> Region * {
    auto it = std::upper_bound(regions.begin(), regions.end(), addr,
                               [](uint64_t a, const Region &r) { return a < r.start; });
    if (it == regions.begin() || addr >= std::prev(it)->end())
      return nullptr;
    return &*std::prev(it);
  };
  auto mayBeStack = [](const Region &r) {
    return r.cls == RegionClass::Anonymous || r.cls == RegionClass::Other;
  };
  struct Span {
    uint64_t start, end;
    RegionSource source;
  };
  std::vector<Span> spans;
  for (Thread &t : snapshot.threads) {
    Region *holding = regionHolding(t.stack_pointer);
    if (holding && t.stack_start == 0 && t.stack_end == 0) {
      t.stack_start = holding->start;
      t.stack_end = holding->end();
      t.stack_source = RegionSource::StackPointer;
    }
    bool in_range = t.stack_pointer >= t.stack_start && t.stack_pointer < t.stack_end;
    if (holding && mayBeStack(*holding)) {
      holding->cls = RegionClass::Stack;
      holding->class_source = in_range ? t.stack_source : RegionSource::StackPointer;
    }
    if (t.stack_end > t.stack_start)
      spans.push_back({t.stack_start, t.stack_end, t.stack_source});
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span &a, const Span &b) { return a.start < b.start; });
  std::vector<Span> merged;
  for (const Span &s : spans) {
    if (!merged.empty() && s.start <= merged.back().end)
      merged.back().end = std::max(merged.back().end, s.end);
    else
      merged.push_back(s);
  }
  auto r = regions.begin();
  for (const Span &s : merged) {
    r = std::lower_bound(r, regions.end(), s.start,
                         [](const Region &region, uint64_t a) { return region.start < a; });
    for (; r != regions.end() && r->end() <= s.end; ++r)
      if (mayBeStack(*r)) {
        r->cls = RegionClass::Stack;
        r->class_source = s.source;
      }
  }
}

} // namespace

void finalizeSnapshot(Snapshot &snapshot) {
  Diagnostics &diags = snapshot.diagnostics;
  // Names read from the dump may hold any bytes; the reports need valid UTF-8.
  makeValidUtf8(snapshot.path);
  makeValidUtf8(snapshot.system.os);
  makeValidUtf8(snapshot.system.arch);
  makeValidUtf8(snapshot.process.name);
  makeValidUtf8(snapshot.process.command_line);
  for (Module &m : snapshot.modules) {
    makeValidUtf8(m.path);
    makeValidUtf8(m.build_id);
  }
  for (Region &r : snapshot.regions)
    makeValidUtf8(r.backing_file);
  // Empty or wrapping ranges say nothing useful.
  std::erase_if(snapshot.regions,
                [&](const Region &r) { return r.size == 0 || r.start + r.size < r.start; });
  std::erase_if(snapshot.memory, [&](const MemoryRange &m) {
    return m.bytes.empty() || m.start + m.bytes.size() < m.start;
  });
  dropOverlaps(
      snapshot.regions, [](const Region &r) { return r.end(); }, diags, "region");
  dropOverlaps(
      snapshot.memory, [](const MemoryRange &m) { return m.end(); }, diags, "memory range");

  // Captured bytes that no region describes get a region of their own, so every captured byte
  // belongs to exactly one region.
  std::vector<Region> extra;
  size_t ri = 0;
  for (const MemoryRange &m : snapshot.memory) {
    uint64_t cursor = m.start;
    while (cursor < m.end()) {
      while (ri < snapshot.regions.size() && snapshot.regions[ri].end() <= cursor)
        ++ri;
      uint64_t gap_end = m.end();
      if (ri < snapshot.regions.size()) {
        const Region &r = snapshot.regions[ri];
        if (r.start <= cursor) {
          cursor = std::min(m.end(), r.end());
          continue;
        }
        gap_end = std::min(gap_end, r.start);
      }
      Region region;
      region.start = cursor;
      region.size = gap_end - cursor;
      region.perms.read = true;
      region.cls = RegionClass::Other;
      extra.push_back(region);
      cursor = gap_end;
    }
  }
  if (!extra.empty()) {
    snapshot.regions.insert(snapshot.regions.end(), extra.begin(), extra.end());
    std::sort(snapshot.regions.begin(), snapshot.regions.end(),
              [](const Region &a, const Region &b) { return a.start < b.start; });
  }

  // Captured bytes per region: one merge pass over both sorted lists.
  size_t mi = 0;
  for (Region &r : snapshot.regions) {
    r.captured = 0;
    while (mi < snapshot.memory.size() && snapshot.memory[mi].end() <= r.start)
      ++mi;
    for (size_t j = mi; j < snapshot.memory.size() && snapshot.memory[j].start < r.end(); ++j) {
      uint64_t lo = std::max(r.start, snapshot.memory[j].start);
      uint64_t hi = std::min(r.end(), snapshot.memory[j].end());
      if (hi > lo)
        r.captured += hi - lo;
    }
  }

  markThreadStacks(snapshot);
}

} // namespace dumpsift::detail
