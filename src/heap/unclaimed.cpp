// Unclaimed memory: captured heap/anonymous bytes minus every walker's areas.
#include "dumpsift/heap/unclaimed.h"

#include "dumpsift/support/intervals.h"

#include <algorithm>

namespace dumpsift {

std::vector<UnclaimedRange> unclaimedRanges(const Snapshot &snapshot,
                                            llvm::ArrayRef<HeapArea> areas) {
  std::vector<Interval> claimed;
  claimed.reserve(areas.size());
  for (const HeapArea &a : areas)
    if (a.size && a.start + a.size > a.start)
      claimed.emplace_back(a.start, a.start + a.size);
  mergeIntervals(claimed);

  std::vector<UnclaimedRange> out;
  // Memory ranges, regions and claims are all sorted and disjoint: one pass over the three.
  size_t ri = 0, ci = 0;
  for (const MemoryRange &m : snapshot.memory) {
    while (ri < snapshot.regions.size() && snapshot.regions[ri].end() <= m.start)
      ++ri;
    for (size_t r = ri; r < snapshot.regions.size() && snapshot.regions[r].start < m.end(); ++r) {
      const Region &region = snapshot.regions[r];
      if (region.cls != RegionClass::Heap && region.cls != RegionClass::Anonymous)
        continue;
      uint64_t lo = std::max(m.start, region.start);
      const uint64_t hi = std::min(m.end(), region.end());
      while (ci < claimed.size() && claimed[ci].second <= lo)
        ++ci;
      for (size_t c = ci; lo < hi; ++c) {
        const uint64_t gap_end = c < claimed.size() ? std::min(hi, claimed[c].first) : hi;
        if (gap_end > lo)
          out.push_back({lo, gap_end - lo, region.cls});
        if (c == claimed.size())
          break;
        lo = std::max(lo, claimed[c].second);
      }
    }
  }
  return out;
}

} // namespace dumpsift
