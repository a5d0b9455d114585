// Diffing two reports' figures, and the thresholds of `dumpsift diff` (diff.h).
#include "dumpsift/compare/diff.h"

#include "dumpsift/support/sizes.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

namespace dumpsift {

namespace {

// "10%" or "0.5%": a percent limit as a person wrote it.
std::string limitPercentText(double percent) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g%%", percent);
  return buf;
}

// "group 135,152 used" or "group 135,152 used jpeg".
std::string groupSubject(const GroupDiff &g) {
  std::string out = "group " + groupedDigits(g.size) + " " + g.state;
  if (!g.kind.empty())
    out += " " + g.kind;
  return out;
}

// What identifies a finding across runs: its type and its type-specific figures.
std::string findingSignature(const ReportFigures::FindingEntry &f) {
  std::vector<std::pair<std::string, uint64_t>> numbers = f.numbers;
  std::sort(numbers.begin(), numbers.end());
  std::string sig = f.type;
  for (const auto &[key, value] : numbers)
    sig += "|" + key + "=" + std::to_string(value);
  return sig;
}

// The options on which two reports differ, in words; empty when they agree or one is absent.
// `holders` is left out: the holders pass changes no figure compared.
std::string
optionDifferences(const std::optional<std::vector<std::pair<std::string, std::string>>> &before,
                  const std::optional<std::vector<std::pair<std::string, std::string>>> &after) {
  if (!before || !after)
    return "";
  auto find = [](const std::vector<std::pair<std::string, std::string>> &options,
                 const std::string &key) -> const std::string * {
    for (const auto &[k, value] : options)
      if (k == key)
        return &value;
    return nullptr;
  };
  std::string out;
  auto note = [&](const std::string &key, const std::string *a, const std::string *b) {
    out += (out.empty() ? "" : ", ") + key + " (" + (a ? *a : "absent") + " vs " +
           (b ? *b : "absent") + ")";
  };
  for (const auto &[key, value] : *before) {
    const std::string *other = find(*after, key);
    if (key == "holders")
      continue;
    if (!other)
      note(key, &value, nullptr);
    else if (*other != value)
      note(key, &value, other);
  }
  for (const auto &[key, value] : *after)
    if (key != "holders" && !find(*before, key))
      note(key, nullptr, &value);
  return out;
}

} // namespace

double Change::growthPercent() const {
  return (static_cast<double>(after) - static_cast<double>(before)) * 100.0 /
         static_cast<double>(before);
}

std::string percentText(double percent, bool sign) {
  char buf[64];
  std::snprintf(buf, sizeof buf, sign ? "%+.1f%%" : "%.1f%%", percent);
  return buf;
}

llvm::StringRef groupStatusName(GroupStatus status) {
  switch (status) {
  case GroupStatus::Unchanged:
    return "unchanged";
  case GroupStatus::Changed:
    return "changed";
  case GroupStatus::New:
    return "new";
  case GroupStatus::Vanished:
    return "vanished";
  }
  return "unchanged";
}

ReportDiff diffReports(const ReportFigures &before, const ReportFigures &after) {
  ReportDiff diff;
  diff.before_truncated = before.truncated;
  diff.after_truncated = after.truncated;
  diff.buffers = Change{before.buffers.count, after.buffers.count};
  diff.buffer_bytes = Change{before.buffers.bytes, after.buffers.bytes};

  // Kinds: the union of both sides, by name (std::map order).
  std::map<std::string, KindDiff> kinds;
  for (const auto &[kind, t] : before.by_kind) {
    KindDiff &k = kinds[kind];
    k.count.before = t.count;
    k.bytes.before = t.bytes;
  }
  for (const auto &[kind, t] : after.by_kind) {
    KindDiff &k = kinds[kind];
    k.count.after = t.count;
    k.bytes.after = t.bytes;
  }
  for (auto &[kind, k] : kinds) {
    k.kind = kind;
    diff.kinds.push_back(std::move(k));
  }

  // Groups match on (size, state, kind); duplicates within one report add up.
  using Key = std::tuple<uint64_t, std::string, std::string>;
  struct Sides {
    bool in_before = false, in_after = false;
    Change count, bytes;
  };
  std::map<Key, Sides> groups;
  for (const ReportFigures::Group &g : before.groups) {
    Sides &s = groups[Key{g.size, g.state, g.kind}];
    s.in_before = true;
    s.count.before += g.count;
    s.bytes.before += g.total_bytes;
  }
  for (const ReportFigures::Group &g : after.groups) {
    Sides &s = groups[Key{g.size, g.state, g.kind}];
    s.in_after = true;
    s.count.after += g.count;
    s.bytes.after += g.total_bytes;
  }
  for (const auto &[key, s] : groups) {
    GroupDiff g;
    std::tie(g.size, g.state, g.kind) = key;
    g.count = s.count;
    g.bytes = s.bytes;
    if (!s.in_before)
      g.status = GroupStatus::New;
    else if (!s.in_after)
      g.status = GroupStatus::Vanished;
    else if (s.count.before != s.count.after || s.bytes.before != s.bytes.after)
      g.status = GroupStatus::Changed;
    diff.groups.push_back(std::move(g));
  }
  // The map gave (size, state, kind) order; a stable sort by the change in bytes keeps it as
  // the tie-break.
  auto magnitude = [](const GroupDiff &g) {
    return g.bytes.after > g.bytes.before ? g.bytes.after - g.bytes.before
                                          : g.bytes.before - g.bytes.after;
  };
  std::stable_sort(
      diff.groups.begin(), diff.groups.end(),
      [&](const GroupDiff &a, const GroupDiff &b) { return magnitude(a) > magnitude(b); });

  // Finding types, and findings matched by signature as multisets.
  std::map<std::string, FindingTypeDiff> types;
  for (const auto &f : before.findings) {
    FindingTypeDiff &t = types[f.type];
    ++t.count.before;
    t.bytes.before += f.bytes;
  }
  for (const auto &f : after.findings) {
    FindingTypeDiff &t = types[f.type];
    ++t.count.after;
    t.bytes.after += f.bytes;
  }
  for (auto &[type, t] : types) {
    t.type = type;
    diff.finding_types.push_back(std::move(t));
  }
  std::map<std::string, int64_t> balance; // after minus before, per signature
  for (const auto &f : before.findings)
    --balance[findingSignature(f)];
  for (const auto &f : after.findings) {
    int64_t &b = balance[findingSignature(f)];
    if (b++ >= 0)
      diff.new_findings.push_back(f);
  }
  // A finding of `before` is gone when `after` holds fewer of its signature.
  std::map<std::string, int64_t> after_count;
  for (const auto &f : after.findings)
    ++after_count[findingSignature(f)];
  for (const auto &f : before.findings) {
    int64_t &n = after_count[findingSignature(f)];
    if (n-- <= 0)
      diff.gone_findings.push_back(f);
  }

  std::string options = optionDifferences(before.options, after.options);
  if (!options.empty())
    diff.warnings.push_back("the reports were made with different options: " + options +
                            "; groups and totals may differ for that reason alone");
  return diff;
}

std::vector<Regression> findRegressions(const ReportDiff &diff, const DiffLimits &limits) {
  std::vector<Regression> out;
  for (auto [side, truncated] :
       {std::pair{"base", &diff.before_truncated}, std::pair{"new", &diff.after_truncated}}) {
    if (!*truncated || limits.allow_truncated)
      continue;
    const ReportFigures::Truncation &t = **truncated;
    Regression r;
    r.subject = std::string(side) + " dump truncated";
    r.limit = "--allow-truncated";
    r.measured = static_cast<double>(t.missing_bytes);
    r.message = r.subject + ": the file ends at byte " + groupedDigits(t.file_size) + " of " +
                groupedDigits(t.expected_size) + "; " + groupedDigits(t.missing_bytes) +
                " bytes of memory from " + t.first_missing_address +
                " on are missing (--allow-truncated accepts it)";
    out.push_back(std::move(r));
  }
  // One figure against the growth limits (percent, then bytes).
  auto growth = [&](const std::string &subject, const Change &bytes) {
    if (bytes.after <= bytes.before)
      return;
    if (limits.max_growth_percent && bytes.before) {
      double pct = bytes.growthPercent();
      if (pct > *limits.max_growth_percent) {
        Regression r;
        r.subject = subject;
        r.limit = "--max-growth " + limitPercentText(*limits.max_growth_percent);
        r.measured = pct;
        r.threshold = *limits.max_growth_percent;
        r.message = subject + ": bytes grew " + percentText(pct, true) + " (" +
                    groupedDigits(bytes.before) + " -> " + groupedDigits(bytes.after) +
                    "), limit " + r.limit;
        out.push_back(std::move(r));
      }
    }
    if (limits.max_growth_bytes) {
      uint64_t grew = bytes.after - bytes.before;
      if (grew > *limits.max_growth_bytes) {
        Regression r;
        r.subject = subject;
        r.limit = "--max-growth " + groupedDigits(*limits.max_growth_bytes) + " bytes";
        r.measured = static_cast<double>(grew);
        r.threshold = static_cast<double>(*limits.max_growth_bytes);
        r.message = subject + ": bytes grew by " + groupedDigits(grew) + " (" +
                    groupedDigits(bytes.before) + " -> " + groupedDigits(bytes.after) +
                    "), limit " + r.limit;
        out.push_back(std::move(r));
      }
    }
  };

  growth("total buffer bytes", diff.buffer_bytes);
  for (const KindDiff &k : diff.kinds)
    growth("kind " + k.kind, k.bytes);
  for (const GroupDiff &g : diff.groups)
    growth(groupSubject(g), g.bytes);

  if (limits.max_new_bytes) {
    uint64_t new_bytes = 0, new_groups = 0;
    std::string which;
    for (const GroupDiff &g : diff.groups)
      if (g.status == GroupStatus::New) {
        new_bytes += g.bytes.after;
        ++new_groups;
        if (new_groups <= 5)
          which += (which.empty() ? "" : ", ") + groupedDigits(g.size) + " " + g.state +
                   (g.kind.empty() ? "" : " " + g.kind) + " x" + std::to_string(g.count.after);
        else if (new_groups == 6)
          which += ", ...";
      }
    if (new_groups && new_bytes > *limits.max_new_bytes) {
      Regression r;
      r.subject = "new groups";
      r.limit = "--max-new-bytes " + groupedDigits(*limits.max_new_bytes);
      r.measured = static_cast<double>(new_bytes);
      r.threshold = static_cast<double>(*limits.max_new_bytes);
      r.message = "new groups: " + std::to_string(new_groups) + " new size group" +
                  (new_groups == 1 ? " (" + which + ") holds " : "s (" + which + ") hold ") +
                  groupedDigits(new_bytes) + " bytes, limit " + r.limit;
      out.push_back(std::move(r));
    }
    for (const KindDiff &k : diff.kinds)
      if (k.bytes.before == 0 && k.count.before == 0 && k.count.after > 0 &&
          k.bytes.after > *limits.max_new_bytes) {
        Regression r;
        r.subject = "new kind " + k.kind;
        r.limit = "--max-new-bytes " + groupedDigits(*limits.max_new_bytes);
        r.measured = static_cast<double>(k.bytes.after);
        r.threshold = static_cast<double>(*limits.max_new_bytes);
        r.message = "new kind " + k.kind + ": " + groupedDigits(k.count.after) + " buffers hold " +
                    groupedDigits(k.bytes.after) + " bytes, limit " + r.limit;
        out.push_back(std::move(r));
      }
  }

  if (limits.max_new_findings && diff.new_findings.size() > *limits.max_new_findings) {
    std::map<std::string, size_t> per_type;
    for (const auto &f : diff.new_findings)
      ++per_type[f.type];
    std::string which;
    for (const auto &[type, n] : per_type)
      which += (which.empty() ? "" : ", ") + type + (n > 1 ? " x" + std::to_string(n) : "");
    Regression r;
    r.subject = "new findings";
    r.limit = "--max-new-findings " + std::to_string(*limits.max_new_findings);
    r.measured = static_cast<double>(diff.new_findings.size());
    r.threshold = static_cast<double>(*limits.max_new_findings);
    r.message = "new findings: " + std::to_string(diff.new_findings.size()) + " (" + which +
                "), limit " + r.limit;
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace dumpsift
