// `dumpsift info`: what a dump holds (format, process, threads, modules, regions), as JSON or text.
#pragma once

#include "dumpsift/dump/snapshot.h"

#include <nlohmann/json.hpp>
#include <ostream>

namespace dumpsift {

using Json = nlohmann::ordered_json;

/// Captured bytes per region class; the classes add up to snapshot.capturedBytes().
struct ClassTotals {
  uint64_t region_count[5] = {};
  uint64_t mapped[5] = {};
  uint64_t captured[5] = {};
};
ClassTotals classTotals(const Snapshot &snapshot);

/// The dump's identity for every report: path, format, os, arch, pid, process, captured bytes.
Json dumpSummaryJson(const Snapshot &snapshot);

/// Everything `info --json` prints. Deterministic: keys in a fixed order, regions by address.
Json infoJson(const Snapshot &snapshot);

/// The human-readable `info` output.
void writeInfoText(const Snapshot &snapshot, std::ostream &out);

/// Warnings as a JSON array of {"where", "message"} (plus a final count of suppressed ones).
Json diagnosticsJson(const Diagnostics &diags);

} // namespace dumpsift
