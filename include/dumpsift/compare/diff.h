// `dumpsift diff`: what changed from one report to another, and which thresholds that exceeds
// (docs/ci.md). Works on the figures of each report (figures.h); the report layer writes the
// result as text or JSON.
#pragma once

#include "dumpsift/compare/figures.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

/// One figure on both sides of a diff.
struct Change {
  uint64_t before = 0;
  uint64_t after = 0;
  int64_t delta() const { return static_cast<int64_t>(after) - static_cast<int64_t>(before); }
  /// The growth from `before` to `after` in percent of `before`, which must not be 0.
  double growthPercent() const;
};

/// "12.5%" with one decimal, with a sign when `sign` ("+12.5%", "-3.0%").
std::string percentText(double percent, bool sign);

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
  /// Each side's dump truncation, when its dump was cut short.
  std::optional<ReportFigures::Truncation> before_truncated, after_truncated;
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
  /// Without it a truncated dump on either side is a regression: its figures are not the process's.
  bool allow_truncated = false;
};

/// One threshold exceeded.
struct Regression {
  std::string subject; // "total", "kind jpeg", "group 135,152 used", "new groups", "new findings"
  std::string limit;   // the option: "--max-growth 10%"
  double measured = 0; // in the limit's unit (percent, bytes or findings)
  double threshold = 0;
  std::string message; // one line: subject, measured value, limit
};

/// Every threshold of `limits` that `diff` exceeds, in a fixed order (a truncated dump, total,
/// kinds, groups, new groups, new findings).
std::vector<Regression> findRegressions(const ReportDiff &diff, const DiffLimits &limits);

} // namespace dumpsift
