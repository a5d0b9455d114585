// A row's status file and the names of its files (row_status.h).
#include "dumpsift/fleet/row_status.h"

#include "dumpsift/support/atomic_file.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/utf8.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Errno.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <array>
#include <cerrno>
#include <utility>

namespace dumpsift {

namespace {
constexpr std::array<std::pair<RowOutcome, llvm::StringLiteral>, 8> kOutcomes = {{
    {RowOutcome::Running, "running"},
    {RowOutcome::Timeout, "timeout"},
    {RowOutcome::Transient, "transient"},
    {RowOutcome::Crashed, "crashed"},
    {RowOutcome::Ok, "ok"},
    {RowOutcome::Truncated, "truncated"},
    {RowOutcome::BadInput, "bad-input"},
    {RowOutcome::GaveUp, "gave-up"},
}};

/// DIR/NAME.
std::string inDir(llvm::StringRef dir, const llvm::Twine &name) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

/// The status in a status file's JSON text; an error says what is wrong.
llvm::Expected<RowStatus> parseStatus(llvm::StringRef text) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return createError("not JSON: " + llvm::toString(value.takeError()));
  const llvm::json::Object *object = value->getAsObject();
  if (!object)
    return createError("not a JSON object");
  RowStatus status;
  auto id = object->getString("id");
  auto row = object->getInteger("row");
  auto dump = object->getString("dump");
  auto outcome = object->getString("outcome");
  auto attempts = object->getInteger("attempts");
  if (!id || !row || *row < 0 || !dump || !outcome || !attempts || *attempts < 0)
    return createError("not a status (id, row, dump, outcome, attempts)");
  std::optional<RowOutcome> parsed = parseOutcome(*outcome);
  if (!parsed)
    return createError("unknown outcome '" + outcome->str() + "'");
  status.id = id->str();
  status.row = size_t(*row);
  status.dump = dump->str();
  status.outcome = *parsed;
  status.attempts = unsigned(*attempts);
  if (auto error = object->getString("error"))
    status.error = error->str();
  return status;
}

/// errno values of I/O that may work when tried again.
bool transientErrno(int value) {
  switch (value) {
  case EIO:
  case EAGAIN:
  case EINTR:
  case ENOSPC:
  case EDQUOT:
  case ESTALE:
  case ETIMEDOUT:
  case ENOMEM:
  case EMFILE:
  case ENFILE:
  case EBUSY:
  case ENOLCK:
  case ENETDOWN:
  case ENETUNREACH:
  case ENETRESET:
  case ECONNABORTED:
  case ECONNRESET:
  case EHOSTDOWN:
  case EHOSTUNREACH:
  case ENOLINK:
    return true;
  default:
    return false;
  }
}
} // namespace

bool isFinal(RowOutcome outcome) {
  return outcome == RowOutcome::Ok || outcome == RowOutcome::Truncated ||
         outcome == RowOutcome::BadInput || outcome == RowOutcome::GaveUp;
}

llvm::StringRef outcomeName(RowOutcome outcome) {
  for (const auto &[known, name] : kOutcomes)
    if (known == outcome)
      return name;
  return "running";
}

std::optional<RowOutcome> parseOutcome(llvm::StringRef name) {
  for (const auto &[known, known_name] : kOutcomes)
    if (known_name == name)
      return known;
  return std::nullopt;
}

std::string statusPath(llvm::StringRef dir, llvm::StringRef id) {
  return inDir(dir, id + ".status.json");
}

std::string reportPath(llvm::StringRef dir, llvm::StringRef id) {
  return inDir(dir, id + ".report.json");
}

std::string pagePath(llvm::StringRef dir, llvm::StringRef id) {
  return inDir(dir, id + ".html");
}

std::string manifestCopyPath(llvm::StringRef dir) {
  return inDir(dir, "manifest.jsonl");
}

llvm::Expected<std::optional<RowStatus>> readStatus(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    if (buffer.getError() == std::errc::no_such_file_or_directory)
      return std::nullopt;
    return llvm::createFileError(path, llvm::errorCodeToError(buffer.getError()));
  }
  llvm::Expected<RowStatus> status = parseStatus((*buffer)->getBuffer());
  if (!status)
    return llvm::createFileError(path, status.takeError());
  return std::optional<RowStatus>(std::move(*status));
}

llvm::Error writeStatus(const std::string &path, const RowStatus &status) {
  // JSON text is UTF-8: a path or a message in other bytes is repaired (U+FFFD).
  llvm::json::Object object{{"id", status.id},
                            {"row", int64_t(status.row)},
                            {"dump", toValidUtf8(status.dump)},
                            {"outcome", outcomeName(status.outcome)},
                            {"attempts", int64_t(status.attempts)}};
  if (!status.error.empty())
    object["error"] = toValidUtf8(status.error);
  return writeFileAtomically(path, [&](llvm::raw_ostream &out) {
    out << llvm::json::Value(std::move(object)) << "\n";
    return llvm::Error::success();
  });
}

Failure describeFailure(llvm::Error error) {
  Failure failure;
  llvm::handleAllErrors(std::move(error), [&](const llvm::ErrorInfoBase &info) {
    const std::error_code code = info.convertToErrorCode();
    if (code.category() == std::generic_category() || code.category() == std::system_category())
      failure.transient_io = failure.transient_io || transientErrno(code.value());
    failure.message += (failure.message.empty() ? "" : "; ") + info.message();
  });
  return failure;
}

} // namespace dumpsift
