// Writing extracted files: the directory checks, limits, deduplication, atomic streamed writes with
// SHA-256 on the way, and the manifest.
#include "dumpsift/extract/extract.h"

#include "dumpsift/support/atomic_file.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "pieces.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <map>

namespace dumpsift {

namespace {

using Bytes = llvm::ArrayRef<uint8_t>;
namespace fs = llvm::sys::fs;

/// Bytes are hashed and written in slices of this size: bounded work per call, nothing buffered.
constexpr uint64_t kSlice = 1u << 20;

/// LLVM 14's SHA256 counts the message length in 32 bits: from 4 GiB on its digest is wrong, so
/// files that large get none.
constexpr uint64_t kSha256Limit = uint64_t(1) << 32;

/// Calls `each` with consecutive slices of at most kSlice bytes covering every piece in order.
template <typename Fn> void forEachSlice(llvm::ArrayRef<Bytes> pieces, Fn each) {
  for (Bytes piece : pieces)
    for (uint64_t at = 0; at < piece.size(); at += kSlice)
      each(piece.slice(at, std::min<uint64_t>(kSlice, piece.size() - at)));
}

/// Lowercase hex SHA-256 of the joined pieces, streamed; "" when they reach kSha256Limit.
std::string sha256Hex(llvm::ArrayRef<Bytes> pieces) {
  if (totalSize(pieces) >= kSha256Limit)
    return "";
  llvm::SHA256 sha;
  forEachSlice(pieces, [&](Bytes slice) { sha.update(slice); });
  return llvm::toHex(sha.final(), /*LowerCase=*/true);
}

/// Makes `dir` ready: created when missing; otherwise a directory, empty unless `force`, and one
/// this process may write into. Errors name `dir` and say what is wrong.
llvm::Error prepareDirectory(llvm::StringRef dir, bool force) {
  if (dir.empty())
    return createError("the extraction directory is an empty path");
  auto dirError = [&](const llvm::Twine &why) {
    return llvm::createFileError(dir, createError(why));
  };
  fs::file_status status;
  std::error_code ec = fs::status(dir, status);
  if (ec == std::errc::no_such_file_or_directory) {
    if ((ec = fs::create_directories(dir)))
      return dirError("cannot create the directory: " + ec.message());
  } else if (ec) {
    return dirError(ec.message());
  } else if (!fs::is_directory(status)) {
    return dirError("exists and is not a directory");
  } else if (!force) {
    fs::directory_iterator it(dir, ec), end;
    if (ec)
      return dirError("cannot list the directory: " + ec.message());
    if (it != end)
      return dirError("the directory is not empty (--force writes into it anyway)");
  }
  if ((ec = fs::access(dir, fs::AccessMode::Write)))
    return dirError("cannot write into the directory: " + ec.message());
  return llvm::Error::success();
}

/// `dir`/`name`.
std::string joinPath(llvm::StringRef dir, llvm::StringRef name) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

/// Writes `dir`/manifest.jsonl (atomically) with `write_manifest`.
llvm::Error writeManifest(llvm::StringRef dir, const Extraction &extraction,
                          ManifestWriter write_manifest) {
  return writeFileAtomically(joinPath(dir, kManifestName), [&](llvm::raw_ostream &out) {
    write_manifest(extraction, out);
    return llvm::Error::success();
  });
}

/// Why extraction stops before `item`, or success when the limits allow writing it.
llvm::Error checkLimits(const ExtractItem &item, const Extraction &done,
                        const ExtractOptions &options) {
  using std::to_string;
  if (done.files.size() >= options.max_files)
    return createError("file limit reached: '" + item.file.name + "' would be file " +
                       to_string(done.files.size() + 1) + ", over --max-files " +
                       to_string(options.max_files));
  if (item.file.size > options.max_bytes - done.bytes_written)
    return createError("byte limit reached: '" + item.file.name + "' (" +
                       to_string(item.file.size) + " bytes) would take the files to " +
                       to_string(done.bytes_written + item.file.size) +
                       " bytes, over --max-bytes " + to_string(options.max_bytes) + " (" +
                       humanBytes(options.max_bytes) + ")");
  return llvm::Error::success();
}

} // namespace

llvm::Expected<ExtractedFile> writeItem(const ExtractItem &item, llvm::StringRef path,
                                        bool overwrite) {
  if (!overwrite && fs::exists(path))
    return llvm::createFileError(path, createError("the file already exists"));
  ExtractedFile file = item.file;
  const bool hash = file.sha256.empty() && totalSize(item.pieces) < kSha256Limit;
  llvm::SHA256 sha;
  llvm::Error written = writeFileAtomically(path, [&](llvm::raw_ostream &out) {
    forEachSlice(item.pieces, [&](Bytes slice) {
      if (hash)
        sha.update(slice);
      out.write(reinterpret_cast<const char *>(slice.data()), slice.size());
    });
    return llvm::Error::success();
  });
  if (written)
    return written;
  if (hash)
    file.sha256 = llvm::toHex(sha.final(), /*LowerCase=*/true);
  return file;
}

namespace {

/// The loop of extractBuffers: writes the selected buffers' items into `dir` (ready), recording
/// each file in `result`; returns the error that stopped it (a limit, a failed write).
llvm::Error writeAll(const AddressSpace &memory, llvm::ArrayRef<Buffer> buffers,
                     llvm::StringRef dir, const ExtractOptions &options, Extraction &result,
                     ProgressFn progress) {
  auto selected = [&](const Buffer &b) {
    return !options.group_size || b.allocation.size == *options.group_size;
  };
  uint64_t total = 0, done = 0;
  for (const Buffer &b : buffers)
    if (selected(b))
      total += b.payloadSize();

  std::map<std::string, size_t> by_sha256; // dedupe: content -> index in result.files
  for (const Buffer &b : buffers) {
    if (!selected(b))
      continue;
    std::vector<ExtractItem> items = extractItems(memory, b, options.raw, options.decode);
    if (items.empty())
      result.diagnostics.warn(hexAddress(b.allocation.address),
                              "the dump holds none of its bytes: no file written");
    for (ExtractItem &item : items) {
      if (options.dedupe) {
        item.file.sha256 = sha256Hex(item.pieces);
        auto it = item.file.sha256.empty() ? by_sha256.end() : by_sha256.find(item.file.sha256);
        if (it != by_sha256.end()) {
          std::vector<uint64_t> &addresses = result.files[it->second].addresses;
          if (addresses.back() != item.file.address)
            addresses.push_back(item.file.address);
          ++result.duplicates;
          continue;
        }
        item.file.addresses = {item.file.address};
      }
      if (llvm::Error e = checkLimits(item, result, options))
        return e;
      auto written = writeItem(item, joinPath(dir, item.file.name), /*overwrite=*/true);
      if (!written)
        return written.takeError();
      if (written->sha256.empty())
        result.diagnostics.warn(written->name,
                                "4 GiB or more: no SHA-256 computed, not deduplicated");
      else if (options.dedupe)
        by_sha256.emplace(written->sha256, result.files.size());
      result.bytes_written += written->size;
      result.files.push_back(std::move(*written));
    }
    done += b.payloadSize();
    progress("extracting", done, total);
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error extractBuffers(const AddressSpace &memory, llvm::ArrayRef<Buffer> buffers,
                           llvm::StringRef dir, const ExtractOptions &options,
                           ManifestWriter write_manifest, Extraction &result, ProgressFn progress) {
  result.dir = dir.str();
  result.files.clear();
  result.bytes_written = 0;
  result.duplicates = 0;
  result.diagnostics = Diagnostics();
  if (llvm::Error e = prepareDirectory(dir, options.force))
    return e;

  llvm::Error stopped = writeAll(memory, buffers, dir, options, result, progress);
  llvm::Error manifest = writeManifest(dir, result, write_manifest);
  if (!stopped)
    return manifest;
  std::string message = llvm::toString(std::move(stopped));
  message += "; stopped with " + std::to_string(result.files.size()) + " complete files (" +
             humanBytes(result.bytes_written) + ")";
  if (manifest)
    message += "; the manifest was not written either: " + llvm::toString(std::move(manifest));
  else
    message += " listed in '" + joinPath(dir, kManifestName) + "'";
  return createError(message);
}

} // namespace dumpsift
