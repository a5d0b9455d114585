// Hand-made report JSON for the diff and check tests (and those of their output): only the fields
// diff and check read, with the summary computed from the groups so that the figures agree the way
// a real report's do.
#pragma once

#include "dumpsift/compare/diff.h"
#include "dumpsift/compare/figures.h"
#include "dumpsift/compare/rules.h"
#include "dumpsift/report/rules_file.h"
#include "dumpsift/report/saved_report.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace dumpsift::test {

using Json = nlohmann::ordered_json;

/// One size group: size, state, and its count per kind.
struct SampleGroup {
  uint64_t size = 0;
  std::string state = "used";
  std::vector<std::pair<std::string, uint64_t>> kinds;
};

/// One finding: type, bytes, type-specific figures.
struct SampleFinding {
  std::string type;
  uint64_t bytes = 0;
  std::vector<std::pair<std::string, uint64_t>> numbers;
};

/// A schema-version-1 report holding `groups` and `findings` (summary.by_kind, buffers and
/// buffer_bytes derived from the groups).
inline Json sampleReport(const std::vector<SampleGroup> &groups,
                         const std::vector<SampleFinding> &findings = {}) {
  Json report;
  report["schema_version"] = 1;
  report["tool"] = Json{{"name", "dumpsift"}, {"version", "test"}};
  report["dump"] = Json{{"path", "sample.core"}};
  report["options"] = Json{{"min_size", 65536}, {"group_by", "size"}};
  uint64_t buffers = 0, bytes = 0;
  std::map<std::string, Tally> by_kind;
  Json group_array = Json::array();
  for (const SampleGroup &g : groups) {
    uint64_t count = 0;
    Json kinds = Json::object();
    for (const auto &[kind, n] : g.kinds) {
      count += n;
      kinds[kind] = n;
      by_kind[kind].count += n;
      by_kind[kind].bytes += n * g.size;
    }
    buffers += count;
    bytes += count * g.size;
    group_array.push_back(Json{{"size", g.size},
                               {"state", g.state},
                               {"allocator", "glibc"},
                               {"count", count},
                               {"total_bytes", count * g.size},
                               {"kinds", std::move(kinds)},
                               {"addresses", Json::array()}});
  }
  Json by_kind_json = Json::object();
  for (const auto &[kind, t] : by_kind)
    by_kind_json[kind] = Json{{"count", t.count}, {"bytes", t.bytes}};
  report["summary"] = Json{{"allocations_seen", buffers},
                           {"buffers", buffers},
                           {"buffer_bytes", bytes},
                           {"groups", groups.size()},
                           {"by_kind", std::move(by_kind_json)},
                           {"unclaimed_bytes", 0}};
  report["groups"] = std::move(group_array);
  Json finding_array = Json::array();
  for (const SampleFinding &f : findings) {
    Json fj{{"type", f.type}, {"bytes", f.bytes}};
    for (const auto &[key, value] : f.numbers)
      fj[key] = value;
    fj["addresses"] = Json::array();
    fj["explanation"] = "a " + f.type + " finding";
    finding_array.push_back(std::move(fj));
  }
  report["findings"] = std::move(finding_array);
  report["buffers"] = Json::array();
  report["unclaimed"] = Json::array();
  report["diagnostics"] = Json::array();
  return report;
}

/// The baseline most tests start from: an uploader holding JPEG slices and chunk frames, zeroed
/// pool buffers, and one free buffer.
inline Json baseReport() {
  return sampleReport({{135152, "used", {{"jpeg", 3}, {"aws-chunked", 1}}},
                       {266224, "used", {{"zero", 2}}},
                       {100136, "free", {{"unknown", 1}}}},
                      {{"duplicates", 135152, {{"count", 2}, {"size", 135152}}},
                       {"zero-filled", 532448, {{"count", 2}, {"size", 266224}}}});
}

/// The figures of `report`'s text as readReport reads them, REQUIRing success.
inline ReportFigures figuresOf(const Json &report) {
  auto saved = readReport(report.dump());
  if (!saved)
    FAIL("readReport: " << llvm::toString(saved.takeError()));
  return std::move(saved->figures);
}

/// The diff of two hand-made reports.
inline ReportDiff diffOf(const Json &before, const Json &after) {
  return diffReports(figuresOf(before), figuresOf(after));
}

/// parseRules on `text`, REQUIRing success.
inline RuleSet mustParse(const std::string &text) {
  auto rules = parseRules(text);
  if (!rules)
    FAIL("parseRules: " << llvm::toString(rules.takeError()) << "\n" << text);
  return std::move(*rules);
}

/// The message of an Expected's error, or "" (and a failed CHECK) when it holds a value.
template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value) {
    CHECK(false);
    return "";
  }
  return llvm::toString(value.takeError());
}

} // namespace dumpsift::test
