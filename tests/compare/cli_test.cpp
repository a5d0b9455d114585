// `dumpsift check` and `dumpsift diff` as CI runs them: exit codes 0, 1 and 2, the lines they
// print, and their errors, on hand-made reports and on the story fixture dump.
#include "compare/sample_reports.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <fstream>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// Writes `text` to `path` (REQUIREs success).
void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

/// A scratch directory holding base.json (baseReport), same.json (a copy), grown.json (three
/// more JPEGs, a new 131,186-byte group, a new finding) and rules.json.
std::string setUp(const std::string &name) {
  std::string dir = scratchDir("ci-cli-" + name);
  writeText(dir + "/base.json", baseReport().dump(2));
  writeText(dir + "/same.json", baseReport().dump());
  Json grown = sampleReport({{135152, "used", {{"jpeg", 6}, {"aws-chunked", 1}}},
                             {266224, "used", {{"zero", 2}}},
                             {100136, "free", {{"unknown", 1}}},
                             {131186, "used", {{"aws-chunked", 2}}}},
                            {{"duplicates", 135152, {{"count", 2}, {"size", 135152}}},
                             {"zero-filled", 532448, {{"count", 2}, {"size", 266224}}},
                             {"duplicates", 270304, {{"count", 3}, {"size", 135152}}}});
  writeText(dir + "/grown.json", grown.dump(2));
  writeText(dir + "/rules.json", R"({
  "version": 1,
  "rules": [
    {"name": "jpeg-bytes", "kind": "jpeg", "max_bytes": "512K"},
    {"name": "no-131186", "size": 131186, "must_not_exist": true},
    {"name": "zeros", "kind": "zero", "max_bytes": "10M"}
  ]
}
)");
  return dir;
}

} // namespace

TEST_CASE("check: exit 0 when every rule passes, 1 with one line per violated rule") {
  std::string dir = setUp("check");
  CommandResult ok = runTool(dir, "check base.json --rules rules.json");
  CHECK(ok.exit_code == 0);
  CHECK(ok.out == "dumpsift check: all 3 rules passed (base.json, rules rules.json)\n");
  CHECK(ok.err.empty());

  CommandResult bad = runTool(dir, "check grown.json --rules rules.json");
  CHECK(bad.exit_code == 1);
  CHECK(bad.out == "FAIL jpeg-bytes [kind jpeg]: bytes 810,912 (791.9 KiB) > max_bytes 524,288 "
                   "(512.0 KiB)\n"
                   "FAIL no-131186 [size 131,186]: found 2 buffers, 262,372 bytes (256.2 KiB), "
                   "must not exist\n"
                   "dumpsift check: 2 of 3 rules failed (grown.json, rules rules.json)\n");

  CommandResult verbose = runTool(dir, "check grown.json --rules rules.json -v");
  CHECK(verbose.exit_code == 1);
  CHECK(verbose.out.find("PASS zeros [kind zero]") != std::string::npos);
}

TEST_CASE("check --format github prints workflow annotations at the rule's line") {
  std::string dir = setUp("check-github");
  CommandResult r = runTool(dir, "check grown.json --rules rules.json --format github");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("::error file=rules.json,line=4,title=dumpsift check%3A jpeg-bytes::[kind "
                   "jpeg] bytes 810,912") != std::string::npos);
  CHECK(r.out.find("::error file=rules.json,line=5,title=dumpsift check%3A no-131186::") !=
        std::string::npos);
  CHECK(runTool(dir, "check base.json --rules rules.json --format github").exit_code == 0);
}

TEST_CASE("check --json describes every rule") {
  std::string dir = setUp("check-json");
  CommandResult r = runTool(dir, "check grown.json --rules rules.json --json");
  CHECK(r.exit_code == 1);
  Json j = Json::parse(r.out);
  CHECK(j["passed"] == false);
  CHECK(j["failed"] == 2);
  CHECK(j["rules"].size() == 3);
  CHECK(j["rules"][2]["passed"] == true);
  CHECK(runTool(dir, "check grown.json --rules rules.json --format json").out == r.out);
}

TEST_CASE("check: bad rule files exit 2 with the file, the field and the line") {
  std::string dir = setUp("check-bad-rules");
  writeText(dir + "/typo.json", "{\n  \"version\": 1,\n  \"rules\": [\n    {\"name\": \"a\",\n"
                                "     \"kind\": \"jpeg\", \"max_byte\": 5}\n  ]\n}\n");
  CommandResult r = runTool(dir, "check base.json --rules typo.json");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("dumpsift: error: 'typo.json': /rules/0/max_byte (line 5): unknown field", 0) ==
        0);

  writeText(dir + "/syntax.json", "{\n  \"version\": 1,\n  \"rules\": [\n    {\"name\": \"a\",}\n"
                                  "  ]\n}\n");
  r = runTool(dir, "check base.json --rules syntax.json");
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("dumpsift: error: 'syntax.json': line 4, column 18: syntax error", 0) == 0);

  r = runTool(dir, "check base.json --rules missing.json");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dumpsift: error: 'missing.json': No such file or directory\n");

  r = runTool(dir, "check base.json --rules rules.json --format sarif");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dumpsift: error: --format: 'sarif' is not text, github or json\n");

  r = runTool(dir, "check base.json");
  CHECK(r.exit_code == 2); // --rules is required
}

TEST_CASE("check: bad reports exit 2 naming the report") {
  std::string dir = setUp("check-bad-report");
  writeText(dir + "/broken.json", "{\"schema_version\": 1,\n \"summary\": }");
  CommandResult r = runTool(dir, "check broken.json --rules rules.json");
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("dumpsift: error: 'broken.json': line 2, column 13: ", 0) == 0);

  Json old = baseReport();
  old["schema_version"] = 0;
  writeText(dir + "/old.json", old.dump());
  r = runTool(dir, "check old.json --rules rules.json");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dumpsift: error: 'old.json': /schema_version: this dumpsift reads report "
                 "schema versions 1 to 2, not 0\n");

  writeText(dir + "/notes.txt", "just text\n");
  r = runTool(dir, "check notes.txt --rules rules.json");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dumpsift: error: 'notes.txt': neither a report (a JSON object) nor a dump (an "
                 "ELF core or a minidump)\n");

  r = runTool(dir, "check nowhere.json --rules rules.json");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dumpsift: error: 'nowhere.json': No such file or directory\n");
}

TEST_CASE("check: analyze options on a report input are noted, not applied") {
  std::string dir = setUp("check-note");
  CommandResult r = runTool(dir, "check base.json --rules rules.json --min-size 1M");
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("dumpsift: note: 'base.json' is a report") != std::string::npos);
}

TEST_CASE("diff: exit 0 without thresholds or when none is exceeded") {
  std::string dir = setUp("diff-ok");
  CommandResult same = runTool(dir, "diff base.json same.json --max-growth 0% --max-new-bytes 0");
  CHECK(same.exit_code == 0);
  CHECK(same.out.find("dumpsift diff: no regressions\n") != std::string::npos);

  CommandResult grown = runTool(dir, "diff base.json grown.json");
  CHECK(grown.exit_code == 0); // no thresholds: a report, not a verdict
  CHECK(grown.out.find("  new       131,186 used") != std::string::npos);
  CHECK(grown.out.find("  new:  duplicates, 270,304 bytes: a duplicates finding") !=
        std::string::npos);

  CHECK(runTool(dir, "diff base.json grown.json --max-growth 200% --max-new-bytes 300K "
                     "--max-new-findings 1")
            .exit_code == 0);
}

TEST_CASE("diff: exit 1 with one REGRESSION line per exceeded threshold") {
  std::string dir = setUp("diff-regressed");
  CommandResult r = runTool(dir, "diff base.json grown.json --max-growth 50% --max-new-bytes 0 "
                                 "--max-new-findings 0");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("REGRESSION kind jpeg: bytes grew +100.0% (405,456 -> 810,912), limit "
                   "--max-growth 50%\n") != std::string::npos);
  CHECK(r.out.find("REGRESSION new groups: 1 new size group (131,186 used x2) holds 262,372 "
                   "bytes, limit --max-new-bytes 0\n") != std::string::npos);
  CHECK(r.out.find("REGRESSION new findings: 1 (duplicates), limit --max-new-findings 0\n") !=
        std::string::npos);
  CHECK(r.out.find("dumpsift diff: 6 regressions\n") != std::string::npos);

  // Options before the positionals, and both forms of --max-growth.
  r = runTool(dir, "diff --max-growth 1M --max-growth 90% base.json grown.json");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("limit --max-growth 90%") != std::string::npos);
}

TEST_CASE("diff --json") {
  std::string dir = setUp("diff-json");
  CommandResult r = runTool(dir, "diff base.json grown.json --json --max-new-bytes 0");
  CHECK(r.exit_code == 1);
  Json j = Json::parse(r.out);
  CHECK(j["before"] == "base.json");
  CHECK(j["after"] == "grown.json");
  CHECK(j["regressed"] == true);
  CHECK(j["regressions"].size() == 1);
  CHECK(j["new_findings"].size() == 1);
  r = runTool(dir, "diff base.json same.json --json");
  CHECK(r.exit_code == 0);
  CHECK(Json::parse(r.out)["regressed"] == false);
}

TEST_CASE("diff: bad input and bad thresholds exit 2") {
  std::string dir = setUp("diff-bad");
  CommandResult r = runTool(dir, "diff base.json nowhere.json");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dumpsift: error: 'nowhere.json': No such file or directory\n");
  writeText(dir + "/broken.json", "{\"schema_version\": 1");
  r = runTool(dir, "diff broken.json base.json");
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("dumpsift: error: 'broken.json': line 1, column ", 0) == 0);
  r = runTool(dir, "diff base.json grown.json --max-growth ten%");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dumpsift: error: --max-growth: 'ten%' is not a percentage (e.g. 10%)\n");
  r = runTool(dir, "diff base.json grown.json --max-growth 5% --max-growth 6%");
  CHECK(r.exit_code == 2);
  r = runTool(dir, "diff base.json grown.json --max-new-bytes lots");
  CHECK(r.exit_code == 2);
  r = runTool(dir, "diff base.json grown.json --max-new-findings -1");
  CHECK(r.exit_code == 2);
  r = runTool(dir, "diff base.json");
  CHECK(r.exit_code == 2);
}

TEST_CASE("check and diff analyze a dump input like analyze does") {
  std::string core = unpackedFixture("cores/story.core.xz");
  std::string dir = scratchDir("ci-cli-dump");
  std::string rules = sourceDir() + "/fixtures/rules/story.rules.json";
  CommandResult r = runTool(dir, "check '" + core + "' --rules '" + rules + "' -v");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("PASS jpeg-bytes [kind jpeg]") != std::string::npos);

  // The same dump analyzed into a report, and the dump itself: no difference.
  REQUIRE(runTool(dir, "analyze '" + core + "' --report story.json -q").exit_code == 0);
  r = runTool(dir, "diff story.json '" + core +
                       "' --max-growth 0% --max-new-bytes 0 "
                       "--max-new-findings 0");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("warning:") == std::string::npos);

  // Other analyze options make other groups; diff says so.
  r = runTool(dir, "diff story.json '" + core + "' --min-size 128K");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("warning: the reports were made with different options: min_size (65536 vs "
                   "131072)") != std::string::npos);
}
