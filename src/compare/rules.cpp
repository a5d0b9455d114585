// Checking a report's figures against rules (rules.h).
#include "dumpsift/compare/rules.h"

#include "dumpsift/support/sizes.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

namespace dumpsift {

namespace {

// a * b, saturating at UINT64_MAX.
uint64_t saturatingProduct(uint64_t a, uint64_t b) {
  uint64_t product;
  if (__builtin_mul_overflow(a, b, &product))
    return UINT64_MAX;
  return product;
}

// What `rule` measures in `report`.
Tally measure(const ReportFigures &report, const Rule &rule) {
  if (rule.all_buffers)
    return report.buffers;
  Tally t;
  if (rule.warnings)
    return Tally{report.warnings, 0};
  if (rule.dump_truncated)
    return report.truncated ? Tally{1, report.truncated->missing_bytes} : t;
  if (rule.finding) {
    for (const auto &f : report.findings)
      if (f.type == *rule.finding) {
        ++t.count;
        t.bytes += f.bytes;
      }
    return t;
  }
  // A kind alone: the report's own per-kind totals (summary.by_kind).
  if (rule.kind && !rule.state && rule.min_size == 0 && rule.max_size == UINT64_MAX) {
    auto it = report.by_kind.find(*rule.kind);
    return it == report.by_kind.end() ? t : it->second;
  }
  // Otherwise from the size groups; each group has one exact size, so a kind's bytes in a group
  // are its count times the size.
  for (const ReportFigures::Group &g : report.groups) {
    if (g.size < rule.min_size || g.size > rule.max_size)
      continue;
    if (rule.state && g.state != *rule.state)
      continue;
    if (!rule.kind) {
      t.count += g.count;
      t.bytes += g.total_bytes;
      continue;
    }
    for (const auto &[kind, n] : g.kinds)
      if (kind == *rule.kind) {
        t.count += n;
        t.bytes += saturatingProduct(n, g.size);
      }
  }
  return t;
}

// "2,162,432 (2.1 MiB)".
std::string bytesText(uint64_t n) {
  return groupedDigits(n) + " (" + humanBytes(n) + ")";
}

// "buffers" or "findings" (singular for one).
std::string things(const Rule &rule, uint64_t n) {
  if (rule.warnings)
    return n == 1 ? "warning" : "warnings";
  if (rule.dump_truncated)
    return "truncation";
  if (rule.finding)
    return n == 1 ? "finding" : "findings";
  return n == 1 ? "buffer" : "buffers";
}

// One result's message: every limit with the measured value; the violated ones only, if any.
std::string resultMessage(const Rule &rule, const Tally &t, bool &passed) {
  if (rule.must_not_exist) {
    passed = t.count == 0;
    if (rule.dump_truncated)
      return passed ? "the dump is complete"
                    : "the dump is truncated: " + bytesText(t.bytes) + " of memory missing";
    if (passed)
      return "none found (must not exist)";
    return "found " + groupedDigits(t.count) + " " + things(rule, t.count) + ", " +
           groupedDigits(t.bytes) + " bytes (" + humanBytes(t.bytes) + "), must not exist";
  }
  std::vector<std::string> over, under;
  if (rule.max_bytes) {
    bool ok = t.bytes <= *rule.max_bytes;
    (ok ? under : over)
        .push_back("bytes " + bytesText(t.bytes) + (ok ? " <= " : " > ") + "max_bytes " +
                   bytesText(*rule.max_bytes));
  }
  if (rule.max_count) {
    bool ok = t.count <= *rule.max_count;
    (ok ? under : over)
        .push_back("count " + groupedDigits(t.count) + (ok ? " <= " : " > ") + "max_count " +
                   groupedDigits(*rule.max_count));
  }
  passed = over.empty();
  std::string out;
  for (const std::string &part : passed ? under : over)
    out += (out.empty() ? "" : "; ") + part;
  return out;
}

// The rule a truncated dump fails when the rules file says nothing about truncation.
const Rule &dumpCompleteRule() {
  static const Rule rule = [] {
    Rule r;
    r.name = "dump-complete";
    r.description = "built in: the dump holds all the data its headers describe";
    r.dump_truncated = true;
    r.must_not_exist = true;
    return r;
  }();
  return rule;
}

} // namespace

std::string Rule::subject() const {
  if (all_buffers)
    return "all buffers";
  if (warnings)
    return "warnings";
  if (dump_truncated)
    return "dump truncated";
  if (finding)
    return "finding " + *finding;
  std::vector<std::string> parts;
  if (kind)
    parts.push_back("kind " + *kind);
  if (exact_size)
    parts.push_back("size " + groupedDigits(min_size));
  else if (min_size != 0 && max_size != UINT64_MAX)
    parts.push_back("sizes " + groupedDigits(min_size) + ".." + groupedDigits(max_size));
  else if (min_size != 0)
    parts.push_back("sizes >= " + groupedDigits(min_size));
  else if (max_size != UINT64_MAX)
    parts.push_back("sizes <= " + groupedDigits(max_size));
  if (state)
    parts.push_back("state " + *state);
  return llvm::join(parts, ", ");
}

std::vector<RuleResult> checkRules(const ReportFigures &report, const RuleSet &rules) {
  std::vector<RuleResult> results;
  for (const Rule &rule : rules.rules) {
    RuleResult r;
    r.rule = &rule;
    r.measured = measure(report, rule);
    r.message = resultMessage(rule, r.measured, r.passed);
    results.push_back(std::move(r));
  }
  if (report.truncated && !rules.allow_truncated_dump &&
      std::none_of(rules.rules.begin(), rules.rules.end(),
                   [](const Rule &rule) { return rule.dump_truncated; })) {
    const ReportFigures::Truncation &t = *report.truncated;
    RuleResult r;
    r.rule = &dumpCompleteRule();
    r.measured = Tally{1, t.missing_bytes};
    r.passed = false;
    r.message = "the dump is truncated: the file ends at byte " + groupedDigits(t.file_size) +
                " of " + groupedDigits(t.expected_size) + "; " + bytesText(t.missing_bytes) +
                " of memory from " + t.first_missing_address +
                " on is missing (\"allow_truncated_dump\": true in the rules file accepts it)";
    results.push_back(std::move(r));
  }
  return results;
}

} // namespace dumpsift
