// Findings: waste named in plain words (copies, growth chains, idle pools, size-class hints).
// Every type, its numbers and its rules are documented in docs/findings.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dumpsift {

class AddressSpace;
struct Analysis;

struct Finding {
  std::string type;   // stable name: "duplicates", "growth-chain", ...
  uint64_t bytes = 0; // the bytes it costs
  std::vector<uint64_t> addresses;
  std::string explanation;                               // one line, printed by the text summary
  std::vector<std::pair<std::string, uint64_t>> numbers; // type-specific figures (count, size...)
};

/// Every finding type, as it appears in the report (`findings[].type`). Stable: a name is never
/// renamed or given another meaning.
inline constexpr std::array<std::string_view, 7> kFindingTypes = {
    "duplicates", "growth-chain",   "zero-filled", "zero-tail",
    "size-class", "many-same-size", "held-by-type"};

/// Names the waste among `analysis.buffers` (which must be sniffed and hashed, as analyze() leaves
/// them): identical copies, the old arrays of a growing buffer, all-zero buffers, buffers with a
/// long zero tail, sizes on well-known thresholds and pool buckets, and many buffers of one size
/// and kind, and the types whose objects hold buffers in several fields (from `analysis.holders`,
/// when the holders pass ran). Reads buffer bytes from `memory` (zero-copy) to confirm what hashes
/// suggest.
///
/// Only buffers that are not free count, and content findings use only fully captured buffers.
/// Findings that cost less than 64 KiB are dropped. The result is sorted by bytes (largest
/// first), then type, then first address. Work is linear in the bytes of the buffers that share
/// a hash or a first-256-bytes hash, plus a backward scan of each buffer's zero tail. Never fails.
std::vector<Finding> computeFindings(const AddressSpace &memory, const Analysis &analysis);

} // namespace dumpsift
