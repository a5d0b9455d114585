#include "dumpsift/report/compare.h"

#include "dumpsift/report/report.h"
#include "dumpsift/support/hex.h"

#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <tuple>

namespace dumpsift {

namespace {

// An error that starts with the JSON pointer of the field it is about.
llvm::Error fieldError(const std::string &pointer, const std::string &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s",
                                 pointer.empty() ? "/" : pointer.c_str(), why.c_str());
}

// The member `key` of object `object` (at `pointer`) as a non-negative integer; fails when it is
// absent or anything else.
llvm::Expected<uint64_t> countField(const Json &object, const std::string &pointer,
                                    const char *key) {
  std::string where = jsonPointerChild(pointer, key);
  auto it = object.find(key);
  if (it == object.end())
    return fieldError(where, "missing");
  std::optional<uint64_t> n = jsonCount(*it);
  if (!n)
    return fieldError(where, "expected a non-negative integer, got " + jsonTypeWords(*it));
  return *n;
}

// The member `key` of `object` as a string; `required` false turns absence into "".
llvm::Expected<std::string> stringField(const Json &object, const std::string &pointer,
                                        const char *key, bool required) {
  std::string where = jsonPointerChild(pointer, key);
  auto it = object.find(key);
  if (it == object.end()) {
    if (required)
      return fieldError(where, "missing");
    return std::string();
  }
  if (!it->is_string())
    return fieldError(where, "expected a string, got " + jsonTypeWords(*it));
  return it->get<std::string>();
}

// The member `key` of `object`, which must be present and of JSON type `type`.
llvm::Expected<const Json *> typedField(const Json &object, const std::string &pointer,
                                        const char *key, Json::value_t type) {
  std::string where = jsonPointerChild(pointer, key);
  auto it = object.find(key);
  if (it == object.end())
    return fieldError(where, "missing");
  if (it->type() != type)
    return fieldError(where,
                      "expected " + jsonTypeWords(Json(type)) + ", got " + jsonTypeWords(*it));
  return &*it;
}

// "+5", "-3", "0".
std::string signedDigits(int64_t n) {
  if (n > 0)
    return "+" + groupedDigits(static_cast<uint64_t>(n));
  if (n < 0)
    return "-" + groupedDigits(static_cast<uint64_t>(-(n + 1)) + 1);
  return "0";
}

// Growth of `c` in percent of `c.before` (which must be non-zero).
double growthPercent(const Change &c) {
  return (static_cast<double>(c.after) - static_cast<double>(c.before)) * 100.0 /
         static_cast<double>(c.before);
}

// "12.5%" with one decimal (and a sign when asked).
std::string percentText(double percent, bool sign) {
  char buf[64];
  std::snprintf(buf, sizeof buf, sign ? "%+.1f%%" : "%.1f%%", percent);
  return buf;
}

// "10%" or "0.5%": a percent limit as a person wrote it.
std::string limitPercentText(double percent) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g%%", percent);
  return buf;
}

// "1,081,216 -> 2,162,432 (+1,081,216, +100.0%)"; "8" when unchanged.
std::string changeText(const Change &c, bool with_percent) {
  if (c.before == c.after)
    return groupedDigits(c.after);
  std::string out =
      groupedDigits(c.before) + " -> " + groupedDigits(c.after) + " (" + signedDigits(c.delta());
  if (with_percent && c.before)
    out += ", " + percentText(growthPercent(c), true);
  return out + ")";
}

Json changeJson(const Change &c) {
  return Json{{"before", c.before}, {"after", c.after}, {"delta", c.delta()}};
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

Json findingJson(const ReportFigures::FindingEntry &f) {
  Json j;
  j["type"] = f.type;
  j["bytes"] = f.bytes;
  for (const auto &[key, value] : f.numbers)
    j[key] = value;
  j["explanation"] = f.explanation;
  return j;
}

// "duplicates (count 3, size 135152): <explanation>".
std::string findingText(const ReportFigures::FindingEntry &f) {
  std::string out = f.type + ", " + groupedDigits(f.bytes) + " bytes";
  if (!f.explanation.empty())
    out += ": " + f.explanation;
  return out;
}

// The options on which two reports differ, in words; empty when they agree or one is absent.
std::string optionDifferences(const Json &before, const Json &after) {
  if (!before.is_object() || !after.is_object())
    return "";
  std::string out;
  auto note = [&](const std::string &key, const Json *a, const Json *b) {
    out += (out.empty() ? "" : ", ") + key + " (" + (a ? a->dump() : "absent") + " vs " +
           (b ? b->dump() : "absent") + ")";
  };
  for (const auto &[key, value] : before.items()) {
    auto it = after.find(key);
    if (it == after.end())
      note(key, &value, nullptr);
    else if (*it != value)
      note(key, &value, &*it);
  }
  for (const auto &[key, value] : after.items())
    if (!before.contains(key))
      note(key, nullptr, &value);
  return out;
}

} // namespace

std::optional<uint64_t> jsonCount(const Json &value) {
  if (value.is_number_unsigned())
    return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

std::string jsonTypeWords(const Json &value) {
  if (value.is_number_integer())
    return jsonCount(value) ? "a number" : "a negative number";
  if (value.is_number_float())
    return "a fractional number";
  switch (value.type()) {
  case Json::value_t::object:
    return "an object";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::null:
    return "null";
  default:
    return "a value";
  }
}

std::string jsonPointerChild(const std::string &pointer, llvm::StringRef key) {
  std::string out = pointer + "/";
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out.push_back(c);
  }
  return out;
}

std::string jsonPointerChild(const std::string &pointer, size_t index) {
  return pointer + "/" + std::to_string(index);
}

std::string groupedDigits(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::pair<size_t, size_t> lineAndColumn(llvm::StringRef text, size_t offset) {
  offset = std::min(offset, text.size());
  llvm::StringRef head = text.take_front(offset);
  size_t line = 1 + static_cast<size_t>(head.count('\n'));
  size_t last_newline = head.rfind('\n');
  size_t column = last_newline == llvm::StringRef::npos ? offset + 1 : offset - last_newline;
  return {line, column};
}

llvm::Expected<Json> parseJsonText(llvm::StringRef text) {
  // nlohmann reports syntax errors only by exception; this is the one place that catches it.
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error &e) {
    // e.byte is the 1-based index of the last byte read: the offending one.
    auto [line, column] = lineAndColumn(text, e.byte ? e.byte - 1 : 0);
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: WHY".
    std::string why = e.what();
    size_t colon = why.find(": ", why.find("parse error"));
    if (colon != std::string::npos)
      why = why.substr(colon + 2);
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "line %zu, column %zu: %s", line,
                                   column, why.c_str());
  }
}

llvm::Expected<Json> loadReportOrDump(const std::string &path, const AnalyzeOptions &options,
                                      bool *was_dump) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return llvm::createStringError(file.getError(), "%s", file.getError().message().c_str());
  llvm::StringRef bytes = (*file)->getBuffer();
  llvm::StringRef start = bytes.ltrim(" \t\r\n");
  if (start.startswith("{")) {
    if (was_dump)
      *was_dump = false;
    return parseJsonText(bytes);
  }
  if (was_dump)
    *was_dump = true;
  if (bytes.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "empty file: neither a report nor a dump");
  if (!bytes.startswith("\x7f"
                        "ELF") &&
      !bytes.startswith("MDMP"))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "neither a report (a JSON object) nor a dump (an ELF core or a minidump)");
  file->reset(); // openDump maps the file itself
  auto snapshot = openDump(path);
  if (!snapshot)
    return snapshot.takeError();
  AddressSpace memory(**snapshot);
  Analysis analysis = analyze(memory, options);
  return reportJson(**snapshot, analysis);
}

llvm::Expected<ReportFigures> readFigures(const Json &report) {
  if (!report.is_object())
    return fieldError("", "expected a report (a JSON object), got " + jsonTypeWords(report));
  ReportFigures fig;

  auto version = countField(report, "", "schema_version");
  if (!version)
    return version.takeError();
  if (*version != static_cast<uint64_t>(kReportSchemaVersion))
    return fieldError("/schema_version", "this dumpsift reads report schema version " +
                                             std::to_string(kReportSchemaVersion) + ", not " +
                                             std::to_string(*version));

  if (auto it = report.find("options"); it != report.end())
    fig.options = *it;
  if (auto it = report.find("dump"); it != report.end() && it->is_object())
    if (auto p = it->find("path"); p != it->end() && p->is_string())
      fig.dump_path = p->get<std::string>();

  // summary: totals and bytes per kind.
  auto summary = typedField(report, "", "summary", Json::value_t::object);
  if (!summary)
    return summary.takeError();
  auto buffers = countField(**summary, "/summary", "buffers");
  if (!buffers)
    return buffers.takeError();
  auto buffer_bytes = countField(**summary, "/summary", "buffer_bytes");
  if (!buffer_bytes)
    return buffer_bytes.takeError();
  fig.buffers = Tally{*buffers, *buffer_bytes};
  auto by_kind = typedField(**summary, "/summary", "by_kind", Json::value_t::object);
  if (!by_kind)
    return by_kind.takeError();
  for (const auto &[kind, tally] : (*by_kind)->items()) {
    std::string where = jsonPointerChild("/summary/by_kind", kind);
    if (!tally.is_object())
      return fieldError(where, "expected an object, got " + jsonTypeWords(tally));
    auto count = countField(tally, where, "count");
    if (!count)
      return count.takeError();
    auto bytes = countField(tally, where, "bytes");
    if (!bytes)
      return bytes.takeError();
    fig.by_kind[kind] = Tally{*count, *bytes};
  }

  // groups: size, state, kind?, count, total_bytes, kinds.
  auto groups = typedField(report, "", "groups", Json::value_t::array);
  if (!groups)
    return groups.takeError();
  for (size_t i = 0; i < (*groups)->size(); ++i) {
    const Json &g = (**groups)[i];
    std::string where = jsonPointerChild("/groups", i);
    if (!g.is_object())
      return fieldError(where, "expected an object, got " + jsonTypeWords(g));
    ReportFigures::Group group;
    auto size = countField(g, where, "size");
    if (!size)
      return size.takeError();
    auto state = stringField(g, where, "state", true);
    if (!state)
      return state.takeError();
    auto kind = stringField(g, where, "kind", false);
    if (!kind)
      return kind.takeError();
    auto count = countField(g, where, "count");
    if (!count)
      return count.takeError();
    auto total = countField(g, where, "total_bytes");
    if (!total)
      return total.takeError();
    group.size = *size;
    group.state = *state;
    group.kind = *kind;
    group.count = *count;
    group.total_bytes = *total;
    if (g.contains("kinds")) {
      auto kinds = typedField(g, where, "kinds", Json::value_t::object);
      if (!kinds)
        return kinds.takeError();
      for (const auto &[name, n] : (*kinds)->items()) {
        std::optional<uint64_t> count = jsonCount(n);
        if (!count)
          return fieldError(jsonPointerChild(where + "/kinds", name),
                            "expected a non-negative integer, got " + jsonTypeWords(n));
        group.kinds.emplace_back(name, *count);
      }
    } else if (!group.kind.empty()) {
      group.kinds.emplace_back(group.kind, group.count);
    }
    fig.groups.push_back(std::move(group));
  }

  // findings: type, bytes, type-specific numbers, explanation.
  auto findings = typedField(report, "", "findings", Json::value_t::array);
  if (!findings)
    return findings.takeError();
  for (size_t i = 0; i < (*findings)->size(); ++i) {
    const Json &f = (**findings)[i];
    std::string where = jsonPointerChild("/findings", i);
    if (!f.is_object())
      return fieldError(where, "expected an object, got " + jsonTypeWords(f));
    ReportFigures::FindingEntry entry;
    auto type = stringField(f, where, "type", true);
    if (!type)
      return type.takeError();
    auto bytes = countField(f, where, "bytes");
    if (!bytes)
      return bytes.takeError();
    auto explanation = stringField(f, where, "explanation", false);
    if (!explanation)
      return explanation.takeError();
    entry.type = *type;
    entry.bytes = *bytes;
    entry.explanation = *explanation;
    for (const auto &[key, value] : f.items())
      if (std::optional<uint64_t> n = jsonCount(value); n && key != "bytes")
        entry.numbers.emplace_back(key, *n);
    fig.findings.push_back(std::move(entry));
  }
  return fig;
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
  // One figure against the growth limits (percent, then bytes).
  auto growth = [&](const std::string &subject, const Change &bytes) {
    if (bytes.after <= bytes.before)
      return;
    if (limits.max_growth_percent && bytes.before) {
      double pct = growthPercent(bytes);
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

Json diffJson(const ReportDiff &diff, const std::vector<Regression> &regressions,
              const std::string &before_label, const std::string &after_label) {
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
  for (const auto &f : diff.new_findings)
    added.push_back(findingJson(f));
  for (const auto &f : diff.gone_findings)
    gone.push_back(findingJson(f));
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
  return j;
}

void writeDiffText(const ReportDiff &diff, const std::vector<Regression> &regressions,
                   const std::string &before_label, const std::string &after_label,
                   const DiffTextOptions &options, std::ostream &out) {
  out << "dumpsift diff: " << before_label << " -> " << after_label << "\n";
  out << "  buffers       " << changeText(diff.buffers, false) << "\n";
  out << "  buffer bytes  " << changeText(diff.buffer_bytes, true) << "\n";
  for (const std::string &w : diff.warnings)
    out << "warning: " << w << "\n";

  // Kinds.
  size_t unchanged_kinds = 0;
  std::ostringstream kind_rows;
  for (const KindDiff &k : diff.kinds) {
    bool same = k.count.before == k.count.after && k.bytes.before == k.bytes.after;
    if (same && !options.show_unchanged) {
      ++unchanged_kinds;
      continue;
    }
    kind_rows << "  " << std::left << std::setw(13) << k.kind << std::setw(22)
              << changeText(k.count, false) << changeText(k.bytes, true) << "\n";
  }
  out << "\nkinds (count, bytes)\n" << kind_rows.str();
  if (unchanged_kinds)
    out << "  (" << unchanged_kinds << " kind" << (unchanged_kinds == 1 ? "" : "s")
        << " unchanged)\n";
  if (diff.kinds.empty())
    out << "  (none)\n";

  // Groups.
  size_t unchanged_groups = 0, shown = 0, hidden = 0;
  std::ostringstream group_rows;
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
    group_rows << "  " << std::left << std::setw(10) << groupStatusName(g.status).str()
               << std::setw(26) << label << std::setw(22) << changeText(g.count, false)
               << changeText(g.bytes, true) << "\n";
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
      out << "  " << std::left << std::setw(16) << t.type << std::setw(22)
          << changeText(t.count, false) << changeText(t.bytes, true) << "\n";
    for (const auto &f : diff.new_findings)
      out << "  new:  " << findingText(f) << "\n";
    for (const auto &f : diff.gone_findings)
      out << "  gone: " << findingText(f) << "\n";
  }

  out << "\n";
  for (const Regression &r : regressions)
    out << "REGRESSION " << r.message << "\n";
  if (regressions.empty())
    out << "dumpsift diff: no regressions\n";
  else
    out << "dumpsift diff: " << regressions.size() << " regression"
        << (regressions.size() == 1 ? "" : "s") << "\n";
}

} // namespace dumpsift
