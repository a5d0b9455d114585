// `dumpsift check REPORT|DUMP --rules RULES`: does a report pass a rules file (docs/ci.md)?
#include "dumpsift/report/comparison.h"
#include "dumpsift/report/rules_file.h"
#include "dumpsift/support/error.h"
#include "options.h"
#include "report_input.h"
#include "tool.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace dumpsift::tool {

namespace {

struct CheckArgs {
  std::string input;
  std::string rules;
  std::string format = "text";
  bool json = false;
  bool verbose = false;
  AnalyzeArgs analysis; // how a dump input is analyzed (ignored for a report input)
};

// The rules file at `path`, parsed; errors name the path and the field or line.
llvm::Expected<RuleSet> readRules(const std::string &path) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return llvm::createFileError(path, llvm::errorCodeToError(file.getError()));
  auto rules = parseRules((*file)->getBuffer());
  if (!rules)
    return llvm::createFileError(path, rules.takeError());
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
    return createError("--format: '" + args.format + "' is not text, github or json");
  llvm::Expected<AnalyzeOptions> options = resolveAnalyzeOptions(args.analysis);
  if (!options)
    return options.takeError();

  // The rules first: a typo in them should not wait for a dump's analysis.
  auto rules = readRules(args.rules);
  if (!rules)
    return rules.takeError();

  bool was_dump = false;
  auto figures = loadFigures(args.input, *options, was_dump);
  if (!figures)
    return figures.takeError();
  if (analyze_options_given && !was_dump)
    llvm::errs() << "dumpsift: note: '" << args.input
                 << "' is a report; the analyze options (--min-size, ...) apply only to dumps "
                    "and were ignored\n";

  std::vector<RuleResult> results = checkRules(*figures, *rules);
  writeCheckResults(results, output, llvm::outs());
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
  CLI::Option_group *analysis = addAnalyzeOptions(*cmd, args->analysis, "Analysis of a dump input");
  cmd->callback([&runner, args, analysis] {
    runner = [args, given = anyGiven(*analysis)] { return runCheck(*args, given); };
  });
}

} // namespace dumpsift::tool
