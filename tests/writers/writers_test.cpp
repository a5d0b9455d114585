// Every writer over one input: the text summary, the JSON report, the HTML page (written by
// `analyze --html` and again by `html`), `info` and the `heap` listing (text and JSON), the
// extraction manifest, and the output of `diff` and `check` (a unit test); and the page loaded
// in headless Chromium with its warnings listed (a [browser] test). tests/CMakeLists.txt runs
// both test cases once per input, named by the environment variable DUMPSIFT_WRITERS_INPUT:
// every file in ../shared/dumps (a dump added there is covered without code), the fixtures'
// story core whole and cut in half, and the small hostile dumps of bench/hostile_dumps.py. Under
// CI's ASan+UBSan build every command runs instrumented.
#include "html/browser.h"
#include "support/test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

using namespace dumpsift::test;
namespace fs = std::filesystem;

namespace {

/// The dump an input names, made in `dir` where it is made: `shared:FILE` (../shared/dumps/FILE),
/// `story`, `story-cut` (its first half), `hostile:NAME` (bench/hostile_dumps.py --small).
std::string inputPath(const std::string &input, const std::string &dir) {
  const size_t colon = input.find(':');
  const std::string family = input.substr(0, colon);
  const std::string name = colon == std::string::npos ? "" : input.substr(colon + 1);
  if (family == "shared")
    return sharedDumpsDir() + "/" + name;
  if (family == "story")
    return unpackedFixture("cores/story.core.xz");
  if (family == "story-cut") {
    const std::vector<uint8_t> whole = readFileBytes(unpackedFixture("cores/story.core.xz"));
    const std::string half = dir + "/story-half.core";
    writeFileBytes(half, std::vector<uint8_t>(whole.begin(), whole.begin() + whole.size() / 2));
    return half;
  }
  if (family == "hostile") {
    const CommandResult made = runCommand("python3 '" + sourceDir() +
                                          "/bench/hostile_dumps.py' --small '" + dir + "' " + name);
    INFO(made.err);
    REQUIRE(made.exit_code == 0);
    return dir + "/" + name;
  }
  FAIL("unknown input '" << input << "'");
  return {};
}

/// `dumpsift ARGS` in `dir`; REQUIREs the exit code to be one of `allowed` and nothing on stderr
/// but what the command may say there (progress is off: stderr is not a terminal).
CommandResult mustRun(const std::string &dir, const std::string &args,
                      std::initializer_list<int> allowed = {0}) {
  CommandResult r = runTool(dir, args);
  INFO("dumpsift " << args << "\nexit code " << r.exit_code << ", stderr: " << r.err);
  const bool allowed_exit = std::find(allowed.begin(), allowed.end(), r.exit_code) != allowed.end();
  REQUIRE(allowed_exit);
  return r;
}

/// The text of the page's warning items: "where: message" of the report's first 100 warnings.
std::vector<std::string> expectedWarnings(const nlohmann::json &report) {
  std::vector<std::string> out;
  for (const auto &d : report["diagnostics"]) {
    if (out.size() == 100)
      break;
    out.push_back(d["where"].get<std::string>() + ": " + d["message"].get<std::string>());
  }
  return out;
}

/// The input DUMPSIFT_WRITERS_INPUT names: its dump, made in a fresh scratch directory `dir`
/// ("writers_<input>" and `suffix`), where the test's files go.
struct Input {
  std::string name;
  std::string dir;
  std::string dump;
};
Input namedInput(const std::string &suffix) {
  const char *named = std::getenv("DUMPSIFT_WRITERS_INPUT");
  REQUIRE(named != nullptr);
  Input input{named, "", ""};
  std::string scratch = input.name;
  std::replace_if(
      scratch.begin(), scratch.end(), [](char c) { return !std::isalnum((unsigned char)c); }, '_');
  input.dir = scratchDir("writers_" + scratch + suffix);
  input.dump = inputPath(input.name, input.dir);
  return input;
}

} // namespace

TEST_CASE("writers: every writer renders the input named by DUMPSIFT_WRITERS_INPUT") {
  const Input input = namedInput("");
  INFO("input " << input.name);
  const std::string &dir = input.dir;
  const std::string quoted = "'" + input.dump + "'";

  // The text summary, the JSON report and the HTML page, in one run.
  const CommandResult summary =
      mustRun(dir, "analyze " + quoted + " --report report.json --html page.html");
  CHECK(summary.out.find("HTML report: page.html") != std::string::npos);
  const std::string report_text = readText(dir + "/report.json");
  const nlohmann::json report = nlohmann::json::parse(report_text);
  CHECK(report["dump"]["format"].is_string());
  const CommandResult valid =
      runCommand("python3 '" + sourceDir() + "/scripts/validate_report.py' '" + sourceDir() +
                 "/docs/report.schema.json' '" + dir + "/report.json'");
  INFO(valid.out << valid.err);
  CHECK(valid.exit_code == 0);

  // --json prints the report the file holds; `html` writes the page analyze wrote.
  CHECK(mustRun(dir, "analyze -q --json " + quoted).out == report_text);
  mustRun(dir, "html report.json " + quoted + " -o again.html -q");
  const std::string page = readText(dir + "/page.html");
  CHECK(readText(dir + "/again.html") == page);

  // The page has a warnings list exactly when the report has warnings (in Chromium: below).
  CHECK((page.find("<h2>Warnings</h2>") != std::string::npos) == !expectedWarnings(report).empty());

  // The extraction manifest: one JSON object a line, one per file written, with its digest.
  mustRun(dir, "analyze -q " + quoted + " --extract extracted");
  for (const nlohmann::json &line : readJsonLines(dir + "/extracted/manifest.jsonl")) {
    const std::string file = dir + "/extracted/" + line["path"].get<std::string>();
    INFO(file);
    REQUIRE(fs::exists(file));
    CHECK(sha256sum(file) == line["sha256"]);
  }

  // info and the heap listing, text and JSON.
  CHECK_FALSE(mustRun(dir, "info " + quoted).out.empty());
  CHECK(nlohmann::json::parse(mustRun(dir, "info --json " + quoted).out).contains("regions"));
  mustRun(dir, "heap " + quoted);
  CHECK(nlohmann::json::parse(mustRun(dir, "heap --json " + quoted).out).is_object());

  // diff and check, text and JSON: a report against itself has no regression but a truncated
  // dump's; the story rules pass or fail, never error.
  const bool truncated = report["dump"].contains("truncated");
  const int same = truncated ? 1 : 0;
  CHECK(mustRun(dir, "diff report.json report.json", {same}).out.find("dumpsift diff") !=
        std::string::npos);
  CHECK(nlohmann::json::parse(mustRun(dir, "diff --json report.json report.json", {same}).out)
            .is_object());
  mustRun(dir, "diff --allow-truncated report.json report.json");
  const std::string rules = "'" + sourceDir() + "/fixtures/rules/story.rules.json'";
  CHECK_FALSE(mustRun(dir, "check report.json --rules " + rules, {0, 1}).out.empty());
  CHECK(nlohmann::json::parse(mustRun(dir, "check report.json --json --rules " + rules, {0, 1}).out)
            .contains("passed"));
}

TEST_CASE("writers: the page of the input named by DUMPSIFT_WRITERS_INPUT loads in Chromium",
          "[browser]") {
  if (!chromiumOrSkipped())
    return;
  const Input input = namedInput("_chromium");
  INFO("input " << input.name);
  const std::string &dir = input.dir;
  mustRun(dir, "analyze '" + input.dump + "' --report report.json --html page.html -q");
  const nlohmann::json report = nlohmann::json::parse(readText(dir + "/report.json"));

  // No script error, and the page lists the report's first 100 warnings.
  const nlohmann::json browser = loadInBrowser(dir, dir + "/page.html", dir + "/page.png");
  INFO(browser.dump(2));
  CHECK(browser["console_errors"].empty());
  CHECK(browser["facts"]["warnings"].get<std::vector<std::string>>() == expectedWarnings(report));
}
