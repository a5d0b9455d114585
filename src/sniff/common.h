// Internal helpers shared by the sniffers: bounds-checked byte readers, literal search, nested
// sniffing with a depth limit, and the factory of every sniffer (listed in registry.cpp).
#pragma once

#include "dumpsift/sniff/sniffer.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

namespace dumpsift::sniffimpl {

using Bytes = llvm::ArrayRef<uint8_t>;

/// Big- and little-endian loads from `p`; the caller has checked that the bytes exist.
inline uint16_t be16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline uint32_t be32(const uint8_t *p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
inline uint64_t be64(const uint8_t *p) {
  return uint64_t(be32(p)) << 32 | be32(p + 4);
}
inline uint16_t le16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}
inline uint32_t le24(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16;
}
inline uint32_t le32(const uint8_t *p) {
  return le24(p) | uint32_t(p[3]) << 24;
}
inline uint64_t le64(const uint8_t *p) {
  return uint64_t(le32(p)) | uint64_t(le32(p + 4)) << 32;
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

/// 0-15 for a hex digit (either case), -1 otherwise.
inline int hexValue(uint8_t c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// ASCII lower-casing of one byte.
inline uint8_t lowerAscii(uint8_t c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/// True when data[at..] starts with `lower_literal` compared case-insensitively (ASCII).
bool hasAtNoCase(Bytes data, size_t at, llvm::StringRef lower_literal);

/// The first offset p in [from, limit) where `literal` occurs in `data` (the match may extend past
/// `limit`, never past the end), or Sniffer::kNoCandidate. memmem speed; no allocation.
size_t findLiteral(Bytes data, size_t from, size_t limit, llvm::StringRef literal);

/// Like findLiteral, but the first match of `literal` at or after `from` anywhere in data[..end).
size_t findLiteralIn(Bytes data, size_t from, size_t end, llvm::StringRef literal);

/// The kind name of a nested payload (the body of a frame, the start of inflated data), or ""
/// when the payload is empty or nesting is already too deep (two levels). Thread-safe.
llvm::StringRef nestedKind(Bytes payload);

/// Copies at most `max` bytes of `data` into a string, replacing bytes outside printable ASCII by
/// '?'; for names and titles in details.
std::string printableString(Bytes data, size_t max = 128);

/// A result of `kind` covering `length` bytes from offset 0 (estimated when `estimated`).
SniffResult makeResult(ContentKind kind, uint64_t length, bool estimated = false);

// Sniffer factories, one per kind; registry.cpp lists them in priority order.
std::unique_ptr<Sniffer> makeJpegSniffer();
std::unique_ptr<Sniffer> makePngSniffer();
std::unique_ptr<Sniffer> makeGifSniffer();
std::unique_ptr<Sniffer> makeWebpSniffer();
std::unique_ptr<Sniffer> makeBmpSniffer();
std::unique_ptr<Sniffer> makeGzipSniffer();
std::unique_ptr<Sniffer> makeZlibSniffer();
std::unique_ptr<Sniffer> makeZstdSniffer();
std::unique_ptr<Sniffer> makeZipSniffer();
std::unique_ptr<Sniffer> makePdfSniffer();
std::unique_ptr<Sniffer> makeAwsChunkedSniffer();
std::unique_ptr<Sniffer> makeAmqpSniffer();
std::unique_ptr<Sniffer> makeHttpSniffer();
std::unique_ptr<Sniffer> makeJsonSniffer();
std::unique_ptr<Sniffer> makeXmlSniffer();
std::unique_ptr<Sniffer> makeHtmlSniffer();

/// The statistical kinds (zero, text, utf16, random) of `buffer`, from bounded samples; nullopt
/// means unknown. Allocation-free when it returns nullopt. See statistics.cpp.
std::optional<SniffResult> classifyStatistics(Bytes buffer);

} // namespace dumpsift::sniffimpl
