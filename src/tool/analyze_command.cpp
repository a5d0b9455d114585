#include "dumpsift/analysis/analysis.h"
#include "dumpsift/extract/extract.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/atomic_file.h"
#include "dumpsift/support/hex.h"
#include "options.h"
#include "progress.h"
#include "tool.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <iostream>

namespace dumpsift::tool {

namespace {
/// `--extract DIR` and the options that shape it, as typed.
struct ExtractArgs {
  std::string dir;
  std::string group;
  bool raw = false;
  bool dedupe = false;
  bool force = false;
  std::string max_bytes = "1G";
  std::string max_files;
};

/// Validates the extraction options of `raw` into `options` (sizes accept 64K/1M/1G/0x10000).
llvm::Error resolveExtract(const ExtractArgs &raw, ExtractOptions &options) {
  auto bad = [](const std::string &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", what.c_str());
  };
  if (!raw.group.empty()) {
    options.group_size = parseSize(raw.group);
    if (!options.group_size)
      return bad("--group: '" + raw.group + "' is not a size (a group's exact size, e.g. 135152)");
  }
  std::optional<uint64_t> max_bytes = parseSize(raw.max_bytes);
  if (!max_bytes)
    return bad("--max-bytes: '" + raw.max_bytes + "' is not a size (e.g. 1G, 500M)");
  options.max_bytes = *max_bytes;
  if (!raw.max_files.empty()) {
    std::optional<uint64_t> max_files = parseSize(raw.max_files);
    if (!max_files)
      return bad("--max-files: '" + raw.max_files + "' is not a number");
    options.max_files = *max_files;
  }
  options.raw = raw.raw;
  options.dedupe = raw.dedupe;
  options.force = raw.force;
  return llvm::Error::success();
}

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
  bool timings = false;
  std::string exe;
  ExtractArgs extract;
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
  ExtractOptions extract_options;
  if (llvm::Error e = resolveExtract(args.extract, extract_options))
    return e;

  auto snapshot = openDump(args.dump);
  if (!snapshot)
    return fileError(args.dump, snapshot.takeError());
  (*snapshot)->executable_file = args.exe;
  AddressSpace memory(**snapshot);
  Progress progress(!args.quiet && stderrIsTerminal(), args.timings);
  Analysis analysis = analyze(memory, options, [&](llvm::StringRef phase, uint64_t d, uint64_t t) {
    progress.update(phase, d, t);
  });

  std::optional<Extraction> extraction;
  if (!args.extract.dir.empty()) {
    extraction.emplace();
    if (llvm::Error e = extractBuffers(
            memory, analysis.buffers, args.extract.dir, extract_options, *extraction,
            [&](llvm::StringRef phase, uint64_t d, uint64_t t) { progress.update(phase, d, t); }))
      return e;
  }

  if (!args.report.empty() || args.json) {
    progress.update("writing the report", 0, 0);
    const Extraction *extracted = extraction ? &*extraction : nullptr;
    if (!args.report.empty())
      if (llvm::Error e = writeFileAtomically(args.report, [&](llvm::raw_ostream &out) {
            writeReportJson(**snapshot, analysis, extracted, out);
            return llvm::Error::success();
          }))
        return fileError(args.report, std::move(e));
    progress.finish();
    if (args.json) {
      writeReportJson(**snapshot, analysis, extracted, llvm::outs());
      llvm::outs().flush();
    }
  }
  progress.finish();
  if (!args.json)
    writeSummaryText(**snapshot, analysis, TextOptions{args.top}, std::cout);
  if (!args.json && extraction) {
    llvm::SmallString<256> manifest(extraction->dir);
    llvm::sys::path::append(manifest, kManifestName);
    std::cout << "\nExtracted " << extraction->files.size() << " files ("
              << humanBytes(extraction->bytes_written) << ") into " << extraction->dir
              << ", listed in " << manifest.str().str();
    if (extraction->duplicates)
      std::cout << " (" << extraction->duplicates << " duplicates written once)";
    std::cout << "\n";
  }
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
  cmd->add_option("--exe", args->exe,
                  "The dumped program's executable, for its symbols (docs/cli.md)");
  cmd->add_flag("--no-region-scan", args->no_region_scan,
                "Do not scan memory that no heap walker claims");
  cmd->add_option("--threads", args->threads, "Threads for sniffing (default: all cores)");
  cmd->add_option("--group-by", args->group_by, "size, or size,kind (one row per size and kind)")
      ->capture_default_str();
  cmd->add_option("--top", args->top, "Rows in the group table")->capture_default_str();
  cmd->add_flag("--json", args->json, "Print the JSON report on stdout instead of the summary");
  cmd->add_option("--report", args->report, "Write the JSON report to this file (atomically)");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress on stderr");
  cmd->add_flag("--timings", args->timings,
                "Print how long each phase took on stderr (docs/performance.md)");
  CLI::Option *extract = cmd->add_option(
      "--extract", args->extract.dir,
      "Write every buffer that passes the filters into this directory (docs/extraction.md)");
  cmd->add_option("--group", args->extract.group,
                  "With --extract: only buffers of this exact size (a group's size)")
      ->needs(extract);
  cmd->add_flag("--raw", args->extract.raw,
                "With --extract: write whole allocations, not the content from its offset")
      ->needs(extract);
  cmd->add_flag("--dedupe", args->extract.dedupe,
                "With --extract: write identical bytes once (the manifest lists every address)")
      ->needs(extract);
  cmd->add_flag("--force", args->extract.force,
                "With --extract: write into a directory that is not empty")
      ->needs(extract);
  cmd->add_option("--max-bytes", args->extract.max_bytes,
                  "With --extract: stop before the files would hold more than this")
      ->capture_default_str()
      ->needs(extract);
  cmd->add_option("--max-files", args->extract.max_files,
                  "With --extract: stop before writing more files than this")
      ->needs(extract);
  cmd->callback([&runner, args] { runner = [args] { return runAnalyze(*args); }; });
}

} // namespace dumpsift::tool
