// What `diff` and `check` print: the diff as text or JSON, the rules' results as text, GitHub
// annotations or JSON (comparison.h).
#include "dumpsift/report/comparison.h"

#include "dumpsift/support/sizes.h"
#include "dumpsift/support/terminal_text.h"
#include "json_values.h"

#include "llvm/Support/Format.h"

namespace dumpsift {

using namespace detail;

namespace {

// "+5", "-3", "0".
std::string signedDigits(int64_t n) {
  if (n > 0)
    return "+" + groupedDigits(static_cast<uint64_t>(n));
  if (n < 0)
    return "-" + groupedDigits(static_cast<uint64_t>(-(n + 1)) + 1);
  return "0";
}

// "1,081,216 -> 2,162,432 (+1,081,216, +100.0%)"; "8" when unchanged.
std::string changeText(const Change &c, bool with_percent) {
  if (c.before == c.after)
    return groupedDigits(c.after);
  std::string out =
      groupedDigits(c.before) + " -> " + groupedDigits(c.after) + " (" + signedDigits(c.delta());
  if (with_percent && c.before)
    out += ", " + percentText(c.growthPercent(), true);
  return out + ")";
}

Json changeJson(const Change &c) {
  return Json{{"before", c.before}, {"after", c.after}, {"delta", c.delta()}};
}

// "duplicates (count 3, size 135152): <explanation>".
std::string findingText(const ReportFigures::FindingEntry &f) {
  std::string out = f.type + ", " + groupedDigits(f.bytes) + " bytes";
  if (!f.explanation.empty())
    out += ": " + f.explanation;
  return out;
}

// GitHub workflow-command escaping: message data, and property values (which also escape , :).
std::string githubEscape(const std::string &text, bool property) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '%':
      out += "%25";
      break;
    case '\r':
      out += "%0D";
      break;
    case '\n':
      out += "%0A";
      break;
    case ':':
      out += property ? "%3A" : ":";
      break;
    case ',':
      out += property ? "%2C" : ",";
      break;
    default:
      out.push_back(c);
    }
  }
  return out;
}

} // namespace

void writeDiffJson(const ReportDiff &diff, const std::vector<Regression> &regressions,
                   const std::string &before_label, const std::string &after_label,
                   llvm::raw_ostream &out) {
  Json j;
  j["before"] = before_label;
  j["after"] = after_label;
  j["totals"] =
      Json{{"buffers", changeJson(diff.buffers)}, {"buffer_bytes", changeJson(diff.buffer_bytes)}};
  Json kinds = Json::array();
  for (const KindDiff &k : diff.kinds)
    kinds.push_back(
        Json{{"kind", k.kind}, {"count", changeJson(k.count)}, {"bytes", changeJson(k.bytes)}});
  j["kinds"] = std::move(kinds);
  Json groups = Json::array();
  for (const GroupDiff &g : diff.groups) {
    Json gj;
    gj["size"] = g.size;
    gj["state"] = g.state;
    if (!g.kind.empty())
      gj["kind"] = g.kind;
    gj["status"] = groupStatusName(g.status).str();
    gj["count"] = changeJson(g.count);
    gj["bytes"] = changeJson(g.bytes);
    groups.push_back(std::move(gj));
  }
  j["groups"] = std::move(groups);
  Json types = Json::array();
  for (const FindingTypeDiff &t : diff.finding_types)
    types.push_back(
        Json{{"type", t.type}, {"count", changeJson(t.count)}, {"bytes", changeJson(t.bytes)}});
  j["finding_types"] = std::move(types);
  Json added = Json::array(), gone = Json::array();
  auto entryJson = [](const ReportFigures::FindingEntry &f) {
    return findingJson(f.type, f.bytes, f.numbers, /*addresses=*/nullptr, f.explanation);
  };
  for (const auto &f : diff.new_findings)
    added.push_back(entryJson(f));
  for (const auto &f : diff.gone_findings)
    gone.push_back(entryJson(f));
  j["new_findings"] = std::move(added);
  j["gone_findings"] = std::move(gone);
  j["warnings"] = diff.warnings;
  Json regs = Json::array();
  for (const Regression &r : regressions)
    regs.push_back(Json{{"subject", r.subject},
                        {"limit", r.limit},
                        {"measured", r.measured},
                        {"threshold", r.threshold},
                        {"message", r.message}});
  j["regressions"] = std::move(regs);
  j["regressed"] = !regressions.empty();
  out << dumpJson(j, 2) << "\n";
}

void writeDiffText(const ReportDiff &diff, const std::vector<Regression> &regressions,
                   const std::string &before_label, const std::string &after_label,
                   const DiffTextOptions &options, llvm::raw_ostream &out) {
  out << "dumpsift diff: " << printable(before_label) << " -> " << printable(after_label) << "\n";
  out << "  buffers       " << changeText(diff.buffers, false) << "\n";
  out << "  buffer bytes  " << changeText(diff.buffer_bytes, true) << "\n";
  for (const std::string &w : diff.warnings)
    out << "warning: " << printable(w) << "\n";

  // Kinds.
  size_t unchanged_kinds = 0;
  std::string kind_text;
  llvm::raw_string_ostream kind_rows(kind_text);
  for (const KindDiff &k : diff.kinds) {
    bool same = k.count.before == k.count.after && k.bytes.before == k.bytes.after;
    if (same && !options.show_unchanged) {
      ++unchanged_kinds;
      continue;
    }
    kind_rows << "  " << llvm::left_justify(printable(k.kind), 13)
              << llvm::left_justify(changeText(k.count, false), 22) << changeText(k.bytes, true)
              << "\n";
  }
  out << "\nkinds (count, bytes)\n" << kind_rows.str();
  if (unchanged_kinds)
    out << "  (" << unchanged_kinds << " kind" << (unchanged_kinds == 1 ? "" : "s")
        << " unchanged)\n";
  if (diff.kinds.empty())
    out << "  (none)\n";

  // Groups.
  size_t unchanged_groups = 0, shown = 0, hidden = 0;
  std::string group_text;
  llvm::raw_string_ostream group_rows(group_text);
  for (const GroupDiff &g : diff.groups) {
    if (g.status == GroupStatus::Unchanged && !options.show_unchanged) {
      ++unchanged_groups;
      continue;
    }
    if (options.top && shown >= options.top) {
      ++hidden;
      continue;
    }
    ++shown;
    std::string label =
        groupedDigits(g.size) + " " + g.state + (g.kind.empty() ? "" : " " + g.kind);
    group_rows << "  " << llvm::left_justify(groupStatusName(g.status), 10)
               << llvm::left_justify(label, 26)
               << llvm::left_justify(changeText(g.count, false), 22) << changeText(g.bytes, true)
               << "\n";
  }
  out << "\nsize groups (status, size state, count, bytes)\n" << group_rows.str();
  if (hidden)
    out << "  (" << hidden << " more changed; --top 0 shows all)\n";
  if (unchanged_groups)
    out << "  (" << unchanged_groups << " group" << (unchanged_groups == 1 ? "" : "s")
        << " unchanged)\n";
  if (diff.groups.empty())
    out << "  (none)\n";

  // Findings.
  if (!diff.finding_types.empty()) {
    out << "\nfindings (count, bytes)\n";
    for (const FindingTypeDiff &t : diff.finding_types)
      out << "  " << llvm::left_justify(printable(t.type), 16)
          << llvm::left_justify(changeText(t.count, false), 22) << changeText(t.bytes, true)
          << "\n";
    for (const auto &f : diff.new_findings)
      out << "  new:  " << printable(findingText(f)) << "\n";
    for (const auto &f : diff.gone_findings)
      out << "  gone: " << printable(findingText(f)) << "\n";
  }

  out << "\n";
  for (const Regression &r : regressions)
    out << "REGRESSION " << printable(r.message) << "\n";
  if (regressions.empty())
    out << "dumpsift diff: no regressions\n";
  else
    out << "dumpsift diff: " << regressions.size() << " regression"
        << (regressions.size() == 1 ? "" : "s") << "\n";
}

void writeCheckResults(const std::vector<RuleResult> &results, const CheckOutput &output,
                       llvm::raw_ostream &out) {
  size_t failed = 0;
  for (const RuleResult &r : results)
    failed += r.passed ? 0 : 1;

  if (output.format == CheckFormat::Json) {
    Json j;
    j["report"] = output.report_label;
    j["rules_file"] = output.rules_path;
    j["passed"] = failed == 0;
    j["failed"] = failed;
    Json rules = Json::array();
    for (const RuleResult &r : results) {
      const Rule &rule = *r.rule;
      Json rj;
      rj["name"] = rule.name;
      rj["line"] = rule.line;
      rj["subject"] = rule.subject();
      rj["count"] = r.measured.count;
      rj["bytes"] = r.measured.bytes;
      if (rule.max_bytes)
        rj["max_bytes"] = *rule.max_bytes;
      if (rule.max_count)
        rj["max_count"] = *rule.max_count;
      if (rule.must_not_exist)
        rj["must_not_exist"] = true;
      rj["passed"] = r.passed;
      rj["message"] = r.message;
      rules.push_back(std::move(rj));
    }
    j["rules"] = std::move(rules);
    out << dumpJson(j, 2) << "\n";
    return;
  }

  for (const RuleResult &r : results) {
    const Rule &rule = *r.rule;
    std::string line = printable(rule.name + " [" + rule.subject() + "]: " + r.message);
    if (r.passed) {
      if (output.verbose)
        out << "PASS " << line << "\n";
    } else if (output.format == CheckFormat::Github) {
      out << "::error file=" << githubEscape(output.rules_path, true);
      if (rule.line)
        out << ",line=" << rule.line;
      out << ",title=" << githubEscape("dumpsift check: " + rule.name, true) << "::"
          << githubEscape("[" + rule.subject() + "] " + r.message + " in " + output.report_label,
                          false)
          << "\n";
    } else {
      out << "FAIL " << line << "\n";
    }
  }
  out << "dumpsift check: ";
  if (failed)
    out << failed << " of " << results.size() << " rule" << (results.size() == 1 ? "" : "s")
        << " failed";
  else
    out << "all " << results.size() << " rule" << (results.size() == 1 ? "" : "s") << " passed";
  out << " (" << printable(output.report_label) << ", rules " << printable(output.rules_path)
      << ")\n";
}

} // namespace dumpsift
