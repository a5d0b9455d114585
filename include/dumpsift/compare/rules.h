// Rules that a report must pass (`dumpsift check`): limits on bytes and counts per kind, per size
// range, per finding type, on all buffers, and things that must not exist. The file format is
// documented in docs/ci.md; the report layer reads the file (parseRules,
// dumpsift/report/rules_file.h) and writes the results.
#pragma once

#include "dumpsift/compare/figures.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

/// The rules-file versions this build reads.
inline constexpr int kRulesVersion = 1;

/// One rule. It measures one set of buffers (or findings) and limits its count and bytes.
struct Rule {
  std::string name;
  std::string description;
  std::string pointer; // where it is in the file: "/rules/3"
  size_t line = 0;     // line of its opening brace (0: unknown)

  // What it measures: all buffers, the buffers a selection picks, or the findings of one type.
  bool all_buffers = false;
  std::optional<std::string> kind;  // report kind name
  std::optional<std::string> state; // used, free, unknown
  uint64_t min_size = 0;            // inclusive
  uint64_t max_size = UINT64_MAX;   // inclusive
  bool exact_size = false;          // written as "size": min_size == max_size
  std::optional<std::string> finding;
  bool warnings = false;       // the report's diagnostics: count only
  bool dump_truncated = false; // the dump's truncation: count 1 and the missing bytes, or 0

  // The limits: must_not_exist, or at least one of max_bytes / max_count.
  std::optional<uint64_t> max_bytes;
  std::optional<uint64_t> max_count;
  bool must_not_exist = false;

  /// What it measures, in words: "kind jpeg", "size 131,186", "sizes 100,000..200,000, state
  /// used", "finding duplicates", "all buffers", "warnings", "dump truncated".
  std::string subject() const;
};

struct RuleSet {
  int version = kRulesVersion;
  std::string description;
  std::vector<Rule> rules; // file order
  /// "allow_truncated_dump": true. Otherwise a truncated dump fails the built-in rule
  /// `dump-complete` unless a rule of the file measures `dump_truncated` itself.
  bool allow_truncated_dump = false;
};

/// A rule measured on one report.
struct RuleResult {
  const Rule *rule = nullptr;
  Tally measured;
  bool passed = true;
  std::string message; // "bytes 2,162,432 (2.1 MiB) > max_bytes 1,310,720 (1.2 MiB)"
};

/// Measures every rule on `report`, in rule order; then, when the report's dump is truncated and
/// `rules` neither allows that nor has a rule about it, one failing result for the built-in rule
/// `dump-complete`. Never fails.
std::vector<RuleResult> checkRules(const ReportFigures &report, const RuleSet &rules);

} // namespace dumpsift
