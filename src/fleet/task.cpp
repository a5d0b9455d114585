// `dumpsift fleet task` (task.h): one batch-engine task's rows, each attempt counted and every
// file written atomically.
#include "dumpsift/fleet/task.h"

#include "child_process.h"
#include "dumpsift/dump/snapshot.h"
#include "dumpsift/fleet/manifest.h"
#include "dumpsift/report/saved_report.h"
#include "dumpsift/support/atomic_file.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/sizes.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace dumpsift {

namespace {

/// The output directory's lock, held while a status is read and written (never while a dump is
/// analyzed): the read-modify-write of a status is one step for every task sharing the directory.
class DirLock {
public:
  /// Locks `dir`/.fleet.lock, waiting for another holder; `error` is set when it cannot.
  DirLock(llvm::StringRef dir, llvm::Error &error) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, ".fleet.lock");
    if (std::error_code ec = llvm::sys::fs::openFileForWrite(
            path, fd_, llvm::sys::fs::CD_OpenAlways, llvm::sys::fs::OF_None)) {
      error = llvm::createFileError(path, llvm::errorCodeToError(ec));
      fd_ = -1;
      return;
    }
    if (std::error_code ec = llvm::sys::fs::lockFile(fd_)) {
      error = llvm::createFileError(path, llvm::errorCodeToError(ec));
      llvm::sys::Process::SafelyCloseFileDescriptor(fd_);
      fd_ = -1;
    }
  }
  ~DirLock() {
    if (fd_ >= 0) {
      (void)llvm::sys::fs::unlockFile(fd_);
      (void)llvm::sys::Process::SafelyCloseFileDescriptor(fd_);
    }
  }
  DirLock(const DirLock &) = delete;
  DirLock &operator=(const DirLock &) = delete;

private:
  int fd_ = -1;
};

/// The exit code an attempt that ended with `outcome` gives (a crash: `signal`).
int exitCodeOf(RowOutcome outcome, int signal) {
  switch (outcome) {
  case RowOutcome::Timeout:
    return kTaskTimeout;
  case RowOutcome::Transient:
  case RowOutcome::Running:
    return kTaskTransientIo;
  case RowOutcome::Crashed:
    return kTaskSignalBase + signal;
  default:
    return kTaskFinal;
  }
}

/// What one attempt found (before it ends: running).
struct AttemptEnd {
  RowOutcome outcome = RowOutcome::Running;
  std::string error;
  int signal = 0;
};

/// The last line of `text` that is not blank, without the tool's "dumpsift: error: " prefix.
std::string lastLine(llvm::StringRef text) {
  llvm::StringRef line = text.rtrim("\r\n \t");
  line = line.substr(line.find_last_of('\n') + 1);
  line.consume_front("dumpsift: error: ");
  return line.str();
}

/// Makes `dir` hold the rows of `manifest`: creates it, and copies the manifest into it, unless it
/// holds that copy already; a directory that holds another manifest is refused.
llvm::Error prepareDir(const Manifest &manifest, const std::string &dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return llvm::createFileError(dir, llvm::errorCodeToError(ec));
  llvm::Error lock_error = llvm::Error::success();
  DirLock lock(dir, lock_error);
  if (lock_error)
    return lock_error;
  const std::string copy = manifestCopyPath(dir);
  auto held = llvm::MemoryBuffer::getFile(copy, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!held) {
    if (held.getError() != std::errc::no_such_file_or_directory)
      return llvm::createFileError(copy, llvm::errorCodeToError(held.getError()));
    if (llvm::Error e = writeFileAtomically(copy, manifest.text))
      return llvm::createFileError(copy, std::move(e));
    return llvm::Error::success();
  }
  if ((*held)->getBuffer() != manifest.text)
    return llvm::createFileError(dir, createError("it holds the rows of another manifest ('" +
                                                  copy + "' differs from '" + manifest.path +
                                                  "'): give another --out"));
  return llvm::Error::success();
}

class Task {
public:
  Task(const TaskOptions &options, llvm::raw_ostream &log) : options_(options), log_(log) {}

  /// Handles `row` and says what became of it.
  RowResult handle(const ManifestRow &row) {
    RowResult result;
    result.row = row.index;
    result.id = row.id;
    const std::string status_path = statusPath(options_.out_dir, row.id);
    RowStatus status;
    status.id = row.id;
    status.row = row.index;
    status.dump = row.dump_path;

    // Start the attempt: skip a final row, give up a row out of attempts, else count one more.
    {
      std::optional<DirLock> lock;
      llvm::Expected<std::optional<RowStatus>> current = lockAndRead(lock, status_path);
      if (!current)
        return ioFailure(std::move(result), current.takeError());
      if (*current && isFinal((*current)->outcome)) {
        result.skipped = true;
        return alreadyFinal(std::move(result), **current);
      }
      status.attempts = *current ? (*current)->attempts : 0;
      AttemptEnd end;
      if (status.attempts >= options_.max_attempts)
        end = giveUp(status.attempts, (*current)->outcome == RowOutcome::Running
                                          ? "it did not end (its task was killed)"
                                          : (*current)->error);
      else
        ++status.attempts;
      status.outcome = end.outcome;
      status.error = end.error;
      if (llvm::Error e = writeStatus(status_path, status))
        return ioFailure(std::move(result), std::move(e));
      if (end.outcome == RowOutcome::GaveUp)
        return recorded(std::move(result), status, std::move(end));
    }
    return finish(std::move(result), std::move(status), attempt(row));
  }

private:
  /// What one attempt of `row` gives: the dump (copied into the stage directory first, when there
  /// is one) opened here (a file that is not a dump is bad input), then analyzed by a child
  /// `analyze`.
  AttemptEnd attempt(const ManifestRow &row) {
    AttemptEnd end;
    end.outcome = RowOutcome::Transient;
    // A dump that cannot be read (or copied) is bad input, unless the cause may pass.
    auto unreadable = [&](const std::string &path, llvm::Error error) {
      Failure failure = describeFailure(llvm::createFileError(path, std::move(error)));
      end.outcome = failure.transient_io ? RowOutcome::Transient : RowOutcome::BadInput;
      end.error = std::move(failure.message);
      return end;
    };
    std::string dump = row.dump_path;
    std::optional<llvm::FileRemover> staged;
    if (!options_.stage_dir.empty()) {
      if (std::error_code ec = llvm::sys::fs::create_directories(options_.stage_dir)) {
        end.error =
            describeFailure(llvm::createFileError(options_.stage_dir, llvm::errorCodeToError(ec)))
                .message;
        return end;
      }
      llvm::SmallString<256> copy(options_.stage_dir);
      llvm::sys::path::append(copy, llvm::sys::path::filename(row.dump_path));
      dump = copy.str().str();
      staged.emplace(dump);
      if (std::error_code ec = llvm::sys::fs::copy_file(row.dump_path, dump))
        return unreadable(row.dump_path, llvm::errorCodeToError(ec));
    }
    if (auto snapshot = openDump(dump); !snapshot)
      return unreadable(dump, snapshot.takeError());
    const std::string report = reportPath(options_.out_dir, row.id);
    std::vector<std::string> argv = {options_.tool, "analyze", dump, "--report", report, "--quiet"};
    if (options_.html) {
      argv.push_back("--html");
      argv.push_back(pagePath(options_.out_dir, row.id));
    }
    for (const auto &[key, value] : row.labels) {
      argv.push_back("--label");
      argv.push_back(key + "=" + value);
    }
    argv.insert(argv.end(), options_.analyze_arguments.begin(), options_.analyze_arguments.end());
    llvm::Expected<detail::ChildEnd> child = detail::runChild(argv, options_.timeout_seconds);
    if (!child) {
      end.error = "cannot start '" + options_.tool + "': " + llvm::toString(child.takeError());
      return end;
    }
    if (child->timed_out) {
      end.outcome = RowOutcome::Timeout;
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", *options_.timeout_seconds);
      end.error = std::string("the analysis ran past the timeout of ") + limit + " s";
      removeLeftovers(row.id);
      return end;
    }
    if (child->signal) {
      end.outcome = RowOutcome::Crashed;
      end.signal = child->signal;
      end.error = "the analysis died by signal " + std::to_string(child->signal) + " (" +
                  strsignal(child->signal) + ")";
      return end;
    }
    if (child->exit_code != 0) {
      // The dump opened, so what failed is writing (or the machine): worth another attempt.
      end.error = "the analysis exited with " + std::to_string(child->exit_code) + ": " +
                  lastLine(child->stderr_tail);
      return end;
    }
    return reportOutcome(report);
  }

  /// ok or truncated, as the report at `path` says; a report that cannot be read back is
  /// transient.
  AttemptEnd reportOutcome(const std::string &path) {
    AttemptEnd end;
    end.outcome = RowOutcome::Transient;
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      end.error =
          describeFailure(llvm::createFileError(path, llvm::errorCodeToError(buffer.getError())))
              .message;
      return end;
    }
    llvm::Expected<SavedReport> report = readReport((*buffer)->getBuffer());
    if (!report) {
      end.error = describeFailure(llvm::createFileError(path, report.takeError())).message;
      return end;
    }
    if (const auto &truncated = report->figures.truncated) {
      end.outcome = RowOutcome::Truncated;
      end.error = "the dump is truncated: the file ends at byte " +
                  groupedDigits(truncated->file_size) + " of " +
                  groupedDigits(truncated->expected_size) + "; " +
                  groupedDigits(truncated->missing_bytes) + " bytes of memory are missing";
      return end;
    }
    end.outcome = RowOutcome::Ok;
    return end;
  }

  /// The files a child killed at the timeout may have left half-written (the atomic writer's
  /// temporaries beside the report and the page): nothing reads them.
  void removeLeftovers(llvm::StringRef id) {
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(options_.out_dir, ec), end; it != end && !ec;
         it.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(it->path());
      if (name.startswith(id.str() + ".") && name.contains(".tmp-"))
        (void)llvm::sys::fs::remove(it->path());
    }
  }

  static AttemptEnd giveUp(unsigned attempts, llvm::StringRef last) {
    AttemptEnd end;
    end.outcome = RowOutcome::GaveUp;
    end.error = "gave up after " + std::to_string(attempts) +
                (attempts == 1 ? " attempt" : " attempts") + "; the last: " + last.str();
    return end;
  }

  /// Records `end` as the row's status, unless another attempt made it final meanwhile, counting
  /// at least the attempts the status counts; an attempt that was the last allowed and did not
  /// end the row gives it up.
  RowResult finish(RowResult result, RowStatus status, AttemptEnd end) {
    const std::string status_path = statusPath(options_.out_dir, status.id);
    std::optional<DirLock> lock;
    llvm::Expected<std::optional<RowStatus>> current = lockAndRead(lock, status_path);
    if (!current)
      return ioFailure(std::move(result), current.takeError());
    if (*current) {
      if (isFinal((*current)->outcome))
        return alreadyFinal(std::move(result), **current);
      status.attempts = std::max(status.attempts, (*current)->attempts);
    }
    if (!isFinal(end.outcome) && status.attempts >= options_.max_attempts)
      end = giveUp(status.attempts, end.error);
    status.outcome = end.outcome;
    status.error = end.error;
    if (llvm::Error e = writeStatus(status_path, status))
      return ioFailure(std::move(result), std::move(e));
    return recorded(std::move(result), status, std::move(end));
  }

  /// Takes the output directory's lock into `lock` (held until the caller drops it), then reads
  /// the status at `status_path` (none yet: nullopt); an error when either fails.
  llvm::Expected<std::optional<RowStatus>> lockAndRead(std::optional<DirLock> &lock,
                                                       const std::string &status_path) {
    llvm::Error lock_error = llvm::Error::success();
    lock.emplace(options_.out_dir, lock_error);
    if (lock_error)
      return lock_error;
    return readStatus(status_path);
  }

  /// The result of a row whose status `final_status` is final already: its outcome, attempts and
  /// error.
  RowResult alreadyFinal(RowResult result, const RowStatus &final_status) {
    result.outcome = final_status.outcome;
    result.attempts = final_status.attempts;
    result.error = final_status.error;
    return logged(std::move(result));
  }

  /// The result of an attempt that ended with `end`, recorded in `status`.
  RowResult recorded(RowResult result, const RowStatus &status, AttemptEnd end) {
    result.outcome = end.outcome;
    result.attempts = status.attempts;
    result.error = std::move(end.error);
    result.exit_code = exitCodeOf(end.outcome, end.signal);
    return logged(std::move(result));
  }

  /// The row's result when the directory's files cannot be read or written: transient when the
  /// cause may pass, else an error that will not (a status file someone broke): both leave the
  /// row to another attempt.
  RowResult ioFailure(RowResult result, llvm::Error error) {
    result.outcome = RowOutcome::Transient;
    result.error = describeFailure(std::move(error)).message;
    result.exit_code = kTaskTransientIo;
    return logged(std::move(result));
  }

  RowResult logged(RowResult result) {
    log_ << "dumpsift fleet task: row " << result.row << " (" << result.id
         << "): " << outcomeName(result.outcome);
    if (result.skipped)
      log_ << ", final already";
    else if (result.attempts)
      log_ << ", attempt " << result.attempts << " of " << options_.max_attempts;
    if (!result.error.empty())
      log_ << ": " << result.error;
    log_ << "\n";
    log_.flush();
    return result;
  }

  const TaskOptions &options_;
  llvm::raw_ostream &log_;
};

} // namespace

llvm::Expected<TaskResult> runFleetTask(const TaskOptions &options, llvm::raw_ostream &log) {
  llvm::Expected<Manifest> manifest = readManifest(options.manifest);
  if (!manifest)
    return manifest.takeError();
  const size_t rows = manifest->rows.size();
  if (options.stride == 0 && options.index >= rows)
    return createError("row " + std::to_string(options.index) + ": '" + options.manifest +
                       "' has rows 0 to " + std::to_string(rows - 1));
  if (options.max_attempts == 0)
    return createError("--max-attempts: must be at least 1");
  TaskResult result;
  if (llvm::Error e = prepareDir(*manifest, options.out_dir)) {
    Failure failure = describeFailure(std::move(e));
    if (!failure.transient_io)
      return createError(failure.message);
    // The directory is out of reach for now: every row of the task is for another attempt.
    for (size_t i = options.index; i < rows; i += options.stride ? options.stride : rows) {
      RowResult row;
      row.row = i;
      row.id = manifest->rows[i].id;
      row.outcome = RowOutcome::Transient;
      row.error = failure.message;
      row.exit_code = kTaskTransientIo;
      log << "dumpsift fleet task: row " << i << " (" << row.id << "): transient: " << row.error
          << "\n";
      result.rows.push_back(std::move(row));
    }
    result.exit_code = kTaskTransientIo;
    return result;
  }
  Task task(options, log);
  for (size_t i = options.index; i < rows; i += options.stride ? options.stride : rows)
    result.rows.push_back(task.handle(manifest->rows[i]));
  for (const RowResult &row : result.rows)
    if (row.exit_code != kTaskFinal) {
      result.exit_code = row.exit_code;
      break;
    }
  return result;
}

} // namespace dumpsift
