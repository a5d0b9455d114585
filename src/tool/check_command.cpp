// `dumpsift check REPORT|DUMP --rules RULES`: does a report pass a rules file (docs/ci.md)?
#include "dumpsift/report/rules.h"
#include "options.h"
#include "tool.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <iostream>

namespace dumpsift::tool {

namespace {

struct CheckArgs {
  std::string input;
  std::string rules;
  std::string format = "text";
  bool json = false;
  bool verbose = false;
  // How a dump input is analyzed (ignored for a report input).
  RawFilters filters;
  std::vector<std::string> walkers;
  bool no_region_scan = false;
  unsigned threads = 0;
  std::string group_by = "size";
};

// The analyze options for a dump input, validated like `analyze` does.
llvm::Error resolveAnalyzeOptions(const CheckArgs &args, AnalyzeOptions &options) {
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
  return llvm::Error::success();
}

// The rules file at `path`, parsed; errors name the path and the field or line.
llvm::Expected<RuleSet> readRules(const std::string &path) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return fileError(
        path, llvm::createStringError(file.getError(), "%s", file.getError().message().c_str()));
  auto rules = parseRules((*file)->getBuffer());
  if (!rules)
    return fileError(path, rules.takeError());
  return rules;
}

llvm::Expected<int> runCheck(const CheckArgs &args, bool analyze_options_given) {
  CheckOutput output;
  output.report_label = args.input;
  output.rules_path = args.rules;
  output.verbose = args.verbose;
  if (args.json || args.format == "json")
    output.format = CheckFormat::Json;
  else if (args.format == "github")
    output.format = CheckFormat::Github;
  else if (args.format != "text")
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--format: '%s' is not text, github or json",
                                   args.format.c_str());
  AnalyzeOptions options;
  if (llvm::Error e = resolveAnalyzeOptions(args, options))
    return e;

  // The rules first: a typo in them should not wait for a dump's analysis.
  auto rules = readRules(args.rules);
  if (!rules)
    return rules.takeError();

  bool was_dump = false;
  auto report = loadReportOrDump(args.input, options, &was_dump);
  if (!report)
    return fileError(args.input, report.takeError());
  auto figures = readFigures(*report);
  if (!figures)
    return fileError(args.input, figures.takeError());
  if (analyze_options_given && !was_dump)
    llvm::errs() << "dumpsift: note: '" << args.input
                 << "' is a report; the analyze options (--min-size, ...) apply only to dumps "
                    "and were ignored\n";

  std::vector<RuleResult> results = checkRules(*figures, *rules);
  writeCheckResults(results, output, std::cout);
  for (const RuleResult &r : results)
    if (!r.passed)
      return kExitRegression;
  return kExitOk;
}

} // namespace

void addCheckCommand(CLI::App &app, Runner &runner) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App *cmd = app.add_subcommand(
      "check", "Check a report (or a dump) against a rules file: limits per kind, size range, "
               "finding type, and things that must not exist. Exit 1 when a rule is violated");
  cmd->add_option("input", args->input, "A JSON report or a dump")->required();
  cmd->add_option("--rules", args->rules, "The rules file (JSON, see docs/ci.md)")->required();
  cmd->add_option("--format", args->format,
                  "text, github (violations as GitHub workflow annotations) or json")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Same as --format json");
  cmd->add_flag("-v,--verbose", args->verbose, "Also print the rules that pass");
  // For a dump input: the same options as `analyze`.
  std::vector<CLI::Option *> analyze_options = {
      cmd->add_option("--min-size", args->filters.min_size,
                      "Dump input: smallest buffer to report (64K, 1M accepted)")
          ->capture_default_str(),
      cmd->add_option("--max-size", args->filters.max_size, "Dump input: largest buffer"),
      cmd->add_option("--kind", args->filters.kinds, "Dump input: only this kind (repeatable)")
          ->allow_extra_args(false),
      cmd->add_option("--state", args->filters.state, "Dump input: used, free, unknown or all")
          ->capture_default_str(),
      cmd->add_option("--walker", args->walkers, "Dump input: only this heap walker")
          ->allow_extra_args(false),
      cmd->add_flag("--no-region-scan", args->no_region_scan,
                    "Dump input: do not scan memory that no heap walker claims"),
      cmd->add_option("--threads", args->threads, "Dump input: threads for sniffing"),
      cmd->add_option("--group-by", args->group_by, "Dump input: size, or size,kind")
          ->capture_default_str(),
  };
  cmd->callback([&runner, args, analyze_options] {
    bool given = false;
    for (CLI::Option *o : analyze_options)
      given = given || o->count() > 0;
    runner = [args, given] { return runCheck(*args, given); };
  });
}

} // namespace dumpsift::tool
