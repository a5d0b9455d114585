// Helpers shared by the sniffers (see common.h).
#include "common.h"

#include <algorithm>
#include <cstring>

namespace dumpsift::sniffimpl {

bool hasAtNoCase(Bytes data, size_t at, llvm::StringRef lower_literal) {
  if (at > data.size() || data.size() - at < lower_literal.size())
    return false;
  for (size_t i = 0; i < lower_literal.size(); ++i)
    if (lowerAscii(data[at + i]) != static_cast<uint8_t>(lower_literal[i]))
      return false;
  return true;
}

size_t findLiteralIn(Bytes data, size_t from, size_t end, llvm::StringRef literal) {
  end = std::min(end, data.size());
  if (literal.empty() || from >= end || end - from < literal.size())
    return Sniffer::kNoCandidate;
  const void *hit = memmem(data.data() + from, end - from, literal.data(), literal.size());
  if (!hit)
    return Sniffer::kNoCandidate;
  return static_cast<size_t>(static_cast<const uint8_t *>(hit) - data.data());
}

size_t findLiteral(Bytes data, size_t from, size_t limit, llvm::StringRef literal) {
  if (from >= limit)
    return Sniffer::kNoCandidate;
  const size_t end = limit > SIZE_MAX - literal.size() ? SIZE_MAX : limit + literal.size() - 1;
  return findLiteralIn(data, from, end, literal);
}

llvm::StringRef nestedKind(Bytes payload) {
  thread_local unsigned depth = 0;
  constexpr unsigned kMaxDepth = 2;
  if (payload.empty() || depth >= kMaxDepth)
    return "";
  struct Guard {
    Guard() { ++depth; }
    ~Guard() { --depth; }
  } guard;
  return kindName(sniff(payload).kind);
}

std::string printableString(Bytes data, size_t max) {
  std::string out;
  const size_t n = std::min(data.size(), max);
  out.reserve(n);
  for (size_t i = 0; i < n; ++i)
    out.push_back(data[i] >= 0x20 && data[i] < 0x7f ? static_cast<char>(data[i]) : '?');
  return out;
}

SniffResult makeResult(ContentKind kind, uint64_t length, bool estimated) {
  SniffResult result;
  result.kind = kind;
  result.length = length;
  result.length_estimated = estimated;
  return result;
}

} // namespace dumpsift::sniffimpl
