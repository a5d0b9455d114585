// Unclaimed memory: captured heap/anonymous bytes minus every walker's areas.
#include "dumpsift/heap/unclaimed.h"

#include <algorithm>

namespace dumpsift {

std::vector<UnclaimedRange> unclaimedRanges(const Snapshot &snapshot,
                                            llvm::ArrayRef<HeapArea> areas) {
  // Claimed intervals, sorted and merged.
  std::vector<std::pair<uint64_t, uint64_t>> claimed;
  claimed.reserve(areas.size());
  for (const HeapArea &a : areas)
    if (a.size && a.start + a.size > a.start)
      claimed.emplace_back(a.start, a.start + a.size);
  std::sort(claimed.begin(), claimed.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto &c : claimed) {
    if (!merged.empty() && c.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, c.second);
    else
      merged.push_back(c);
  }

  std::vector<UnclaimedRange> out;
  auto emit = [&](uint64_t lo, uint64_t hi, RegionClass cls) {
    if (hi <= lo)
      return;
    if (!out.empty() && out.back().end() == lo && out.back().cls == cls)
      out.back().size += hi - lo;
    else
      out.push_back({lo, hi - lo, cls});
  };
  // Memory ranges and regions are both sorted and disjoint; walk them together.
  size_t ri = 0, ci = 0;
  for (const MemoryRange &m : snapshot.memory) {
    uint64_t cursor = m.start;
    while (cursor < m.end()) {
      while (ri < snapshot.regions.size() && snapshot.regions[ri].end() <= cursor)
        ++ri;
      if (ri == snapshot.regions.size())
        break;
      const Region &r = snapshot.regions[ri];
      if (r.start > cursor) { // bytes outside every region: finalizeSnapshot never leaves any
        cursor = std::min(m.end(), r.start);
        continue;
      }
      uint64_t piece_end = std::min(m.end(), r.end());
      if (r.cls == RegionClass::Heap || r.cls == RegionClass::Anonymous) {
        uint64_t lo = cursor;
        while (ci < merged.size() && merged[ci].second <= lo)
          ++ci;
        for (size_t k = ci; lo < piece_end; ++k) {
          if (k == merged.size() || merged[k].first >= piece_end) {
            emit(lo, piece_end, r.cls);
            break;
          }
          emit(lo, std::max(lo, merged[k].first), r.cls);
          lo = std::max(lo, merged[k].second);
        }
      }
      cursor = piece_end;
    }
  }
  return out;
}

} // namespace dumpsift
