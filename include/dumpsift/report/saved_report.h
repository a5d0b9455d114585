// A saved analysis report read back: the other direction of writeReportJson (report.h), kept
// beside it in this layer so that what is written and what is read agree (a round-trip test holds
// every analysis option to it). `diff` and `check` read a report's figures through it, `html` its
// options and the dump it names; so should anything else that reads reports. The JSON stays inside
// the report layer: nothing here names a JSON library.
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/compare/figures.h"
#include "dumpsift/dump/snapshot.h"
#include "dumpsift/report/labels.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace dumpsift {

/// What a report says of itself and of its buffers, read back from its JSON text.
struct SavedReport {
  uint64_t schema_version = 0;
  std::string tool_version;               // tool.version ("" when absent)
  std::optional<uint64_t> dump_file_size; // dump.file_size
  bool records_extraction = false;        // it has an `extracted` section (analyze --extract)
  ReportLabels labels;                    // labels (analyze --label), none when absent
  /// What diff and check read: totals, kinds, groups, findings, dump.path, dump.truncated, the
  /// number of warnings, and the options as recorded (recordedOptions types them).
  ReportFigures figures;
};

/// Whether `bytes` (a file's first bytes, or all of them) are a report's rather than a dump's:
/// its first byte that is not blank is '{' (docs/ci.md).
bool isReportText(llvm::StringRef bytes);

/// Reads a report's JSON text, of schema version kOldestReadableReportSchemaVersion to
/// kReportSchemaVersion. Fails with "not a JSON report (a JSON object)" when isReportText is not
/// true of it; a syntax error reads "line L, column C: WHY"; a field that is read but missing or of
/// the wrong type gives its JSON pointer first ("/groups/3/count: expected a non-negative integer,
/// got a string"; a label that is not a string, or that checkLabel refuses, the same way). Fields
/// it does not read are not validated (scripts/validate_report.py does).
llvm::Expected<SavedReport> readReport(llvm::StringRef text);

/// The analysis options the report records in its `options` object, as writeReportJson writes
/// them: every field of AnalyzeOptions but `threads` (which changes nothing in a report) and
/// `inflate_budget` (no option of the tool: every report is made with the default), which keep
/// their defaults. Members it does not know (another version's) are left out. Fails, naming the
/// member's JSON pointer, when `options` or its `min_size` is missing or a member has the wrong
/// type or a value this dumpsift does not know (a kind, a state, a grouping).
llvm::Expected<AnalyzeOptions> recordedOptions(const SavedReport &report);

/// Whether `report` can be of the dump at `dump_path` at all, before the dump is analyzed: made
/// by this dumpsift at this schema version, without an extraction (`html` does not make the
/// links to extracted files), from a dump of the same size in bytes and the same file name (the
/// directory may differ). The error says what differs.
llvm::Error checkReportOfDump(const SavedReport &report, const std::string &dump_path);

/// Whether `analysis` of `snapshot` gives the report `saved_text` again: the report
/// writeReportJson writes must equal it, parsed, but for `dump.path` (the path as given on each
/// command line) and `labels` (given on the command line too, and no result of the analysis).
/// Every other field is deterministic for the same dump, options and version, so a
/// difference means that the report is not of this analysis; the error names the first top-level
/// field (a `dump` member) that differs, in key order.
llvm::Error checkReportReproduced(llvm::StringRef saved_text, const Snapshot &snapshot,
                                  const Analysis &analysis);

} // namespace dumpsift
