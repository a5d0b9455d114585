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
/// other fields): the stable sort of the lanes' rows one lane after another. Each lane is cut
/// into its runs of rows already in order (a walker gives each heap area's rows in order; a lane
/// that walked several areas, or two walkers' areas, holds a run per stretch), and the runs are
/// merged, the earlier run first among equal rows: no row is copied but into the result, so the
/// heap holds the runs' bounds only (the heap listing of ten million rows used to gather them
/// all in one vector to sort it). O(rows x log(runs)). `Rows` is a container with size(),
/// operator[] and push_back (std::vector, ListedRows).
template <typename Rows, typename Before>
Rows mergeByAddress(std::vector<Rows> lanes, Before before) {
  std::erase_if(lanes, [](const Rows &rows) { return rows.size() == 0; });
  struct Run {
    size_t lane, next, end; // rows [next, end) of lanes[lane] are left
  };
  std::vector<Run> runs; // in the order of the lanes' rows one lane after another
  for (size_t l = 0; l < lanes.size(); ++l) {
    size_t begin = 0;
    for (size_t i = 1; i <= lanes[l].size(); ++i)
      if (i == lanes[l].size() || before(lanes[l][i], lanes[l][i - 1])) {
        runs.push_back({l, begin, i});
        begin = i;
      }
  }
  if (runs.size() <= 1)
    return lanes.empty() ? Rows() : std::move(lanes.front());
  // A heap of run indices, the run whose next row comes first on top (the earlier run on a tie).
  auto later = [&](size_t a, size_t b) {
    const auto &row_a = lanes[runs[a].lane][runs[a].next];
    const auto &row_b = lanes[runs[b].lane][runs[b].next];
    if (before(row_b, row_a))
      return true;
    return !before(row_a, row_b) && a > b;
  };
  std::vector<size_t> heap(runs.size());
  for (size_t r = 0; r < runs.size(); ++r)
    heap[r] = r;
  std::make_heap(heap.begin(), heap.end(), later);
  Rows merged;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Run &run = runs[heap.back()];
    merged.push_back(std::move(lanes[run.lane][run.next++]));
    if (run.next < run.end)
      std::push_heap(heap.begin(), heap.end(), later);
    else
      heap.pop_back();
  }
  return merged;
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
