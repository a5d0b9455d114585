// What `dumpsift info` prints: what a dump holds (format, process, threads, modules, regions), as
// JSON or text.
#pragma once

#include "dumpsift/dump/snapshot.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace dumpsift {

/// Captured bytes per region class; the classes add up to snapshot.capturedBytes().
struct ClassTotals {
  uint64_t region_count[5] = {};
  uint64_t mapped[5] = {};
  uint64_t captured[5] = {};
};
ClassTotals classTotals(const Snapshot &snapshot);

/// `info --json`, then a newline. Deterministic: keys in a fixed order, regions by address.
void writeInfoJson(const Snapshot &snapshot, llvm::raw_ostream &out);

/// The human-readable `info` output.
void writeInfoText(const Snapshot &snapshot, llvm::raw_ostream &out);

} // namespace dumpsift
