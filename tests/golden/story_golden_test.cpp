// The golden report of the story fixture: `analyze` writes fixtures/golden/story.report.json byte
// for byte, the file validates against the schema, passes fixtures/rules/story.rules.json, and a
// deliberately regressed copy fails the rules and the diff. DUMPSIFT_UPDATE_GOLDEN=1 refreshes the
// golden file instead of comparing (docs/testing.md).
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace dumpsift::test;
using Json = nlohmann::ordered_json;

namespace {

std::string goldenPath() {
  return sourceDir() + "/fixtures/golden/story.report.json";
}
std::string rulesPath() {
  return sourceDir() + "/fixtures/rules/story.rules.json";
}

/// True when DUMPSIFT_UPDATE_GOLDEN is set to anything but "" or "0".
bool updatingGoldens() {
  const char *v = std::getenv("DUMPSIFT_UPDATE_GOLDEN");
  return v && *v && std::string(v) != "0";
}

/// Analyzes the story core with the default options into `out`. The tool runs from the core's
/// directory and gets the relative name "story.core", so the report's dump.path is the same on
/// every machine.
void analyzeStory(const std::string &out) {
  std::string core = unpackedFixture("cores/story.core.xz");
  std::string dir = fs::path(core).parent_path().string();
  REQUIRE(fs::path(core).filename() == "story.core");
  CommandResult r =
      runTool(dir, "analyze story.core --quiet --no-module-files --report '" + out + "'");
  REQUIRE(r.exit_code == 0);
}

/// "line N:\n  golden: ...\n  actual: ..." for the first line where the texts differ.
std::string firstDifference(const std::string &golden, const std::string &actual) {
  size_t line = 1, a = 0, b = 0;
  while (a < golden.size() || b < actual.size()) {
    size_t ea = std::min(golden.find('\n', a), golden.size());
    size_t eb = std::min(actual.find('\n', b), actual.size());
    std::string la = golden.substr(a, ea - a), lb = actual.substr(b, eb - b);
    if (la != lb || (ea == golden.size()) != (eb == actual.size()))
      return "line " + std::to_string(line) + ":\n  golden: " + la + "\n  actual: " + lb;
    a = ea + 1;
    b = eb + 1;
    ++line;
  }
  return "(no line differs)";
}

} // namespace

TEST_CASE("analyze writes the golden report of the story core, byte for byte") {
  std::string dir = scratchDir("golden-story");
  std::string out = dir + "/story.report.json";
  analyzeStory(out);
  std::string actual = readText(out);

  if (updatingGoldens()) {
    fs::create_directories(fs::path(goldenPath()).parent_path());
    writeFileBytes(goldenPath(), std::vector<uint8_t>(actual.begin(), actual.end()));
    WARN("DUMPSIFT_UPDATE_GOLDEN: wrote " << goldenPath() << "; review it with git diff");
    return;
  }
  INFO("no golden file: DUMPSIFT_UPDATE_GOLDEN=1 build/tests/dumpsift_golden_tests writes it");
  REQUIRE(fs::exists(goldenPath()));
  std::string golden = readText(goldenPath());
  INFO("the report differs from " << goldenPath() << " at " << firstDifference(golden, actual)
                                  << "\nIf the change is intended: DUMPSIFT_UPDATE_GOLDEN=1 "
                                     "build/tests/dumpsift_golden_tests, then git diff "
                                     "fixtures/golden/ (docs/testing.md)");
  CHECK(actual == golden);
}

TEST_CASE("the golden report validates against docs/report.schema.json") {
  CommandResult r =
      runCommand("/usr/bin/python3 '" + sourceDir() + "/scripts/validate_report.py' '" +
                 sourceDir() + "/docs/report.schema.json' '" + goldenPath() + "'");
  INFO("validate_report.py (needs python3-jsonschema: scripts/setup.sh --tests):\n"
       << r.out << r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("the golden report names the dump by a relative path and holds the story") {
  Json golden = Json::parse(readText(goldenPath()));
  CHECK(golden["dump"]["path"] == "story.core");
  CHECK(golden["schema_version"] == 2);
  // The story's planted content (fixtures/cores/story.manifest.jsonl), whatever else is found.
  const Json &by_kind = golden["summary"]["by_kind"];
  CHECK(by_kind.contains("jpeg"));
  CHECK(by_kind.contains("aws-chunked"));
  CHECK(by_kind.contains("zero"));
  bool frames = false;
  for (const Json &g : golden["groups"])
    frames = frames || (g["size"] == 135152 && g["state"] == "used");
  CHECK(frames);
}

TEST_CASE("the story fixture passes fixtures/rules/story.rules.json, as a report and as a dump") {
  std::string dir = scratchDir("golden-rules");
  CommandResult r = runTool(dir, "check '" + goldenPath() + "' --rules '" + rulesPath() + "' -v");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("FAIL") == std::string::npos);

  r = runTool(dir, "check '" + unpackedFixture("cores/story.core.xz") + "' --rules '" +
                       rulesPath() + "'");
  CHECK(r.exit_code == 0);
}

TEST_CASE("a regressed story (a new 131,186-byte group, twice the JPEG bytes) fails the rules "
          "and the diff") {
  std::string dir = scratchDir("golden-regressed");
  Json report = Json::parse(readText(goldenPath()));
  // Twice the JPEG buffers, in the groups that hold them and in the per-kind summary...
  Json &jpeg = report["summary"]["by_kind"]["jpeg"];
  uint64_t jpeg_count = jpeg["count"].get<uint64_t>(), jpeg_bytes = jpeg["bytes"].get<uint64_t>();
  jpeg["count"] = 2 * jpeg_count;
  jpeg["bytes"] = 2 * jpeg_bytes;
  for (Json &g : report["groups"]) {
    if (!g["kinds"].contains("jpeg"))
      continue;
    uint64_t n = g["kinds"]["jpeg"].get<uint64_t>(), size = g["size"].get<uint64_t>();
    g["kinds"]["jpeg"] = 2 * n;
    g["count"] = g["count"].get<uint64_t>() + n;
    g["total_bytes"] = g["total_bytes"].get<uint64_t>() + n * size;
  }
  // ...and two aws-chunked frames in a size group the story never had.
  report["groups"].push_back(
      Json{{"size", 131186},
           {"state", "used"},
           {"allocator", "glibc"},
           {"count", 2},
           {"total_bytes", 2 * 131186},
           {"kinds", Json{{"aws-chunked", 2}}},
           {"addresses", Json::array({"0x7f0000001000", "0x7f0000030000"})}});
  Json &chunked = report["summary"]["by_kind"]["aws-chunked"];
  chunked["count"] = chunked["count"].get<uint64_t>() + 2;
  chunked["bytes"] = chunked["bytes"].get<uint64_t>() + 2 * 131186;
  Json &summary = report["summary"];
  summary["buffers"] = summary["buffers"].get<uint64_t>() + jpeg_count + 2;
  summary["buffer_bytes"] = summary["buffer_bytes"].get<uint64_t>() + jpeg_bytes + 2 * 131186;
  summary["groups"] = report["groups"].size();
  std::string regressed = dir + "/regressed.report.json";
  std::ofstream(regressed) << report.dump(2) << "\n";

  CommandResult r = runTool(dir, "check regressed.report.json --rules '" + rulesPath() + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("FAIL jpeg-bytes [kind jpeg]: bytes ") != std::string::npos);
  CHECK(r.out.find("FAIL no-131186-byte-group [size 131,186]: found 2 buffers, 262,372 bytes") !=
        std::string::npos);

  r = runTool(dir, "check regressed.report.json --rules '" + rulesPath() + "' --format github");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("::error file=") != std::string::npos);

  r = runTool(dir, "diff '" + goldenPath() +
                       "' regressed.report.json --max-growth 50% "
                       "--max-new-bytes 0");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("REGRESSION kind jpeg: bytes grew +100.0%") != std::string::npos);
  CHECK(r.out.find("REGRESSION new groups: 1 new size group (131,186 used x2) holds 262,372 "
                   "bytes") != std::string::npos);

  // The golden against itself and against the core it came from: nothing to report.
  r = runTool(dir, "diff '" + goldenPath() + "' '" + goldenPath() +
                       "' --max-growth 0% --max-new-bytes 0 --max-new-findings 0");
  CHECK(r.exit_code == 0);
  r = runTool(dir, "diff '" + goldenPath() + "' '" + unpackedFixture("cores/story.core.xz") +
                       "' --max-growth 0% --max-new-bytes 0 --max-new-findings 0");
  CHECK(r.exit_code == 0);
}
