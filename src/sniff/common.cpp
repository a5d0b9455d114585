// Helpers shared by the sniffers (see common.h).
#include "common.h"

#include <algorithm>
#include <cstring>

namespace dumpsift::sniffimpl {

bool hasAtNoCase(Bytes data, size_t at, llvm::StringRef lower_literal) {
  if (at > data.size() || data.size() - at < lower_literal.size())
    return false;
  return llvm::toStringRef(data.slice(at, lower_literal.size())).equals_insensitive(lower_literal);
}

namespace {

/// How rare a byte is expected to be in memory buffers: 0 for 00/FF (padding, -1), 1 for text
/// letters, digits and space, 2 for other printable ASCII, 3 for the rest.
int byteRarity(uint8_t b) {
  if (b == 0x00 || b == 0xFF)
    return 0;
  if ((b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == ' ')
    return 1;
  if (b > 0x20 && b < 0x7f)
    return 2;
  return 3;
}

/// The index of the rarest byte of `literal` (the first of equals): the memchr anchor.
size_t anchorIndex(llvm::StringRef literal) {
  size_t best = 0;
  for (size_t i = 1; i < literal.size(); ++i)
    if (byteRarity(uint8_t(literal[i])) > byteRarity(uint8_t(literal[best])))
      best = i;
  return best;
}

} // namespace

size_t findLiteralIn(Bytes data, size_t from, size_t end, llvm::StringRef literal) {
  end = std::min(end, data.size());
  const size_t len = literal.size();
  if (len == 0 || from >= end || end - from < len)
    return Sniffer::kNoCandidate;
  // memchr (vectorised) on the literal's rarest byte, then a compare: far faster than memmem for
  // short needles over binary data.
  const size_t k = anchorIndex(literal);
  const uint8_t anchor = static_cast<uint8_t>(literal[k]);
  const uint8_t *base = data.data();
  const size_t last = end - len + k; // the anchor's last possible position
  for (size_t pos = from + k; pos <= last;) {
    const void *hit = std::memchr(base + pos, anchor, last - pos + 1);
    if (!hit)
      return Sniffer::kNoCandidate;
    const size_t h = static_cast<size_t>(static_cast<const uint8_t *>(hit) - base);
    if (std::memcmp(base + h - k, literal.data(), len) == 0)
      return h - k;
    pos = h + 1;
  }
  return Sniffer::kNoCandidate;
}

size_t findLiteral(Bytes data, size_t from, size_t limit, llvm::StringRef literal) {
  if (from >= limit)
    return Sniffer::kNoCandidate;
  const size_t end = limit > SIZE_MAX - literal.size() ? SIZE_MAX : limit + literal.size() - 1;
  return findLiteralIn(data, from, end, literal);
}

std::optional<ContentKind> nestedKind(Bytes payload) {
  thread_local unsigned depth = 0;
  constexpr unsigned kMaxDepth = 2;
  if (payload.empty() || depth >= kMaxDepth)
    return std::nullopt;
  struct Guard {
    Guard() { ++depth; }
    ~Guard() { --depth; }
  } guard;
  return sniff(payload).kind;
}

std::string printableString(Bytes data, size_t max) {
  std::string out;
  const size_t n = std::min(data.size(), max);
  out.reserve(n);
  for (size_t i = 0; i < n; ++i)
    out.push_back(data[i] >= 0x20 && data[i] < 0x7f ? static_cast<char>(data[i]) : '?');
  return out;
}

size_t textEnd(Bytes data, size_t from) {
  if (from >= data.size())
    return data.size();
  const size_t to = std::min(data.size(), from + std::min(kTextEndScan, data.size() - from));
  const void *nul = std::memchr(data.data() + from, 0, to - from);
  return nul ? static_cast<size_t>(static_cast<const uint8_t *>(nul) - data.data()) : data.size();
}

SniffResult makeResult(ContentKind kind, uint64_t length, bool estimated) {
  SniffResult result;
  result.kind = kind;
  result.length = length;
  result.length_estimated = estimated;
  return result;
}

} // namespace dumpsift::sniffimpl
