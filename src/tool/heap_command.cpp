// `dumpsift heap DUMP`: every heap a walker recognises, and its allocations by address
// (docs/cli.md).
#include "dumpsift/analysis/heap_listing.h"
#include "dumpsift/report/heap_listing.h"
#include "dumpsift/support/error.h"
#include "options.h"
#include "progress.h"
#include "tool.h"

#include "llvm/Support/raw_ostream.h"

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

  HeapListing listing =
      listHeaps(memory, *filters, [&](llvm::StringRef phase, uint64_t d, uint64_t t) {
        progress.update(phase, d, t);
      });
  progress.finish();

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
