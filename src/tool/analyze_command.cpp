#include "options.h"
#include "progress.h"
#include "tool.h"

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/atomic_file.h"

#include <iostream>

namespace dumpsift::tool {

namespace {
struct AnalyzeArgs {
  std::string dump;
  RawFilters filters;
  std::vector<std::string> walkers;
  bool no_region_scan = false;
  unsigned threads = 0;
  std::string group_by = "size";
  size_t top = 10;
  bool json = false;
  std::string report;
  bool quiet = false;
};

llvm::Expected<int> runAnalyze(const AnalyzeArgs &args) {
  AnalyzeOptions options;
  if (llvm::Error e = resolveFilters(args.filters, options))
    return e;
  options.walkers = args.walkers;
  options.region_scan = !args.no_region_scan;
  options.threads = args.threads;
  if (args.group_by == "size,kind" || args.group_by == "kind")
    options.group_by = GroupBy::SizeKind;
  else if (args.group_by != "size")
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--group-by: '%s' is not 'size' or 'size,kind'",
                                   args.group_by.c_str());

  auto snapshot = openDump(args.dump);
  if (!snapshot)
    return fileError(args.dump, snapshot.takeError());
  AddressSpace memory(**snapshot);
  Progress progress(!args.quiet && stderrIsTerminal());
  Analysis analysis = analyze(memory, options, [&](llvm::StringRef phase, uint64_t d, uint64_t t) {
    progress.update(phase, d, t);
  });
  progress.finish();

  if (!args.report.empty() || args.json) {
    Json report = reportJson(**snapshot, analysis);
    std::string text = report.dump(2) + "\n";
    if (!args.report.empty())
      if (llvm::Error e = writeFileAtomically(args.report, text))
        return fileError(args.report, std::move(e));
    if (args.json)
      std::cout << text;
  }
  if (!args.json)
    writeSummaryText(**snapshot, analysis, TextOptions{args.top}, std::cout);
  return kExitOk;
}
} // namespace

void addAnalyzeCommand(CLI::App &app, Runner &runner) {
  auto args = std::make_shared<AnalyzeArgs>();
  CLI::App *cmd = app.add_subcommand(
      "analyze", "Find the large buffers in every heap, sniff what they hold, group them by size");
  cmd->add_option("dump", args->dump, "ELF core or minidump")->required();
  cmd->add_option("--min-size", args->filters.min_size,
                  "Smallest buffer to report, in bytes (64K, 1M accepted)")
      ->capture_default_str();
  cmd->add_option("--max-size", args->filters.max_size, "Largest buffer to report");
  cmd->add_option("--kind", args->filters.kinds, "Only buffers of this kind (repeatable)");
  cmd->add_option("--state", args->filters.state, "used, free, unknown or all")
      ->capture_default_str();
  cmd->add_option("--walker", args->walkers, "Only this heap walker (repeatable)");
  cmd->add_flag("--no-region-scan", args->no_region_scan,
                "Do not scan memory that no heap walker claims");
  cmd->add_option("--threads", args->threads, "Threads for sniffing (default: all cores)");
  cmd->add_option("--group-by", args->group_by, "size, or size,kind (one row per size and kind)")
      ->capture_default_str();
  cmd->add_option("--top", args->top, "Rows in the group table")->capture_default_str();
  cmd->add_flag("--json", args->json, "Print the JSON report on stdout instead of the summary");
  cmd->add_option("--report", args->report, "Write the JSON report to this file (atomically)");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress on stderr");
  cmd->callback([&runner, args] { runner = [args] { return runAnalyze(*args); }; });
}

} // namespace dumpsift::tool
