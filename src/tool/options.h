// The options that say how a dump is analyzed, declared once for every command that analyzes one:
// `analyze`, and `diff` and `check` for inputs that are dumps. Arguments are taken in two stages:
// CLI11 fills the raw strings, then resolveAnalyzeOptions validates them into library options.
#pragma once

#include "dumpsift/analysis/analysis.h"

#include "llvm/Support/Error.h"

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace dumpsift::tool {

/// The analysis options as typed.
struct AnalyzeArgs {
  std::string min_size = "65536";
  std::string max_size;
  std::vector<std::string> kinds;
  std::string state = "all";
  std::vector<std::string> walkers;
  bool no_region_scan = false;
  unsigned threads = 0;
  bool full_hash = false;
  std::string group_by = "size";
  std::string holders = "chains";        // --holders
  std::vector<std::string> module_paths; // --module-path
  bool no_module_files = false;          // --no-module-files
};

/// Declares the analysis options on `command`, in one option group named `group_name`.
CLI::Option_group *addAnalyzeOptions(CLI::App &command, AnalyzeArgs &args,
                                     const std::string &group_name);

/// True when any option of `group` was given on the command line.
bool anyGiven(const CLI::Option_group &group);

/// `args` as the arguments `analyze` takes, those that differ from the defaults only (`fleet
/// task` hands them to the analysis it runs).
std::vector<std::string> analyzeArguments(const AnalyzeArgs &args);

/// Validates `args` (sizes accept 64K/1M/0x10000; kinds by report name; walkers by registry name);
/// errors name the option and, for a name, list the known ones.
llvm::Expected<AnalyzeOptions> resolveAnalyzeOptions(const AnalyzeArgs &args);

} // namespace dumpsift::tool
