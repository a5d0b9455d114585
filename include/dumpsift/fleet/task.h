// `dumpsift fleet task`: the work of one batch-engine task (docs/fleet.md). The engine hands the
// task an index; the task analyzes that row of the manifest (and every `stride`-th after it) into
// the output directory, idempotently: a row with a final status is skipped, every attempt is
// counted in the row's status, and the report and the status are written atomically.
#pragma once

#include "dumpsift/fleet/row_status.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

/// The task's exit codes: final (every row it handled ended ok, truncated, bad-input or
/// gave-up), and "retry me": an attempt ran past --timeout, failed on transient I/O, or its
/// analysis died by signal S (128 + S, as a shell reports it). A usage error is 2 (the tool's).
constexpr int kTaskFinal = 0;
constexpr int kTaskTimeout = 124;
constexpr int kTaskTransientIo = 75;
constexpr int kTaskSignalBase = 128;

struct TaskOptions {
  std::string manifest;
  std::string out_dir;
  size_t index = 0;
  size_t stride = 0;                     // 0: row `index` only; K: rows index, index+K, ...
  std::optional<double> timeout_seconds; // an attempt's limit; none: no limit
  unsigned max_attempts = 3;             // attempts before a row is given up
  std::string tool;                      // the dumpsift binary whose `analyze` each attempt runs
  std::vector<std::string> analyze_arguments; // the analysis options, as `analyze` takes them
  bool html = false;                          // also write each dump's page (analyze --html)
  /// When set: each dump is copied into this directory (a local volume; created when absent)
  /// under its file name, analyzed there, and the copy deleted; the report names the copy.
  std::string stage_dir;
};

/// What became of one row in this task.
struct RowResult {
  size_t row = 0;
  std::string id;
  RowOutcome outcome = RowOutcome::Running;
  unsigned attempts = 0;
  bool skipped = false; // it was final already: nothing was run
  int exit_code = kTaskFinal;
  std::string error;
};

struct TaskResult {
  std::vector<RowResult> rows;
  int exit_code = kTaskFinal; // the first row's that is not kTaskFinal, else kTaskFinal
};

/// Runs the task: reads the manifest, makes `out_dir` hold its rows (creating it, and a copy of
/// the manifest, manifest.jsonl; a directory that holds another manifest's rows is an error),
/// then handles each of its rows in turn, writing one line per row to `log`. For each row, under
/// the directory's lock: a final status is kept (skipped); a row whose status counts
/// `max_attempts` attempts already is given up; otherwise the status says `running` with one
/// attempt more. The attempt opens the dump (one that is not a dump is final `bad-input`), then
/// runs `tool analyze` in a child process (stopped at the timeout; it dies with the task) that
/// writes the report atomically, and records the outcome, never replacing a final status (an
/// attempt that went on after its task was given up may end after its retry) and never counting
/// fewer attempts than the status does. Fails (a usage error) on a bad manifest, an index past
/// its last row (without a stride), or a directory of another manifest; I/O that fails on the
/// directory is each row's `transient` outcome.
llvm::Expected<TaskResult> runFleetTask(const TaskOptions &options, llvm::raw_ostream &log);

} // namespace dumpsift
