// A saved analysis report read back: the other direction of writeReportJson (report.h), kept
// beside it in this layer so that what is written and what is read agree. `diff` and `check` read
// a report's figures through it; so should anything else that reads reports. The JSON stays
// inside the report layer: nothing here names a JSON library.
#pragma once

#include "dumpsift/compare/figures.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace dumpsift {

/// What a report says of itself and of its buffers, read back from its JSON text.
struct SavedReport {
  uint64_t schema_version = 0;
  /// What diff and check read: totals, kinds, groups, findings, dump.path, dump.truncated, the
  /// number of warnings, and the options as recorded.
  ReportFigures figures;
};

/// Whether `bytes` (a file's first bytes, or all of them) are a report's rather than a dump's:
/// its first byte that is not blank is '{' (docs/ci.md).
bool isReportText(llvm::StringRef bytes);

/// Reads a report's JSON text, of schema version kOldestReadableReportSchemaVersion to
/// kReportSchemaVersion. Fails with "not a JSON report (a JSON object)" when isReportText is not
/// true of it; a syntax error reads "line L, column C: WHY"; a field that is read but missing or of
/// the wrong type gives its JSON pointer first ("/groups/3/count: expected a non-negative integer,
/// got a string"). Fields it does not read are not validated (scripts/validate_report.py does).
llvm::Expected<SavedReport> readReport(llvm::StringRef text);

} // namespace dumpsift
