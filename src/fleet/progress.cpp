// Where a fleet's rows stand (progress.h).
#include "dumpsift/fleet/progress.h"

namespace dumpsift {

llvm::Expected<FleetProgress> readProgress(const std::string &manifest_path,
                                           const std::string &dir) {
  llvm::Expected<Manifest> manifest = readManifest(manifest_path);
  if (!manifest)
    return manifest.takeError();
  FleetProgress progress;
  progress.manifest = std::move(*manifest);
  for (const ManifestRow &row : progress.manifest.rows) {
    llvm::Expected<std::optional<RowStatus>> status = readStatus(statusPath(dir, row.id));
    if (!status)
      return status.takeError();
    if (!*status || !isFinal((*status)->outcome))
      progress.to_run.push_back(row.index);
    progress.statuses.push_back(std::move(*status));
  }
  return progress;
}

std::string arrayRanges(const std::vector<size_t> &indices) {
  std::string out;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1)
      ++j;
    out += (out.empty() ? "" : ",") + std::to_string(indices[i]);
    if (j > i)
      out += "-" + std::to_string(indices[j]);
    i = j + 1;
  }
  return out;
}

} // namespace dumpsift
