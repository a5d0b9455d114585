// What became of one manifest row: its status file in the fleet's output directory, and where
// the row's other files go (docs/fleet.md). `fleet task` writes the status atomically at the
// start and at the end of every attempt; `fleet status` and `fleet report` read it.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <optional>
#include <string>

namespace dumpsift {

/// Where a row stands. The final ones end the row: a task skips it from then on.
enum class RowOutcome {
  Running,   // an attempt started and has not ended (or was killed with its task)
  Timeout,   // the last attempt ran past --timeout and was stopped
  Transient, // the last attempt failed on I/O that may work next time
  Crashed,   // the last attempt's analysis died by a signal (the OOM killer's, a crash)
  Ok,        // final: the report is written, of a whole dump
  Truncated, // final: the report is written, of a dump cut short (its dump.truncated)
  BadInput,  // final: the dump cannot be read as a dump (the error says why)
  GaveUp,    // final: --max-attempts attempts ended without a final outcome
};

/// ok, truncated, bad-input and gave-up.
bool isFinal(RowOutcome outcome);
/// "running", "timeout", "transient", "crashed", "ok", "truncated", "bad-input", "gave-up".
llvm::StringRef outcomeName(RowOutcome outcome);
std::optional<RowOutcome> parseOutcome(llvm::StringRef name);

/// A row's status file.
struct RowStatus {
  std::string id;
  size_t row = 0;
  std::string dump; // the path the analysis was given
  RowOutcome outcome = RowOutcome::Running;
  unsigned attempts = 0; // attempts started, this one included
  std::string error;     // one line: why it is not ok ("" when ok)
};

/// The files of row `id` in the output directory `dir`.
std::string statusPath(llvm::StringRef dir, llvm::StringRef id); // DIR/ID.status.json
std::string reportPath(llvm::StringRef dir, llvm::StringRef id); // DIR/ID.report.json
std::string pagePath(llvm::StringRef dir, llvm::StringRef id);   // DIR/ID.html
/// The copy of the manifest a directory holds the rows of: DIR/manifest.jsonl.
std::string manifestCopyPath(llvm::StringRef dir);

/// Reads the status file at `path`: nullopt when there is none. An error names the file; one from
/// reading it keeps the system's error code (describeFailure tells it from a wrong status).
llvm::Expected<std::optional<RowStatus>> readStatus(const std::string &path);

/// Writes `status` to `path` atomically (one JSON object and a newline).
llvm::Error writeStatus(const std::string &path, const RowStatus &status);

/// An error as a status records it: its one-line message, and whether it comes from I/O that may
/// work when tried again (EIO, ENOSPC, ESTALE, ETIMEDOUT, EAGAIN, ...: a full or flaky disk, a
/// network file system) rather than from what a file holds or its absence.
struct Failure {
  std::string message;
  bool transient_io = false;
};
Failure describeFailure(llvm::Error error);

} // namespace dumpsift
