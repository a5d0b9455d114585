// `dumpsift heap DUMP`: every heap a walker recognises, and its allocations by address
// (docs/cli.md).
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/report/heap_listing.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/parallel.h"
#include "options.h"
#include "progress.h"
#include "tool.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <tuple>

namespace dumpsift::tool {

namespace {
/// The order of the listing: by address (a walker's areas do not overlap; the rest of the fields
/// order what two walkers both claim, whatever thread walked it).
bool rowBefore(const ListedAllocation &a, const ListedAllocation &b) {
  return std::tie(a.address, a.heap, a.chunk, a.size, a.arena, a.state, a.mmapped) <
         std::tie(b.address, b.heap, b.chunk, b.size, b.arena, b.state, b.mmapped);
}

bool sortedRows(const ListedRows &rows) {
  for (size_t i = 1; i < rows.size(); ++i)
    if (rowBefore(rows[i], rows[i - 1]))
      return false;
  return true;
}

/// The rows of every lane, by address: a lane that holds all the rows in order as it is (a single
/// walker on one thread, or all of one span), lanes in order merged, else all sorted.
ListedRows mergeByAddress(std::vector<ListedRows> lanes) {
  std::erase_if(lanes, [](const ListedRows &rows) { return rows.empty(); });
  if (lanes.empty())
    return {};
  const bool all_sorted = std::all_of(lanes.begin(), lanes.end(), sortedRows);
  if (lanes.size() == 1 && all_sorted)
    return std::move(lanes.front());
  ListedRows merged;
  if (all_sorted) {
    // Each walking thread took areas in address order, so each lane is sorted.
    std::vector<size_t> next(lanes.size(), 0);
    while (true) {
      size_t best = lanes.size();
      for (size_t l = 0; l < lanes.size(); ++l)
        if (next[l] < lanes[l].size() &&
            (best == lanes.size() || rowBefore(lanes[l][next[l]], lanes[best][next[best]])))
          best = l;
      if (best == lanes.size())
        break;
      merged.push_back(lanes[best][next[best]++]);
    }
    return merged;
  }
  std::vector<ListedAllocation> all;
  for (const ListedRows &rows : lanes)
    for (size_t i = 0; i < rows.size(); ++i)
      all.push_back(rows[i]);
  lanes.clear();
  std::stable_sort(all.begin(), all.end(), rowBefore);
  for (const ListedAllocation &row : all)
    merged.push_back(row);
  return merged;
}

struct HeapArgs {
  std::string dump;
  AnalyzeArgs filters; // only the size, state and walker filters are offered
  bool json = false;
  bool quiet = false;
  std::string exe;
};

llvm::Expected<int> runHeap(const HeapArgs &args) {
  llvm::Expected<AnalyzeOptions> filters = resolveAnalyzeOptions(args.filters);
  if (!filters)
    return filters.takeError();
  auto snapshot = openDump(args.dump);
  if (!snapshot)
    return llvm::createFileError(args.dump, snapshot.takeError());
  (*snapshot)->executable_file = args.exe;
  AddressSpace memory(**snapshot);
  Progress progress(!args.quiet && stderrIsTerminal());

  HeapListing listing;
  listing.min_size = filters->min_size;
  // Each walking thread keeps its rows in its own lane; the lanes are merged by address after.
  struct alignas(64) Lane {
    ListedRows rows;
  };
  std::vector<Lane> lanes(resolveThreads(filters->threads));
  listing.heaps = walkHeaps(
      memory, filters->walkers,
      [&](unsigned lane, uint16_t heap, const Allocation &a) {
        if (a.size < filters->min_size || a.size > filters->max_size)
          return;
        if (filters->state && *filters->state != a.state)
          return;
        lanes[lane].rows.push_back(
            {a.address, a.size, a.chunk_address, a.arena, heap, a.state, a.mmapped});
      },
      listing.diagnostics,
      [&](llvm::StringRef phase, uint64_t d, uint64_t t) { progress.update(phase, d, t); },
      filters->threads);
  progress.finish();
  std::vector<ListedRows> sorted;
  for (Lane &lane : lanes)
    sorted.push_back(std::move(lane.rows));
  lanes.clear();
  listing.allocations = mergeByAddress(std::move(sorted));

  if (args.json)
    writeHeapListingJson(**snapshot, listing, llvm::outs(), filters->threads);
  else
    writeHeapListingText(**snapshot, listing, llvm::outs(), filters->threads);
  llvm::outs().flush();
  return kExitOk;
}
} // namespace

void addHeapCommand(CLI::App &app, Runner &runner) {
  auto args = std::make_shared<HeapArgs>();
  CLI::App *cmd =
      app.add_subcommand("heap", "Walk the heaps: arenas, counts and bytes used/free, and the "
                                 "allocations (filtered by size and state) by address");
  cmd->add_option("dump", args->dump, "ELF core or minidump")->required();
  cmd->add_option("--min-size", args->filters.min_size, "Smallest allocation to list")
      ->capture_default_str();
  cmd->add_option("--max-size", args->filters.max_size, "Largest allocation to list");
  cmd->add_option("--state", args->filters.state, "used, free, unknown or all")
      ->capture_default_str();
  cmd->add_option("--walker", args->filters.walkers, "Only this heap walker (repeatable)");
  cmd->add_option("--exe", args->exe,
                  "The dumped program's executable, for its symbols (docs/cli.md)");
  cmd->add_option("--threads", args->filters.threads,
                  "Threads for walking heaps and formatting the rows (default: all cores)");
  cmd->add_flag("--json", args->json, "Print JSON");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress on stderr");
  cmd->callback([&runner, args] { runner = [args] { return runHeap(*args); }; });
}

} // namespace dumpsift::tool
