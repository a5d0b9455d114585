#include "dumpsift/support/intervals.h"

#include <algorithm>

namespace dumpsift {

void mergeIntervals(std::vector<Interval> &intervals) {
  std::sort(intervals.begin(), intervals.end());
  size_t kept = 0;
  for (const Interval &next : intervals) {
    if (kept && next.first <= intervals[kept - 1].second)
      intervals[kept - 1].second = std::max(intervals[kept - 1].second, next.second);
    else
      intervals[kept++] = next;
  }
  intervals.resize(kept);
}

} // namespace dumpsift
