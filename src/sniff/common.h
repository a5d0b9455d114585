// Internal helpers shared by the sniffers: byte readers, literal search, nested sniffing with a
// depth limit, and the factory of every sniffer (kinds.def lists them).
#pragma once

#include "dumpsift/sniff/sniffer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

namespace dumpsift::sniffimpl {

using Bytes = llvm::ArrayRef<uint8_t>;

// Big- and little-endian loads from a pointer (LLVM's); the caller has checked that the bytes
// exist.
using llvm::support::endian::read16be;
using llvm::support::endian::read16le;
using llvm::support::endian::read32be;
using llvm::support::endian::read32le;
using llvm::support::endian::read64be;

/// The 24-bit little-endian value at `p` (zstd block headers, WebP VP8X sizes).
inline uint32_t read24le(const uint8_t *p) {
  return uint32_t(read16le(p)) | uint32_t(p[2]) << 16;
}

/// True when `data` starts with the bytes of `literal`.
inline bool startsWith(Bytes data, llvm::StringRef literal) {
  return data.size() >= literal.size() &&
         std::memcmp(data.data(), literal.data(), literal.size()) == 0;
}

/// True when data[at..] starts with `literal` (false when it would run past the end).
inline bool hasAt(Bytes data, size_t at, llvm::StringRef literal) {
  return at <= data.size() && startsWith(data.drop_front(at), literal);
}

/// True when data[at..] starts with `lower_literal` compared case-insensitively (ASCII).
bool hasAtNoCase(Bytes data, size_t at, llvm::StringRef lower_literal);

/// The first offset p in [from, limit) where `literal` occurs in `data` (the match may extend past
/// `limit`, never past the end), or Sniffer::kNoCandidate. memmem speed; no allocation.
size_t findLiteral(Bytes data, size_t from, size_t limit, llvm::StringRef literal);

/// Like findLiteral, but the first match of `literal` at or after `from` anywhere in data[..end).
size_t findLiteralIn(Bytes data, size_t from, size_t end, llvm::StringRef literal);

/// The kind of a nested payload (the body of a frame, the start of inflated data), or nullopt
/// when the payload is empty or nesting is already too deep (two levels). Thread-safe.
std::optional<ContentKind> nestedKind(Bytes payload);

/// Copies at most `max` bytes of `data` into a string, replacing bytes outside printable ASCII by
/// '?'; for names and titles in details.
std::string printableString(Bytes data, size_t max = 128);

/// A result of `kind` covering `length` bytes from offset 0 (estimated when `estimated`).
SniffResult makeResult(ContentKind kind, uint64_t length, bool estimated = false);

/// How far past a text scan's limit the end of the text (its first NUL) is looked for.
inline constexpr size_t kTextEndScan = 1u << 20;

/// Where text that runs on from `from` ends: its first NUL byte within kTextEndScan bytes, else
/// the end of `data`. Text never holds a NUL; the bytes after it are the buffer's slack.
size_t textEnd(Bytes data, size_t from);

// The sniffer factories, one per signature kind of kinds.def, each defined in its sniffer's file.
#define DUMPSIFT_SIGNATURE_KIND(kind, name, extension, family, mime, payloads, thumbnail, colour,  \
                                factory, priority)                                                 \
  std::unique_ptr<Sniffer> factory();
#include "dumpsift/sniff/kinds.def"

/// True when `data` reads as JPEG entropy-coded data (the middle of an image, no headers): within
/// its first 64 KiB, at least 8 FF bytes and every FF followed by 00 (stuffing), D0-D7 (restart)
/// or FF (fill), up to an EOI. Random bytes pass with odds below 1e-11. See jpeg.cpp.
bool isJpegEntropyCoded(Bytes data);

/// The statistical kinds (zero, text, utf16, random) of `buffer`, from bounded samples; nullopt
/// means unknown. Allocation-free when it returns nullopt. See statistics.cpp.
std::optional<SniffResult> classifyStatistics(Bytes buffer);

} // namespace dumpsift::sniffimpl
