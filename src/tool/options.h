// Turning raw command-line strings into validated library options (the second stage of argument
// parsing; CLI11 does the first).
#pragma once

#include "dumpsift/analysis/analysis.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace dumpsift::tool {

/// The buffer filters shared by `analyze`, `heap` and `extract`, as typed.
struct RawFilters {
  std::string min_size = "65536";
  std::string max_size;
  std::vector<std::string> kinds;
  std::string state = "all";
};

/// Validates `raw` into `options` (sizes accept 64K/1M/0x10000; kinds by report name).
llvm::Error resolveFilters(const RawFilters &raw, AnalyzeOptions &options);

} // namespace dumpsift::tool
