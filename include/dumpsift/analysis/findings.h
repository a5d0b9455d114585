// Findings: waste named in plain words (copies, growth chains, idle pools, size-class hints).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dumpsift {

struct Finding {
  std::string type;        // stable name: "duplicates", "growth-chain", ...
  uint64_t bytes = 0;      // the bytes it costs
  std::vector<uint64_t> addresses;
  std::string explanation; // one line, printed by the text summary
  std::vector<std::pair<std::string, uint64_t>> numbers; // type-specific figures (count, size...)
};

} // namespace dumpsift
