// sniff(): what a buffer holds, from the registry's sniffers (signatures at offset 0, then within
// the first 4 KiB) and the statistics. docs/kinds.md describes the order.
#include "common.h"

#include <algorithm>

namespace dumpsift {

using namespace sniffimpl;

namespace {

/// Embedded candidates validated per sniffer and buffer: bounds the work on hostile buffers full
/// of near-miss signatures.
constexpr unsigned kMaxCandidatesPerSniffer = 16;

/// The earliest signature kind starting in [1, kEmbeddedWindow), with its offset set; nullopt
/// when none validates. Each sniffer searches only before the best offset found so far, so a tie
/// goes to the sniffer listed first.
std::optional<SniffResult> sniffEmbedded(Bytes buffer) {
  const size_t window = std::min(buffer.size(), Sniffer::kEmbeddedWindow);
  size_t best = Sniffer::kNoCandidate;
  std::optional<SniffResult> best_result;
  for (const auto &sniffer : sniffers()) {
    size_t from = 1;
    for (unsigned tries = 0; tries < kMaxCandidatesPerSniffer; ++tries) {
      const size_t limit = std::min(window, best);
      if (from >= limit)
        break;
      const size_t pos = sniffer->findCandidate(buffer, from, limit);
      if (pos == Sniffer::kNoCandidate || pos < from || pos >= limit)
        break;
      Bytes at = buffer.drop_front(pos);
      if (sniffer->quickCheck(at.take_front(Sniffer::kHeadBytes))) {
        if (std::optional<SniffResult> result = sniffer->validate(at)) {
          best = pos;
          result->offset = pos;
          best_result = std::move(result);
          break;
        }
      }
      from = pos + 1;
    }
  }
  return best_result;
}

/// sniff() without the exception guard.
SniffResult sniffUnguarded(Bytes buffer) {
  const Bytes head = buffer.take_front(Sniffer::kHeadBytes);
  for (const auto &sniffer : sniffers()) {
    if (!sniffer->quickCheck(head))
      continue;
    if (std::optional<SniffResult> result = sniffer->validate(buffer)) {
      result->offset = 0;
      return std::move(*result);
    }
  }
  if (std::optional<SniffResult> result = sniffEmbedded(buffer))
    return std::move(*result);
  if (std::optional<SniffResult> result = classifyStatistics(buffer))
    return std::move(*result);
  return makeResult(ContentKind::Unknown, buffer.size());
}

} // namespace

SniffResult sniff(llvm::ArrayRef<uint8_t> buffer) {
  try {
    return sniffUnguarded(buffer);
  } catch (...) { // only std::bad_alloc can get here; the contract is "never fails"
    SniffResult result;
    result.length = buffer.size();
    return result;
  }
}

} // namespace dumpsift
