// The walk the analysis and the heap listing both start with: every heap walked on the options'
// threads, the allocations that pass the size and state filters kept by the lane (thread) that
// walked them, the lanes merged by address. Internal to the analysis layer.
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/heap/walk.h"
#include "dumpsift/holders/holders.h"
#include "dumpsift/support/parallel.h"

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace dumpsift::detail {

/// True when `a` passes the size and state filters of `options` (--min-size, --max-size,
/// --state).
inline bool passesSizeAndState(const AnalyzeOptions &options, const Allocation &a) {
  if (a.size < options.min_size || a.size > options.max_size)
    return false;
  return !options.state || *options.state == a.state;
}

/// The rows of every lane in the order `before` sets (an order by address, ties broken by the
/// other fields): lanes that each hold their rows in that order are merged, lowest lane first
/// among equals, else all rows are sorted stably in lane order. Either way the result is the
/// stable sort of the lanes' rows one lane after another. `Rows` is a container with size(),
/// operator[] and push_back (std::vector, ListedRows).
template <typename Rows, typename Before>
Rows mergeByAddress(std::vector<Rows> lanes, Before before) {
  using Row = std::decay_t<decltype(lanes.front()[0])>;
  std::erase_if(lanes, [](const Rows &rows) { return rows.size() == 0; });
  if (lanes.empty())
    return Rows();
  auto sorted = [&](const Rows &rows) {
    for (size_t i = 1; i < rows.size(); ++i)
      if (before(rows[i], rows[i - 1]))
        return false;
    return true;
  };
  const bool all_sorted = std::all_of(lanes.begin(), lanes.end(), sorted);
  if (lanes.size() == 1 && all_sorted)
    return std::move(lanes.front());
  Rows merged;
  if (all_sorted) {
    std::vector<size_t> next(lanes.size(), 0);
    while (true) {
      size_t best = lanes.size();
      for (size_t l = 0; l < lanes.size(); ++l)
        if (next[l] < lanes[l].size() &&
            (best == lanes.size() || before(lanes[l][next[l]], lanes[best][next[best]])))
          best = l;
      if (best == lanes.size())
        break;
      merged.push_back(std::move(lanes[best][next[best]++]));
    }
    return merged;
  }
  std::vector<Row> all;
  for (Rows &rows : lanes)
    for (size_t i = 0; i < rows.size(); ++i)
      all.push_back(std::move(rows[i]));
  lanes.clear();
  std::stable_sort(all.begin(), all.end(), before);
  if constexpr (std::is_same_v<Rows, std::vector<Row>>) {
    return all;
  } else {
    for (Row &row : all)
      merged.push_back(std::move(row));
    return merged;
  }
}

/// What keepWalked keeps: the walkers' results, the rows, and how many allocations were seen.
template <typename Rows> struct KeptWalk {
  std::vector<HeapWalkResult> heaps;
  Rows rows;
  uint64_t seen = 0; // every allocation the walkers reported
};

/// Walks the heaps of the walkers `options` names (walkHeaps) on options.threads threads; each
/// allocation that passes its size and state filters becomes the row make(heap, allocation) in
/// the lane of the thread that walked it, and the lanes are merged by `before`
/// (mergeByAddress): the rows are the same for every thread count. Every allocation also goes to
/// `directory` when given (the holders pass's nodes).
template <typename Rows, typename Make, typename Before>
KeptWalk<Rows> keepWalked(const AddressSpace &memory, const AnalyzeOptions &options,
                          Diagnostics &diags, ProgressFn progress, Make make, Before before,
                          BlockDirectoryBuilder *directory = nullptr) {
  struct alignas(64) Lane {
    Rows rows;
    uint64_t seen = 0;
  };
  std::vector<Lane> lanes(resolveThreads(options.threads));
  KeptWalk<Rows> kept;
  kept.heaps = walkHeaps(
      memory, options.walkers,
      [&](unsigned lane, uint16_t heap, const Allocation &a) {
        Lane &l = lanes[lane];
        ++l.seen;
        if (directory)
          directory->add(lane, heap, a);
        if (passesSizeAndState(options, a))
          l.rows.push_back(make(heap, a));
      },
      diags, progress, options.threads);
  std::vector<Rows> rows;
  for (Lane &l : lanes) {
    kept.seen += l.seen;
    rows.push_back(std::move(l.rows));
  }
  lanes.clear();
  kept.rows = mergeByAddress(std::move(rows), before);
  return kept;
}

} // namespace dumpsift::detail
