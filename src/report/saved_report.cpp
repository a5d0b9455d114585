// Reading a saved report back (saved_report.h): its figures, what it says of itself, and the
// checks `html` makes before and after it analyzes the dump again.
#include "dumpsift/report/saved_report.h"

#include "dumpsift/report/report.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/version.h"
#include "json_text.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace dumpsift {

using namespace detail;

namespace {

// An error that starts with the JSON pointer of the field it is about.
llvm::Error fieldError(const std::string &pointer, const std::string &why) {
  return createError((pointer.empty() ? "/" : pointer) + ": " + why);
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

/// The figures diff and check read of `report` (a JSON object).
llvm::Expected<ReportFigures> readFigures(const Json &report) {
  ReportFigures fig;
  if (auto it = report.find("options"); it != report.end() && it->is_object()) {
    fig.options.emplace();
    for (const auto &[key, value] : it->items())
      fig.options->emplace_back(key, value.dump());
  }
  if (auto it = report.find("dump"); it != report.end() && it->is_object()) {
    if (auto p = it->find("path"); p != it->end() && p->is_string())
      fig.dump_path = p->get<std::string>();
    if (it->contains("truncated")) {
      auto truncated = typedField(*it, "/dump", "truncated", Json::value_t::object);
      if (!truncated)
        return truncated.takeError();
      const std::string where = "/dump/truncated";
      auto file_size = countField(**truncated, where, "file_size");
      if (!file_size)
        return file_size.takeError();
      auto expected_size = countField(**truncated, where, "expected_size");
      if (!expected_size)
        return expected_size.takeError();
      auto first_missing = stringField(**truncated, where, "first_missing_address", true);
      if (!first_missing)
        return first_missing.takeError();
      auto missing_bytes = countField(**truncated, where, "missing_bytes");
      if (!missing_bytes)
        return missing_bytes.takeError();
      fig.truncated =
          ReportFigures::Truncation{*file_size, *expected_size, *first_missing, *missing_bytes};
    }
  }
  if (auto it = report.find("diagnostics"); it != report.end() && it->is_array())
    fig.warnings = it->size();

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

/// The first top-level member where `fresh` and `saved` differ, in key order ("dump.NAME" for a
/// member of `dump`); "" when none does.
std::string firstDifference(const nlohmann::json &fresh, const nlohmann::json &saved) {
  for (const auto &[key, value] : saved.items())
    if (!fresh.contains(key) || fresh[key] != value) {
      if (key == "dump" && value.is_object() && fresh.contains(key))
        for (const auto &[field, v] : value.items())
          if (!fresh[key].contains(field) || fresh[key][field] != v)
            return "dump." + field;
      return key;
    }
  for (const auto &[key, value] : fresh.items())
    if (!saved.contains(key))
      return key;
  return "";
}

} // namespace

bool isReportText(llvm::StringRef bytes) {
  return bytes.ltrim(" \t\r\n").startswith("{");
}

llvm::Expected<SavedReport> readReport(llvm::StringRef text) {
  if (!isReportText(text))
    return createError("not a JSON report (a JSON object)");
  llvm::Expected<Json> parsed = parseJsonText(text);
  if (!parsed)
    return parsed.takeError();
  const Json &report = *parsed;
  SavedReport saved;
  auto version = countField(report, "", "schema_version");
  if (!version)
    return version.takeError();
  if (*version < static_cast<uint64_t>(kOldestReadableReportSchemaVersion) ||
      *version > static_cast<uint64_t>(kReportSchemaVersion))
    return fieldError("/schema_version", "this dumpsift reads report schema versions " +
                                             std::to_string(kOldestReadableReportSchemaVersion) +
                                             " to " + std::to_string(kReportSchemaVersion) +
                                             ", not " + std::to_string(*version));
  saved.schema_version = *version;
  if (auto tool = report.find("tool"); tool != report.end() && tool->is_object())
    if (auto v = tool->find("version"); v != tool->end() && v->is_string())
      saved.tool_version = v->get<std::string>();
  if (auto dump = report.find("dump"); dump != report.end() && dump->is_object())
    if (auto size = dump->find("file_size"); size != dump->end())
      saved.dump_file_size = jsonCount(*size);
  saved.records_extraction = report.contains("extracted");
  if (report.contains("labels")) {
    auto labels = typedField(report, "", "labels", Json::value_t::object);
    if (!labels)
      return labels.takeError();
    for (const auto &[key, value] : (*labels)->items()) {
      const std::string where = jsonPointerChild("/labels", key);
      if (!value.is_string())
        return fieldError(where, "expected a string, got " + jsonTypeWords(value));
      if (llvm::Error e = checkLabel(key, value.get<std::string>()))
        return fieldError(where, llvm::toString(std::move(e)));
      saved.labels.emplace(key, value.get<std::string>());
    }
  }
  llvm::Expected<ReportFigures> figures = readFigures(report);
  if (!figures)
    return figures.takeError();
  saved.figures = std::move(*figures);
  return saved;
}

llvm::Error checkReportOfDump(const SavedReport &report, const std::string &dump_path) {
  if (report.schema_version != static_cast<uint64_t>(kReportSchemaVersion))
    return createError("its schema_version is not " + std::to_string(kReportSchemaVersion));
  if (report.tool_version != toolVersion())
    return createError(
        "it was made by dumpsift " +
        (report.tool_version.empty() ? std::string("(unknown)") : report.tool_version) +
        ", this is dumpsift " + toolVersion().str());
  if (report.records_extraction)
    return createError("it records an extraction (--extract), whose links `html` does not make; "
                       "run `dumpsift analyze DUMP --extract DIR --html PAGE`");
  const std::string &saved_path = report.figures.dump_path;
  if (!report.dump_file_size || saved_path.empty())
    return createError("it records no dump.file_size and dump.path");
  uint64_t size = 0;
  if (std::error_code ec = llvm::sys::fs::file_size(dump_path, size))
    return llvm::createFileError(dump_path, llvm::errorCodeToError(ec));
  if (*report.dump_file_size != size)
    return createError("it was not made from '" + dump_path + "': its dump '" + saved_path +
                       "' has " + std::to_string(*report.dump_file_size) + " bytes, this one " +
                       std::to_string(size));
  if (llvm::sys::path::filename(saved_path) != llvm::sys::path::filename(dump_path))
    return createError("it was not made from '" + dump_path + "': its dump is named '" +
                       llvm::sys::path::filename(saved_path).str() + "'");
  return llvm::Error::success();
}

llvm::Error checkReportReproduced(llvm::StringRef saved_text, const Snapshot &snapshot,
                                  const Analysis &analysis) {
  // Parsed into unordered objects: the reports are equal whatever the order of their keys.
  nlohmann::json saved = nlohmann::json::parse(saved_text.begin(), saved_text.end(), nullptr,
                                               /*allow_exceptions=*/false);
  if (saved.is_discarded() || !saved.is_object())
    return createError("not a JSON report (a JSON object)");
  std::string fresh_text;
  llvm::raw_string_ostream fresh_out(fresh_text);
  writeReportJson(snapshot, analysis, /*extracted=*/nullptr, fresh_out);
  fresh_out.flush();
  nlohmann::json fresh = nlohmann::json::parse(fresh_text);
  fresh_text.clear();
  if (saved.contains("dump") && saved["dump"].contains("path"))
    fresh["dump"]["path"] = saved["dump"]["path"];
  if (saved.contains("labels"))
    fresh["labels"] = saved["labels"];
  if (fresh == saved)
    return llvm::Error::success();
  return createError("it was not made from '" + snapshot.path +
                     "' by this version of dumpsift with the options it records: the analysis "
                     "gives another '" +
                     firstDifference(fresh, saved) + "'");
}

} // namespace dumpsift
