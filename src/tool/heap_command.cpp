// `dumpsift heap DUMP`: every heap a walker recognises, and its allocations by address
// (docs/cli.md).
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/report/heap_listing.h"
#include "dumpsift/support/error.h"
#include "options.h"
#include "progress.h"
#include "tool.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace dumpsift::tool {

namespace {
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
  listing.heaps = walkHeaps(
      memory, filters->walkers,
      [&](uint16_t heap, const Allocation &a) {
        if (a.size < filters->min_size || a.size > filters->max_size)
          return;
        if (filters->state && *filters->state != a.state)
          return;
        listing.allocations.push_back(
            {a.address, a.size, a.chunk_address, a.arena, heap, a.state, a.mmapped});
      },
      listing.diagnostics,
      [&](llvm::StringRef phase, uint64_t d, uint64_t t) { progress.update(phase, d, t); });
  progress.finish();
  auto by_address = [](const ListedAllocation &a, const ListedAllocation &b) {
    return a.address < b.address;
  };
  std::vector<ListedAllocation> &rows = listing.allocations;
  if (!std::is_sorted(rows.begin(), rows.end(), by_address)) // one walker emits in order
    std::sort(rows.begin(), rows.end(), by_address);

  if (args.json)
    writeHeapListingJson(**snapshot, listing, llvm::outs());
  else
    writeHeapListingText(**snapshot, listing, llvm::outs());
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
  cmd->add_flag("--json", args->json, "Print JSON");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress on stderr");
  cmd->callback([&runner, args] { runner = [args] { return runHeap(*args); }; });
}

} // namespace dumpsift::tool
