// A saved report read back (saved_report.h): the figures diff and check read, what the report says
// of itself, every analysis option it records (written and read back: the round trip), and the
// checks `html` makes against a dump and its analysis.
#include "compare/sample_reports.h"
#include "dumpsift/report/report.h"
#include "dumpsift/report/saved_report.h"
#include "dumpsift/support/version.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The JSON report writeReportJson writes of `analysis` of `snapshot`.
std::string reportText(const Snapshot &snapshot, const Analysis &analysis) {
  std::string text;
  llvm::raw_string_ostream out(text);
  writeReportJson(snapshot, analysis, /*extracted=*/nullptr, out);
  out.flush();
  return text;
}

/// The value `expected` holds; the test fails with its error when it holds none.
template <typename T> T mustHave(llvm::Expected<T> expected) {
  if (!expected)
    FAIL(llvm::toString(expected.takeError()));
  return std::move(*expected);
}

/// `options` written into a report (of an empty dump: no buffers) and read back.
AnalyzeOptions readBack(const AnalyzeOptions &options) {
  Snapshot snapshot;
  Analysis analysis;
  analysis.options = options;
  return mustHave(recordedOptions(mustHave(readReport(reportText(snapshot, analysis)))));
}

/// The recordedOptions error for a sample report whose `options` are `options`.
std::string optionsError(const Json &options) {
  Json report = baseReport();
  report["options"] = options;
  return errorOf(recordedOptions(mustHave(readReport(report.dump()))));
}

/// Whether a check gave no error (its message goes with the next assertion when it did).
bool passed(llvm::Error check) {
  if (!check)
    return true;
  UNSCOPED_INFO(llvm::toString(std::move(check)));
  return false;
}

/// The message of a check's error, or "" (and a failed CHECK) when it gave none.
std::string messageOf(llvm::Error check) {
  const bool failed = static_cast<bool>(check);
  CHECK(failed);
  return failed ? llvm::toString(std::move(check)) : "";
}

} // namespace

TEST_CASE("readReport takes out totals, kinds, groups and findings") {
  ReportFigures f = figuresOf(baseReport());
  CHECK(f.buffers.count == 7);
  CHECK(f.buffers.bytes == 4 * 135152 + 2 * 266224 + 100136);
  CHECK(f.by_kind.at("jpeg").count == 3);
  CHECK(f.by_kind.at("jpeg").bytes == 3 * 135152);
  REQUIRE(f.groups.size() == 3);
  CHECK(f.groups[0].size == 135152);
  CHECK(f.groups[0].kinds.size() == 2);
  CHECK(f.groups[2].state == "free");
  REQUIRE(f.findings.size() == 2);
  CHECK(f.findings[0].type == "duplicates");
  CHECK(f.findings[0].numbers ==
        std::vector<std::pair<std::string, uint64_t>>{{"count", 2}, {"size", 135152}});
  CHECK(f.dump_path == "sample.core");
}

TEST_CASE("readReport names the field that is missing or wrong") {
  Json r = baseReport();
  r["schema_version"] = 3;
  CHECK(errorOf(readReport(r.dump())) ==
        "/schema_version: this dumpsift reads report schema versions "
        "1 to 2, not 3");
  CHECK(errorOf(readReport(Json::array().dump())) == "not a JSON report (a JSON object)");
  CHECK(errorOf(readReport(" \n")) == "not a JSON report (a JSON object)");
  CHECK(errorOf(readReport("{\"schema_version\": 2,")).rfind("line 1, column ", 0) == 0);
  r = baseReport();
  r.erase("summary");
  CHECK(errorOf(readReport(r.dump())) == "/summary: missing");
  r = baseReport();
  r["groups"][1]["count"] = -3;
  CHECK(errorOf(readReport(r.dump())) ==
        "/groups/1/count: expected a non-negative integer, got a negative number");
  r = baseReport();
  r["groups"][0]["state"] = 1;
  CHECK(errorOf(readReport(r.dump())) == "/groups/0/state: expected a string, got a number");
  r = baseReport();
  r["groups"][0]["kinds"]["jpeg"] = "three";
  CHECK(errorOf(readReport(r.dump())) ==
        "/groups/0/kinds/jpeg: expected a non-negative integer, got a string");
  r = baseReport();
  r["summary"]["by_kind"]["zero"].erase("bytes");
  CHECK(errorOf(readReport(r.dump())) == "/summary/by_kind/zero/bytes: missing");
  r = baseReport();
  r["findings"] = Json::object();
  CHECK(errorOf(readReport(r.dump())) == "/findings: expected an array, got an object");
  r = baseReport();
  r["findings"][1].erase("type");
  CHECK(errorOf(readReport(r.dump())) == "/findings/1/type: missing");
}

TEST_CASE("readReport accepts a report built in memory (signed integers)") {
  Json r = baseReport();
  r["schema_version"] = int64_t{1};
  r["summary"]["buffers"] = int64_t{7};
  r["groups"][0]["count"] = int{4};
  CHECK(figuresOf(r).buffers.count == 7);
}

TEST_CASE(
    "readReport takes what a report says of itself: versions, the dump's size, an extraction") {
  Json report = baseReport();
  report["schema_version"] = 2;
  report["dump"]["file_size"] = 5236984;
  SavedReport saved = mustHave(readReport(report.dump()));
  CHECK(saved.schema_version == 2);
  CHECK(saved.tool_version == "test");
  CHECK(saved.dump_file_size == std::optional<uint64_t>(5236984));
  CHECK_FALSE(saved.records_extraction);
  report["extracted"] = Json::array();
  report["tool"].erase("version");
  report["dump"].erase("file_size");
  saved = mustHave(readReport(report.dump()));
  CHECK(saved.tool_version.empty());
  CHECK_FALSE(saved.dump_file_size);
  CHECK(saved.records_extraction);
}

TEST_CASE("every analysis option a report records reads back as it was written") {
  const AnalyzeOptions defaults;
  // Every field away from its default, then every field at it (full_hash is then not written,
  // max_size and state are null).
  AnalyzeOptions given;
  given.min_size = 12345;
  given.max_size = 987654;
  given.kinds = {ContentKind::Jpeg, ContentKind::Zero};
  given.state = AllocState::Free;
  given.walkers = {"glibc", "jemalloc"};
  given.region_scan = false;
  given.threads = 3;
  given.full_hash = true;
  given.group_by = GroupBy::SizeKind;
  given.inflate_budget = 1 << 20;
  given.holders = HoldersMode::Direct;
  given.module_paths = {"/sysroot"};
  given.holder_budget = 1000;
  given.module_files = false;
  for (const AnalyzeOptions &written : {given, defaults}) {
    const AnalyzeOptions read = readBack(written);
    // Each field by name. A field added to AnalyzeOptions breaks these bindings until it is listed
    // here, compared as recorded or, with the reason, as one a report does not record.
    const auto &[min_size, max_size, kinds, state, walkers, region_scan, threads, full_hash,
                 group_by, inflate_budget, holders, module_paths, module_files, holder_budget] =
        read;
    CHECK(min_size == written.min_size);
    CHECK(max_size == written.max_size);
    CHECK(kinds == written.kinds);
    CHECK(state == written.state);
    CHECK(walkers == written.walkers);
    CHECK(region_scan == written.region_scan);
    CHECK(full_hash == written.full_hash);
    CHECK(group_by == written.group_by);
    CHECK(holders == written.holders);
    CHECK(module_files == written.module_files);
    // Not recorded, so read as the defaults: the threads change nothing in a report, and the
    // inflate budget is no option of the tool (every report is made with the default).
    CHECK(threads == defaults.threads);
    CHECK(inflate_budget == defaults.inflate_budget);
    // The module paths are this machine's, and the holders budget is no option of the tool.
    CHECK(module_paths == defaults.module_paths);
    CHECK(holder_budget == defaults.holder_budget);
  }
  // The values given are not the defaults: a field the writer or the reader forgot could not
  // read back as given.
  const auto &[min_size, max_size, kinds, state, walkers, region_scan, threads, full_hash, group_by,
               inflate_budget, holders, module_paths, module_files, holder_budget] = given;
  CHECK(min_size != defaults.min_size);
  CHECK(max_size != defaults.max_size);
  CHECK(kinds != defaults.kinds);
  CHECK(state != defaults.state);
  CHECK(walkers != defaults.walkers);
  CHECK(region_scan != defaults.region_scan);
  CHECK(threads != defaults.threads);
  CHECK(full_hash != defaults.full_hash);
  CHECK(group_by != defaults.group_by);
  CHECK(inflate_budget != defaults.inflate_budget);
  CHECK(holders != defaults.holders);
  CHECK(module_paths != defaults.module_paths);
  CHECK(module_files != defaults.module_files);
  CHECK(holder_budget != defaults.holder_budget);
}

TEST_CASE("recordedOptions names the option that is missing, of the wrong type or unknown") {
  Json report = baseReport();
  report.erase("options");
  CHECK(errorOf(recordedOptions(mustHave(readReport(report.dump())))) ==
        "/options: missing (the report records no analysis options)");
  CHECK(optionsError(Json{{"max_size", nullptr}}) == "/options/min_size: missing");
  CHECK(optionsError(Json{{"min_size", "64K"}}) ==
        "/options/min_size: expected a size in bytes, got a string");
  CHECK(optionsError(Json{{"min_size", 1}, {"max_size", -1}}) ==
        "/options/max_size: expected a size in bytes or null, got a negative number");
  CHECK(optionsError(Json{{"min_size", 1}, {"kinds", {"jpeg", "jpg"}}}) ==
        "/options/kinds/1: not a kind this dumpsift knows");
  CHECK(optionsError(Json{{"min_size", 1}, {"state", "busy"}}) ==
        "/options/state: expected used, free, unknown or null");
  CHECK(optionsError(Json{{"min_size", 1}, {"walkers", {"glibc", 7}}}) ==
        "/options/walkers/1: expected a walker name, got a number");
  CHECK(optionsError(Json{{"min_size", 1}, {"full_hash", "yes"}}) ==
        "/options/full_hash: expected true or false, got a string");
  CHECK(optionsError(Json{{"min_size", 1}, {"group_by", "kind"}}) ==
        "/options/group_by: expected \"size\" or \"size,kind\"");
  // An option of another version is not one of this one's: left out.
  report = baseReport();
  report["options"] = Json{{"min_size", 1}, {"sample_rate", 3}};
  CHECK(mustHave(recordedOptions(mustHave(readReport(report.dump())))).min_size == 1);
}

TEST_CASE("a report's labels are written after `dump` in key order, read back, and checked") {
  Snapshot snapshot;
  Analysis analysis;
  std::string text;
  llvm::raw_string_ostream out(text);
  writeReportJson(snapshot, analysis, /*extracted=*/nullptr, out,
                  ReportLabels{{"version", "1.10"}, {"service", "api"}});
  out.flush();
  CHECK(text.find("\"labels\": {\n    \"service\": \"api\",\n    \"version\": \"1.10\"\n  },\n"
                  "  \"options\"") != std::string::npos);
  CHECK(mustHave(readReport(text)).labels == ReportLabels{{"service", "api"}, {"version", "1.10"}});
  // No labels, no `labels` object: the reports of analyze without --label are unchanged.
  CHECK(reportText(snapshot, analysis).find("\"labels\"") == std::string::npos);
  CHECK(mustHave(readReport(reportText(snapshot, analysis))).labels.empty());

  Json r = baseReport();
  r["labels"] = Json{{"service", 7}};
  CHECK(errorOf(readReport(r.dump())) == "/labels/service: expected a string, got a number");
  r["labels"] = Json{{"ser vice", "api"}};
  CHECK(errorOf(readReport(r.dump())) ==
        "/labels/ser vice: label key 'ser vice' is not 1 to 64 characters among A-Z a-z 0-9 _ . -");
  r["labels"] = Json{{"host", "a\tb"}};
  CHECK(errorOf(readReport(r.dump())) ==
        "/labels/host: the value of label 'host' holds a control character");
  r["labels"] = Json::array();
  CHECK(errorOf(readReport(r.dump())) == "/labels: expected an object, got an array");
}

TEST_CASE("html's checks: a report of this dump and analysis, and the first field that differs") {
  const std::string core = unpackedFixture("cores/story.core.xz");
  auto snapshot = openDump(core);
  if (!snapshot)
    FAIL(core << ": " << llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);
  AnalyzeOptions options;
  options.full_hash = true;
  const Analysis analysis = analyze(memory, options);
  const std::string text = reportText(**snapshot, analysis);
  const SavedReport saved = mustHave(readReport(text));
  CHECK(saved.dump_file_size == std::optional<uint64_t>((*snapshot)->file->getBufferSize()));
  CHECK(saved.tool_version == toolVersion());

  // Of this dump, at any path with its file name; not of another file or another name.
  CHECK(passed(checkReportOfDump(saved, core)));
  SavedReport moved = saved;
  moved.figures.dump_path = "/elsewhere/story.core";
  CHECK(passed(checkReportOfDump(moved, core)));
  const std::string other = unpackedFixture("cores/hold_buffers.core.xz");
  CHECK(messageOf(checkReportOfDump(saved, other))
            .rfind("it was not made from '" + other + "': its dump '" + core + "' has ", 0) == 0);
  moved.figures.dump_path = "/elsewhere/other.core";
  CHECK(messageOf(checkReportOfDump(moved, core)) ==
        "it was not made from '" + core + "': its dump is named 'other.core'");
  SavedReport old = saved;
  old.tool_version = "0.0.1";
  CHECK(messageOf(checkReportOfDump(old, core)) ==
        "it was made by dumpsift 0.0.1, this is dumpsift " + toolVersion().str());

  // The analysis made with the options recorded gives the report again, whatever the dump's path;
  // without full_hash (the option html once forgot), the buffers' hashes differ.
  AnalyzeOptions recorded = mustHave(recordedOptions(saved));
  CHECK(recorded.full_hash);
  CHECK(passed(checkReportReproduced(text, **snapshot, analyze(memory, recorded))));
  Json elsewhere = Json::parse(text);
  elsewhere["dump"]["path"] = "/elsewhere/story.core";
  CHECK(passed(checkReportReproduced(elsewhere.dump(), **snapshot, analysis)));
  recorded.full_hash = false;
  CHECK(messageOf(checkReportReproduced(text, **snapshot, analyze(memory, recorded))) ==
        "it was not made from '" + core +
            "' by this version of dumpsift with the options it records: the analysis gives "
            "another 'buffers'");
}
