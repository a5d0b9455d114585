// `dumpsift fleet task|status|report|rows`: a fleet of dumps on a batch engine, and the answers
// of its reports (docs/fleet.md). The work is the fleet layer's; this declares the options.
#include "dumpsift/fleet/fleet_report.h"
#include "dumpsift/fleet/progress.h"
#include "dumpsift/fleet/records.h"
#include "dumpsift/fleet/store.h"
#include "dumpsift/fleet/task.h"
#include "dumpsift/support/atomic_file.h"
#include "dumpsift/support/error.h"
#include "options.h"
#include "tool.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>

namespace dumpsift::tool {

namespace {

struct TaskArgs {
  std::string manifest;
  std::string out;
  size_t index = 0;
  bool index_given = false; // --index, rather than --index-env
  std::string index_env;
  size_t stride = 0;
  std::string timeout;
  unsigned max_attempts = 3;
  bool html = false;
  std::string stage_dir;
  AnalyzeArgs analysis;
};

/// Seconds in `text`: a number, with s, m or h after it ("90", "1.5", "30s", "5m", "2h").
std::optional<double> parseSeconds(llvm::StringRef text) {
  double unit = 1;
  if (text.consume_back("h"))
    unit = 3600;
  else if (text.consume_back("m"))
    unit = 60;
  else
    text.consume_back("s");
  double value = 0;
  if (text.empty() || text.getAsDouble(value) || !(value > 0))
    return std::nullopt;
  return value * unit;
}

/// The row index the engine gave: --index, or the variable --index-env names.
llvm::Expected<size_t> taskIndex(const TaskArgs &args) {
  if (args.index_given)
    return args.index;
  const char *value = std::getenv(args.index_env.c_str());
  if (!value || !*value)
    return createError("--index-env: $" + args.index_env + " is not set");
  unsigned long long index = 0;
  if (llvm::StringRef(value).getAsInteger(10, index))
    return createError("--index-env: $" + args.index_env + " is '" + value +
                       "', not an index (0, 1, 2, ...)");
  return size_t(index);
}

llvm::Expected<int> runTask(const TaskArgs &args) {
  if (llvm::Expected<AnalyzeOptions> options = resolveAnalyzeOptions(args.analysis); !options)
    return options.takeError();
  llvm::Expected<size_t> index = taskIndex(args);
  if (!index)
    return index.takeError();
  TaskOptions options;
  options.manifest = args.manifest;
  options.out_dir = args.out;
  options.index = *index;
  options.stride = args.stride;
  if (!args.timeout.empty()) {
    options.timeout_seconds = parseSeconds(args.timeout);
    if (!options.timeout_seconds)
      return createError("--timeout: '" + args.timeout +
                         "' is not a time (seconds, or with s, m or h: 90, 1.5, 30s, 5m)");
  }
  options.max_attempts = args.max_attempts;
  options.html = args.html;
  options.stage_dir = args.stage_dir;
  options.analyze_arguments = analyzeArguments(args.analysis);
  static int anchor;
  options.tool = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  llvm::Expected<TaskResult> result = runFleetTask(options, llvm::errs());
  if (!result)
    return result.takeError();
  return result->exit_code;
}

struct StatusArgs {
  std::string manifest;
  std::string out;
  bool array = false;
};

llvm::Expected<int> runStatus(const StatusArgs &args) {
  llvm::Expected<FleetProgress> progress = readProgress(args.manifest, args.out);
  if (!progress)
    return progress.takeError();
  const std::string to_run = arrayRanges(progress->to_run);
  if (args.array) {
    llvm::outs() << to_run << "\n";
    return kExitOk;
  }
  std::map<std::string, size_t> counts;
  for (const std::optional<RowStatus> &status : progress->statuses)
    if (status && isFinal(status->outcome))
      ++counts[outcomeName(status->outcome).str()];
  llvm::outs() << progress->statuses.size() << " rows of " << args.manifest << " in " << args.out
               << ": ";
  for (RowOutcome outcome :
       {RowOutcome::Ok, RowOutcome::Truncated, RowOutcome::BadInput, RowOutcome::GaveUp})
    llvm::outs() << counts[outcomeName(outcome).str()] << " " << outcomeName(outcome) << ", ";
  llvm::outs() << progress->to_run.size() << " to run"
               << (to_run.empty() ? "" : " (sbatch --array=" + to_run + ")") << "\n";
  for (size_t row : progress->to_run) {
    const std::optional<RowStatus> &status = progress->statuses[row];
    llvm::outs() << "  row " << row << " (" << progress->manifest.rows[row].id << "): ";
    if (!status) {
      llvm::outs() << "not run\n";
      continue;
    }
    llvm::outs() << outcomeName(status->outcome) << " after " << status->attempts
                 << (status->attempts == 1 ? " attempt" : " attempts")
                 << (status->error.empty() ? "" : ": " + status->error) << "\n";
  }
  return kExitOk;
}

struct ReportArgs {
  std::vector<std::string> dirs;
  std::string db;
  std::string json;
  std::string html;
  size_t top = 10;
  bool quiet = false;
};

llvm::Expected<int> runReport(const ReportArgs &args) {
  llvm::Expected<std::unique_ptr<FleetStore>> store =
      FleetStore::open(args.db.empty() ? ":memory:" : args.db);
  if (!store)
    return store.takeError();
  llvm::Expected<size_t> loaded = (*store)->load(args.dirs);
  if (!loaded)
    return loaded.takeError();
  llvm::Expected<FleetAnswers> answers = (*store)->answers(args.top);
  if (!answers)
    return answers.takeError();
  if (!args.json.empty())
    if (llvm::Error e = writeFileAtomically(args.json, [&](llvm::raw_ostream &out) {
          writeFleetJson(*answers, out);
          return llvm::Error::success();
        }))
      return llvm::createFileError(args.json, std::move(e));
  if (!args.html.empty())
    if (llvm::Error e = writeFileAtomically(args.html, [&](llvm::raw_ostream &out) {
          writeFleetHtml(*answers, args.html, out);
          return llvm::Error::success();
        }))
      return llvm::createFileError(args.html, std::move(e));
  if (!args.quiet) {
    writeFleetText(*answers, args.top, llvm::outs());
    llvm::outs() << "\nloaded " << *loaded << (*loaded == 1 ? " dump" : " dumps") << " from "
                 << args.dirs.size() << (args.dirs.size() == 1 ? " directory" : " directories");
    if (!args.db.empty())
      llvm::outs() << " into " << args.db << " (its views: docs/fleet.md)";
    llvm::outs() << "\n";
  }
  return kExitOk;
}

llvm::Expected<int> runRows(const std::vector<std::string> &dirs) {
  for (const std::string &dir : dirs)
    if (llvm::Error e = forEachDump(dir, [&](DumpRecord &&record) {
          writeRowsJsonl(tableRows(record), llvm::outs());
          return llvm::Error::success();
        }))
      return e;
  return kExitOk;
}

} // namespace

void addFleetCommand(CLI::App &app, Runner &runner) {
  CLI::App *fleet = app.add_subcommand(
      "fleet", "A fleet of dumps analyzed by a batch engine, and what their reports say together "
               "(docs/fleet.md)");
  fleet->require_subcommand(1);

  auto task_args = std::make_shared<TaskArgs>();
  CLI::App *task = fleet->add_subcommand(
      "task",
      "Analyze row N of a JSONL manifest (and N+K, ...) into DIR, as one task of a batch "
      "engine: exit 0 when final, 124 (timeout), 75 (transient I/O) or 128+S to be retried");
  task->add_option("manifest", task_args->manifest, "The manifest (JSONL: id, dump, labels)")
      ->required();
  task->add_option("--out", task_args->out, "The directory of reports and statuses")->required();
  CLI::Option *index = task->add_option("--index", task_args->index, "The row to analyze (from 0)");
  CLI::Option *index_env = task->add_option(
      "--index-env", task_args->index_env,
      "The environment variable that holds the row (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX)");
  index->excludes(index_env);
  task->add_option("--stride", task_args->stride,
                   "Analyze every K-th row from the index on (K tasks cover the manifest)");
  task->add_option("--timeout", task_args->timeout,
                   "Stop an analysis that runs longer than this (90, 30s, 5m, 1h)");
  task->add_option("--max-attempts", task_args->max_attempts,
                   "Give a row up after this many attempts")
      ->capture_default_str();
  task->add_flag("--html", task_args->html, "Also write each dump's page (ID.html in DIR)");
  task->add_option("--stage-dir", task_args->stage_dir,
                   "Copy each dump into this directory (a local volume) and analyze the copy");
  addAnalyzeOptions(*task, task_args->analysis, "Analysis");
  task->callback([&runner, task_args, index, index_env] {
    runner = [task_args, index, index_env]() -> llvm::Expected<int> {
      if (index->count() == 0 && index_env->count() == 0)
        return createError("'dumpsift fleet task': give --index N or --index-env VAR");
      task_args->index_given = index->count() > 0;
      return runTask(*task_args);
    };
  });

  auto status_args = std::make_shared<StatusArgs>();
  CLI::App *status = fleet->add_subcommand(
      "status", "List the rows of a manifest still to run (no final status in DIR)");
  status->add_option("manifest", status_args->manifest, "The manifest")->required();
  status->add_option("--out", status_args->out, "The directory of reports and statuses")
      ->required();
  status->add_flag("--array", status_args->array,
                   "Print only the rows to run, as sbatch --array= takes them (1,4-6,9)");
  status->callback(
      [&runner, status_args] { runner = [status_args] { return runStatus(*status_args); }; });

  auto report_args = std::make_shared<ReportArgs>();
  CLI::App *report = fleet->add_subcommand(
      "report", "Load fleet directories into a SQLite file and answer the fleet questions");
  report->add_option("dirs", report_args->dirs, "Fleet directories (fleet task --out)")->required();
  report->add_option("--db", report_args->db,
                     "The SQLite file to load into (created when absent; default: in memory)");
  report->add_option("--json", report_args->json, "Write the answers as JSON to this file");
  report->add_option("--html", report_args->html, "Write the fleet page to this file");
  report->add_option("--top", report_args->top, "Groups and findings shown per question")
      ->capture_default_str();
  report->add_flag("-q,--quiet", report_args->quiet, "No summary on stdout");
  report->callback(
      [&runner, report_args] { runner = [report_args] { return runReport(*report_args); }; });

  auto rows_dirs = std::make_shared<std::vector<std::string>>();
  CLI::App *rows = fleet->add_subcommand(
      "rows", "Print the fleet's normalized rows as JSON lines (one per table row)");
  rows->add_option("dirs", *rows_dirs, "Fleet directories (fleet task --out)")->required();
  rows->callback([&runner, rows_dirs] { runner = [rows_dirs] { return runRows(*rows_dirs); }; });
}

} // namespace dumpsift::tool
