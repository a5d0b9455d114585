// `dumpsift diff BASE NEW`: what changed between two reports (or dumps), and whether it exceeds
// the thresholds given (docs/ci.md).
#include "dumpsift/report/compare.h"
#include "dumpsift/support/hex.h"
#include "options.h"
#include "tool.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <iostream>

namespace dumpsift::tool {

namespace {

struct DiffArgs {
  std::string before;
  std::string after;
  // How dump inputs are analyzed (ignored for report inputs).
  RawFilters filters;
  std::vector<std::string> walkers;
  bool no_region_scan = false;
  unsigned threads = 0;
  std::string group_by = "size";
  // Thresholds.
  std::vector<std::string> max_growth;
  std::string max_new_bytes;
  std::string max_new_findings;
  // Output.
  bool json = false;
  size_t top = 20;
  bool all = false;
};

// An error about an option's value.
llvm::Error optionError(const std::string &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", what.c_str());
}

// The analyze options for dump inputs, validated like `analyze` does.
llvm::Error resolveAnalyzeOptions(const DiffArgs &args, AnalyzeOptions &options) {
  if (llvm::Error e = resolveFilters(args.filters, options))
    return e;
  options.walkers = args.walkers;
  options.region_scan = !args.no_region_scan;
  options.threads = args.threads;
  if (args.group_by == "size,kind" || args.group_by == "kind")
    options.group_by = GroupBy::SizeKind;
  else if (args.group_by != "size")
    return optionError("--group-by: '" + args.group_by + "' is not 'size' or 'size,kind'");
  return llvm::Error::success();
}

// "--max-growth 10%" (percent) or "--max-growth 1M" (bytes); each form at most once.
llvm::Error resolveLimits(const DiffArgs &args, DiffLimits &limits) {
  for (const std::string &text : args.max_growth) {
    if (!text.empty() && text.back() == '%') {
      std::string number = text.substr(0, text.size() - 1);
      char *end = nullptr;
      double pct = number.empty() ? -1 : std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0' || !std::isfinite(pct) || pct < 0)
        return optionError("--max-growth: '" + text + "' is not a percentage (e.g. 10%)");
      if (limits.max_growth_percent)
        return optionError("--max-growth: a percentage is given twice");
      limits.max_growth_percent = pct;
    } else {
      std::optional<uint64_t> bytes = parseSize(text);
      if (!bytes)
        return optionError("--max-growth: '" + text +
                           "' is neither a percentage (10%) nor a size (65536, 64K, 1M)");
      if (limits.max_growth_bytes)
        return optionError("--max-growth: a size is given twice");
      limits.max_growth_bytes = *bytes;
    }
  }
  if (!args.max_new_bytes.empty()) {
    std::optional<uint64_t> bytes = parseSize(args.max_new_bytes);
    if (!bytes)
      return optionError("--max-new-bytes: '" + args.max_new_bytes +
                         "' is not a size (e.g. 0, 65536, 64K, 1M)");
    limits.max_new_bytes = *bytes;
  }
  if (!args.max_new_findings.empty()) {
    std::optional<uint64_t> n = parseSize(args.max_new_findings);
    if (!n || args.max_new_findings.find_first_not_of("0123456789") != std::string::npos)
      return optionError("--max-new-findings: '" + args.max_new_findings + "' is not a count");
    limits.max_new_findings = *n;
  }
  return llvm::Error::success();
}

// One side of the diff: a report file as is, or a dump analyzed with `options`. Errors name the
// path. `was_dump` tells which it was.
llvm::Expected<ReportFigures> loadSide(const std::string &path, const AnalyzeOptions &options,
                                       bool &was_dump) {
  auto report = loadReportOrDump(path, options, &was_dump);
  if (!report)
    return fileError(path, report.takeError());
  auto figures = readFigures(*report);
  if (!figures)
    return fileError(path, figures.takeError());
  return figures;
}

llvm::Expected<int> runDiff(const DiffArgs &args, bool analyze_options_given) {
  AnalyzeOptions options;
  if (llvm::Error e = resolveAnalyzeOptions(args, options))
    return e;
  DiffLimits limits;
  if (llvm::Error e = resolveLimits(args, limits))
    return e;

  bool before_dump = false, after_dump = false;
  auto before = loadSide(args.before, options, before_dump);
  if (!before)
    return before.takeError();
  auto after = loadSide(args.after, options, after_dump);
  if (!after)
    return after.takeError();
  if (analyze_options_given && !before_dump && !after_dump)
    llvm::errs() << "dumpsift: note: both inputs are reports; the analyze options (--min-size, "
                    "...) apply only to dumps and were ignored\n";

  ReportDiff diff = diffReports(*before, *after);
  std::vector<Regression> regressions = findRegressions(diff, limits);
  if (args.json)
    std::cout << diffJson(diff, regressions, args.before, args.after)
                     .dump(2, ' ', false, Json::error_handler_t::replace)
              << "\n";
  else
    writeDiffText(diff, regressions, args.before, args.after,
                  DiffTextOptions{args.all ? 0 : args.top, args.all}, std::cout);
  return regressions.empty() ? kExitOk : kExitRegression;
}

} // namespace

void addDiffCommand(CLI::App &app, Runner &runner) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App *cmd = app.add_subcommand(
      "diff", "Compare two reports (or dumps): per kind and size group, the change in count and "
              "bytes, new and vanished groups, new findings. Exit 1 when a threshold is exceeded");
  cmd->add_option("base", args->before, "The baseline: a JSON report or a dump")->required();
  cmd->add_option("new", args->after, "The new run: a JSON report or a dump")->required();
  cmd->add_option("--max-growth", args->max_growth,
                  "Fail when the total, a kind or a size group grew by more than this: a "
                  "percentage (10%) or bytes (1M); may be given once of each form")
      ->allow_extra_args(false);
  cmd->add_option("--max-new-bytes", args->max_new_bytes,
                  "Fail when the size groups new in NEW, or a kind new in NEW, hold more than this "
                  "many bytes (0: fail on any new group)");
  cmd->add_option("--max-new-findings", args->max_new_findings,
                  "Fail when NEW has more than this many findings that BASE has not");
  cmd->add_flag("--json", args->json, "Print the diff as JSON");
  cmd->add_option("--top", args->top, "Rows of changed size groups in the text (0: all)")
      ->capture_default_str();
  cmd->add_flag("--all", args->all, "Also list unchanged kinds and groups in the text");
  // For dump inputs: the same options as `analyze`.
  std::vector<CLI::Option *> analyze_options = {
      cmd->add_option("--min-size", args->filters.min_size,
                      "Dump inputs: smallest buffer to report (64K, 1M accepted)")
          ->capture_default_str(),
      cmd->add_option("--max-size", args->filters.max_size, "Dump inputs: largest buffer"),
      cmd->add_option("--kind", args->filters.kinds, "Dump inputs: only this kind (repeatable)")
          ->allow_extra_args(false),
      cmd->add_option("--state", args->filters.state, "Dump inputs: used, free, unknown or all")
          ->capture_default_str(),
      cmd->add_option("--walker", args->walkers, "Dump inputs: only this heap walker")
          ->allow_extra_args(false),
      cmd->add_flag("--no-region-scan", args->no_region_scan,
                    "Dump inputs: do not scan memory that no heap walker claims"),
      cmd->add_option("--threads", args->threads, "Dump inputs: threads for sniffing"),
      cmd->add_option("--group-by", args->group_by, "Dump inputs: size, or size,kind")
          ->capture_default_str(),
  };
  cmd->callback([&runner, args, analyze_options] {
    bool given = false;
    for (CLI::Option *o : analyze_options)
      given = given || o->count() > 0;
    runner = [args, given] { return runDiff(*args, given); };
  });
}

} // namespace dumpsift::tool
