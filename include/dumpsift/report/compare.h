// Reading reports back and comparing two of them (`dumpsift diff`). Everything works on the report
// JSON, so a stored report and a freshly analyzed dump compare alike (docs/ci.md).
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/report/info.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace dumpsift {

/// Parses JSON text. A syntax error reads "line L, column C: WHY" (1-based, the column counted in
/// bytes). Duplicate object keys are not detected (the last one wins).
llvm::Expected<Json> parseJsonText(llvm::StringRef text);

/// `pointer` extended by one object key (escaped as RFC 6901 says: ~ as ~0, / as ~1) or by one
/// array index: ("/rules", 3) -> "/rules/3".
std::string jsonPointerChild(const std::string &pointer, llvm::StringRef key);
std::string jsonPointerChild(const std::string &pointer, size_t index);

/// A non-negative integer, however nlohmann stores it (a report built in memory holds signed
/// integers, a parsed one unsigned); nullopt for anything else.
std::optional<uint64_t> jsonCount(const Json &value);

/// A JSON value's type in words, for "expected X, got Y" messages: "a string", "a negative
/// number", "an object", "null".
std::string jsonTypeWords(const Json &value);

/// 1-based line and column of the byte at `offset` in `text` (an offset past the end counts as
/// the end).
std::pair<size_t, size_t> lineAndColumn(llvm::StringRef text, size_t offset);

/// Reads the file at `path`: a report (JSON text, its first non-blank byte is '{') is parsed as
/// is; anything else is opened as a dump and analyzed with `options` into a report in memory.
/// `was_dump`, when given, tells which. Errors say why but do not name the path (the caller does).
/// The report is not checked here: readFigures does that.
llvm::Expected<Json> loadReportOrDump(const std::string &path, const AnalyzeOptions &options,
                                      bool *was_dump = nullptr);

/// Count and bytes of some set of buffers (or findings).
struct Tally {
  uint64_t count = 0;
  uint64_t bytes = 0;
};

/// The figures of a report that `diff` and `check` read, taken out of the JSON and checked.
struct ReportFigures {
  struct Group {
    uint64_t size = 0;
    std::string state;
    std::string kind; // set when the report groups by size and kind; empty otherwise
    uint64_t count = 0;
    uint64_t total_bytes = 0;
    std::vector<std::pair<std::string, uint64_t>> kinds; // count per kind, as reported
  };
  struct FindingEntry {
    std::string type;
    uint64_t bytes = 0;
    std::vector<std::pair<std::string, uint64_t>> numbers; // type-specific figures, report order
    std::string explanation;
  };

  Tally buffers;                        // summary.buffers, summary.buffer_bytes
  std::map<std::string, Tally> by_kind; // summary.by_kind
  std::vector<Group> groups;            // report order
  std::vector<FindingEntry> findings;   // report order
  Json options;                         // the options the report was made with
  std::string dump_path;                // dump.path ("" when absent)
};

/// Takes the figures out of a report. Fails when the report is not a schema-version-1 report or a
/// field that diff and check read is missing or has the wrong type; the message starts with the
/// field's JSON pointer ("/groups/3/count: expected a non-negative integer"). Fields that diff and
/// check do not read are not validated (scripts/validate_report.py does that).
llvm::Expected<ReportFigures> readFigures(const Json &report);

/// One figure on both sides of a diff.
struct Change {
  uint64_t before = 0;
  uint64_t after = 0;
  int64_t delta() const { return static_cast<int64_t>(after) - static_cast<int64_t>(before); }
};

enum class GroupStatus { Unchanged, Changed, New, Vanished };

/// "unchanged", "changed", "new", "vanished".
llvm::StringRef groupStatusName(GroupStatus status);

struct GroupDiff {
  uint64_t size = 0;
  std::string state;
  std::string kind; // empty unless the reports group by size and kind
  GroupStatus status = GroupStatus::Unchanged;
  Change count, bytes;
};

struct KindDiff {
  std::string kind;
  Change count, bytes;
};

struct FindingTypeDiff {
  std::string type;
  Change count, bytes;
};

/// What changed from one report (before) to another (after).
struct ReportDiff {
  Change buffers, buffer_bytes;
  std::vector<KindDiff> kinds;   // every kind on either side, by name
  std::vector<GroupDiff> groups; // every group on either side (see diffReports for order)
  std::vector<FindingTypeDiff> finding_types; // every finding type on either side, by name
  /// Findings of `after` with no equal finding in `before`, and the reverse. Two findings are
  /// equal when their type and type-specific figures are (addresses, bytes and explanation may
  /// differ: addresses move between runs).
  std::vector<ReportFigures::FindingEntry> new_findings, gone_findings;
  std::vector<std::string> warnings; // e.g. the reports were made with different options
};

/// Compares two reports. Groups match on (size, state, kind); they are ordered by the size of
/// their change in bytes (largest first), then by size, state and kind. Never fails.
ReportDiff diffReports(const ReportFigures &before, const ReportFigures &after);

/// The thresholds of `dumpsift diff` (docs/ci.md); an unset one is not checked.
struct DiffLimits {
  /// Growth in percent of the total buffer bytes, of each kind's bytes, and of each size group's
  /// bytes; only figures that are non-zero in `before` (new ones: see max_new_bytes).
  std::optional<double> max_growth_percent;
  /// Growth in bytes of the same figures, including kinds and groups new in `after`.
  std::optional<uint64_t> max_growth_bytes;
  /// Bytes held by the size groups new in `after` (together), and by each kind new in `after`.
  std::optional<uint64_t> max_new_bytes;
  /// Findings new in `after`.
  std::optional<uint64_t> max_new_findings;
};

/// One threshold exceeded.
struct Regression {
  std::string subject; // "total", "kind jpeg", "group 135,152 used", "new groups", "new findings"
  std::string limit;   // the option: "--max-growth 10%"
  double measured = 0; // in the limit's unit (percent, bytes or findings)
  double threshold = 0;
  std::string message; // one line: subject, measured value, limit
};

/// Every threshold of `limits` that `diff` exceeds, in a fixed order (total, kinds, groups, new
/// groups, new findings).
std::vector<Regression> findRegressions(const ReportDiff &diff, const DiffLimits &limits);

/// The diff as JSON (`dumpsift diff --json`): labels of both sides, totals, kinds, groups,
/// finding types, new and gone findings, warnings, regressions. Deterministic.
Json diffJson(const ReportDiff &diff, const std::vector<Regression> &regressions,
              const std::string &before_label, const std::string &after_label);

struct DiffTextOptions {
  size_t top = 20;             // rows of changed groups (0: all)
  bool show_unchanged = false; // also list unchanged groups and kinds
};

/// The diff for people: totals, kinds that changed, groups that changed, new findings, and one
/// "REGRESSION" line per exceeded threshold.
void writeDiffText(const ReportDiff &diff, const std::vector<Regression> &regressions,
                   const std::string &before_label, const std::string &after_label,
                   const DiffTextOptions &options, std::ostream &out);

/// 135152 -> "135,152".
std::string groupedDigits(uint64_t n);

} // namespace dumpsift
