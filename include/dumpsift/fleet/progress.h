// Where a fleet's rows stand (`dumpsift fleet status`, docs/fleet.md): each row's status, and the
// rows still to run in the form `sbatch --array=` takes.
#pragma once

#include "dumpsift/fleet/manifest.h"
#include "dumpsift/fleet/row_status.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

struct FleetProgress {
  Manifest manifest;
  std::vector<std::optional<RowStatus>> statuses; // by row; nullopt: never started
  std::vector<size_t> to_run;                     // rows without a final status, ascending
};

/// Reads the manifest at `manifest_path` and each row's status in `dir` (a directory that does
/// not exist yet has no statuses). An error names the manifest or the status file that cannot be
/// read.
llvm::Expected<FleetProgress> readProgress(const std::string &manifest_path,
                                           const std::string &dir);

/// `indices` (ascending) as array task indices: runs of consecutive ones as ranges, "1,4-6,9".
std::string arrayRanges(const std::vector<size_t> &indices);

} // namespace dumpsift
