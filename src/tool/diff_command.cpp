// `dumpsift diff BASE NEW`: what changed between two reports (or dumps), and whether it exceeds
// the thresholds given (docs/ci.md).
#include "dumpsift/compare/diff.h"
#include "dumpsift/report/comparison.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/sizes.h"
#include "options.h"
#include "report_input.h"
#include "tool.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>

namespace dumpsift::tool {

namespace {

struct DiffArgs {
  std::string before;
  std::string after;
  AnalyzeArgs analysis; // how dump inputs are analyzed (ignored for report inputs)
  // Thresholds.
  std::vector<std::string> max_growth;
  std::string max_new_bytes;
  std::string max_new_findings;
  // Output.
  bool json = false;
  size_t top = 20;
  bool all = false;
  bool allow_truncated = false;
};

// "--max-growth 10%" (percent) or "--max-growth 1M" (bytes); each form at most once.
llvm::Error resolveLimits(const DiffArgs &args, DiffLimits &limits) {
  for (const std::string &text : args.max_growth) {
    if (!text.empty() && text.back() == '%') {
      std::string number = text.substr(0, text.size() - 1);
      char *end = nullptr;
      double pct = number.empty() ? -1 : std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0' || !std::isfinite(pct) || pct < 0)
        return createError("--max-growth: '" + text + "' is not a percentage (e.g. 10%)");
      if (limits.max_growth_percent)
        return createError("--max-growth: a percentage is given twice");
      limits.max_growth_percent = pct;
    } else {
      std::optional<uint64_t> bytes = parseSize(text);
      if (!bytes)
        return createError("--max-growth: '" + text +
                           "' is neither a percentage (10%) nor a size (65536, 64K, 1M)");
      if (limits.max_growth_bytes)
        return createError("--max-growth: a size is given twice");
      limits.max_growth_bytes = *bytes;
    }
  }
  if (!args.max_new_bytes.empty()) {
    std::optional<uint64_t> bytes = parseSize(args.max_new_bytes);
    if (!bytes)
      return createError("--max-new-bytes: '" + args.max_new_bytes +
                         "' is not a size (e.g. 0, 65536, 64K, 1M)");
    limits.max_new_bytes = *bytes;
  }
  if (!args.max_new_findings.empty()) {
    std::optional<uint64_t> n = parseSize(args.max_new_findings);
    if (!n || args.max_new_findings.find_first_not_of("0123456789") != std::string::npos)
      return createError("--max-new-findings: '" + args.max_new_findings + "' is not a count");
    limits.max_new_findings = *n;
  }
  return llvm::Error::success();
}

llvm::Expected<int> runDiff(const DiffArgs &args, bool analyze_options_given) {
  llvm::Expected<AnalyzeOptions> options = resolveAnalyzeOptions(args.analysis);
  if (!options)
    return options.takeError();
  DiffLimits limits;
  if (llvm::Error e = resolveLimits(args, limits))
    return e;
  limits.allow_truncated = args.allow_truncated;

  bool before_dump = false, after_dump = false;
  auto before = loadFigures(args.before, *options, before_dump);
  if (!before)
    return before.takeError();
  auto after = loadFigures(args.after, *options, after_dump);
  if (!after)
    return after.takeError();
  if (analyze_options_given && !before_dump && !after_dump)
    llvm::errs() << "dumpsift: note: both inputs are reports; the analyze options (--min-size, "
                    "...) apply only to dumps and were ignored\n";

  ReportDiff diff = diffReports(*before, *after);
  std::vector<Regression> regressions = findRegressions(diff, limits);
  if (args.json)
    writeDiffJson(diff, regressions, args.before, args.after, llvm::outs());
  else
    writeDiffText(diff, regressions, args.before, args.after,
                  DiffTextOptions{args.all ? 0 : args.top, args.all}, llvm::outs());
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
  cmd->add_flag("--allow-truncated", args->allow_truncated,
                "Accept a truncated dump on either side (by default it is a regression)");
  cmd->add_flag("--json", args->json, "Print the diff as JSON");
  cmd->add_option("--top", args->top, "Rows of changed size groups in the text (0: all)")
      ->capture_default_str();
  cmd->add_flag("--all", args->all, "Also list unchanged kinds and groups in the text");
  CLI::Option_group *analysis = addAnalyzeOptions(*cmd, args->analysis, "Analysis of dump inputs");
  cmd->callback([&runner, args, analysis] {
    runner = [args, given = anyGiven(*analysis)] { return runDiff(*args, given); };
  });
}

} // namespace dumpsift::tool
