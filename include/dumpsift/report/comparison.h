// What `diff` and `check` print (docs/ci.md): the diff of two reports as text or JSON, and the
// results of a rules file as text, GitHub workflow annotations or JSON.
#pragma once

#include "dumpsift/compare/diff.h"
#include "dumpsift/compare/rules.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <string>
#include <vector>

namespace dumpsift {

struct DiffTextOptions {
  size_t top = 20;             // rows of changed groups (0: all)
  bool show_unchanged = false; // also list unchanged groups and kinds
};

/// The diff for people: totals, kinds that changed, groups that changed, new findings, and one
/// "REGRESSION" line per exceeded threshold.
void writeDiffText(const ReportDiff &diff, const std::vector<Regression> &regressions,
                   const std::string &before_label, const std::string &after_label,
                   const DiffTextOptions &options, llvm::raw_ostream &out);

/// The diff as JSON (`dumpsift diff --json`), then a newline: labels of both sides, totals, kinds,
/// groups, finding types, new and gone findings, warnings, regressions. Deterministic.
void writeDiffJson(const ReportDiff &diff, const std::vector<Regression> &regressions,
                   const std::string &before_label, const std::string &after_label,
                   llvm::raw_ostream &out);

enum class CheckFormat { Text, Github, Json };

struct CheckOutput {
  std::string report_label; // the report or dump checked, as given
  std::string rules_path;   // the rules file, as given (GitHub annotations point at it)
  CheckFormat format = CheckFormat::Text;
  bool verbose = false; // also print the rules that pass (text and github)
};

/// Writes the results. Text: one "FAIL name [subject]: measured vs limit" line per violated rule
/// (and "PASS ..." lines when verbose), then a summary line. Github: the same, violations as
/// `::error file=RULES,line=L,title=...::...` workflow commands. Json: one object with every rule.
void writeCheckResults(const std::vector<RuleResult> &results, const CheckOutput &output,
                       llvm::raw_ostream &out);

} // namespace dumpsift
