// Opening dumps in tests: a file that must open, and a live fixture process dumped with gcore.
// Header-only: the test binaries that include it link the dump layer.
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

namespace dumpsift::test {

/// The dump at `path`, opened (FAILs with the reason when it does not open).
inline std::unique_ptr<Snapshot> mustOpenDump(const std::string &path) {
  auto snapshot = openDump(path);
  if (!snapshot)
    FAIL(path << ": " << llvm::toString(snapshot.takeError()));
  return std::move(*snapshot);
}

/// `process` dumped with gcore into a fresh scratch directory called `name`, then opened.
inline std::unique_ptr<Snapshot> dumpLive(const LiveProcess &process, const std::string &name) {
  const std::string core = scratchDir(name) + "/core";
  process.gcore(core);
  return mustOpenDump(core);
}

} // namespace dumpsift::test
