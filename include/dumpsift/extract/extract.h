// Extraction: writes buffers out of a dump as files people can open. Names come from the tool
// (`<address>-<size>.<ext>`), never from the dump; bytes stream from the mapped dump to each file,
// which is written atomically (temporary file + rename); a manifest (manifest.jsonl) lists every
// file with its SHA-256. Framed content (aws-chunked, amqp) also yields the payloads its sniffer
// decodes (Sniffer::decodePayloads). What this layer returns is data (ExtractedFile); the report
// layer writes it as the manifest's JSON lines.
#pragma once

#include "dumpsift/analysis/analysis.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

/// The manifest's file name inside an extraction directory.
inline constexpr llvm::StringLiteral kManifestName = "manifest.jsonl";

struct ExtractOptions {
  bool raw = false;    // write the whole allocation instead of the content from its offset
  bool decode = true;  // also write the decoded payloads of framed content
  bool dedupe = false; // write identical bytes once; the manifest lists every address
  bool force = false;  // write into a directory that is not empty
  std::optional<uint64_t> group_size;     // only buffers of exactly this allocation size
  uint64_t max_bytes = uint64_t(1) << 30; // stop before the files would hold more than this
  uint64_t max_files = UINT64_MAX;        // stop before writing more files than this
};

/// What an extracted file holds: a buffer, the joined payload of an aws-chunked body, or the body
/// of one AMQP message.
enum class ExtractRole : uint8_t { Buffer, Payload, Body };
llvm::StringRef roleName(ExtractRole role); // "buffer", "payload", "body"

/// One file (written, or to be written).
struct ExtractedFile {
  std::string name; // file name chosen by the tool: "0x7f12a4c01010-131072.jpg"
  ExtractRole role = ExtractRole::Buffer;
  unsigned body = 0;    // Body: the number among the buffer's non-empty message bodies, from 1
  uint64_t address = 0; // the allocation the bytes come from (Allocation::address)
  uint64_t offset = 0;  // where the first byte lies, from `address` (Payload/Body: first piece)
  uint64_t size = 0;    // bytes in the file
  uint64_t pieces = 1;  // Payload/Body: framed pieces joined (chunks, body frames)
  AllocState state = AllocState::Unknown;
  ContentKind kind = ContentKind::Unknown;
  Details details;
  /// The content goes on past what the file holds: the format says it is cut (a truncated JPEG,
  /// a cut frame), or the dump did not capture all of it.
  bool truncated = false;
  std::string sha256; // lowercase hex of the file's bytes; empty when not computed (>= 4 GiB)
  /// With dedupe: the address of every buffer whose file would hold these same bytes (first is
  /// `address`). Empty without dedupe.
  std::vector<uint64_t> addresses;
};

/// A file to write: its description and its bytes, as views into the mapped dump (in order).
struct ExtractItem {
  ExtractedFile file;
  std::vector<llvm::ArrayRef<uint8_t>> pieces;
};

/// The files one buffer yields, named but not hashed: the buffer (its content from the content's
/// offset for the content's length, or with `raw` the whole allocation), then, with `decode`, the
/// payloads its kind's sniffer decodes (Sniffer::decodePayloads: the payload of an aws-chunked
/// body, the body of each AMQP message). Only captured bytes are included; an item is marked
/// truncated when the dump lacks some. Items with no bytes are left out. Zero-copy: memory grows
/// with the number of pieces, not bytes.
std::vector<ExtractItem> extractItems(const AddressSpace &memory, const Buffer &buffer, bool raw,
                                      bool decode);

/// Writes `item` to `path` atomically, hashing it on the way (streamed in bounded slices). Refuses
/// an existing `path` unless `overwrite`. Returns the file's description with sha256 set; on error
/// `path` is untouched and the error names it and the cause (disk full, permission denied, ...).
llvm::Expected<ExtractedFile> writeItem(const ExtractItem &item, llvm::StringRef path,
                                        bool overwrite);

/// What an extraction wrote.
struct Extraction {
  std::string dir;                  // the directory, as given
  std::vector<ExtractedFile> files; // in write order: by buffer, each buffer's payloads after it
  uint64_t bytes_written = 0;
  uint64_t duplicates = 0; // with dedupe: contents not written again
  Diagnostics diagnostics; // buffers skipped (nothing captured), hashes not computed
};

/// Writes the manifest of an extraction into `out` (the report layer's writeManifest).
using ManifestWriter = llvm::function_ref<void(const Extraction &, llvm::raw_ostream &)>;

/// Writes every buffer of `buffers` (that passes options.group_size) and its decoded payloads into
/// `dir`, then `dir`/manifest.jsonl with `write_manifest`. Creates `dir` when missing; refuses a
/// non-empty `dir` unless options.force, and a `dir` that is not a writable directory. Never writes
/// outside `dir`: every name is built from numbers and kind extensions. Checks the limits before
/// each file, so a file is written whole or not at all. On an error (a limit, disk full) stops,
/// writes the manifest of the files written so far (complete ones only), and returns an error that
/// says why and what was kept; `result` then describes those files.
llvm::Error extractBuffers(
    const AddressSpace &memory, llvm::ArrayRef<Buffer> buffers, llvm::StringRef dir,
    const ExtractOptions &options, ManifestWriter write_manifest, Extraction &result,
    ProgressFn progress = [](llvm::StringRef, uint64_t, uint64_t) {});

/// The buffer holding `address`: the innermost allocation any detected heap walker reports
/// (chunk header included), else a buffer the region scan finds (as `analyze` would, default
/// sizes). Sniffed, with `captured` set. Fails when no known allocation holds `address`. Walker
/// warnings go to `diags`.
llvm::Expected<Buffer> locateBuffer(const AddressSpace &memory, uint64_t address,
                                    Diagnostics &diags);

} // namespace dumpsift
