// Address intervals: what the heap walkers claim, sorted and merged once so that what is left can
// be found in one pass.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace dumpsift {

/// The addresses [first, second).
using Interval = std::pair<uint64_t, uint64_t>;

/// Sorts `intervals` and merges every one that overlaps or touches the one before it: the result
/// is sorted and disjoint, and covers the same addresses.
void mergeIntervals(std::vector<Interval> &intervals);

} // namespace dumpsift
