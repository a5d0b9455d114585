// The command line as users and CI see it: exit codes, one-line errors, info on real dumps.
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

using namespace dumpsift::test;
namespace fs = std::filesystem;

namespace {

CommandResult runDumpsift(const std::string &args) {
  return runCommand("'" + toolPath() + "' " + args);
}

// Checks the one-line error contract: "dumpsift: error: 'PATH': WHY\n", exit code 2.
void checkOneLineError(const CommandResult &r, const std::string &path) {
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("dumpsift: error: '" + path + "': ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

} // namespace

TEST_CASE("info --json on every shared dump: valid JSON whose class totals add up") {
  for (const auto &entry : fs::directory_iterator(sharedDumpsDir())) {
    std::string path = entry.path().string();
    if (entry.path().filename() == "README.md")
      continue;
    INFO(path);
    CommandResult r = runDumpsift("info --json '" + path + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    nlohmann::json info = nlohmann::json::parse(r.out);
    uint64_t sum = 0, regions = 0;
    for (const auto &[cls, totals] : info["totals"]["by_class"].items())
      sum += totals["captured_bytes"].get<uint64_t>();
    for (const auto &region : info["regions"])
      regions += region["captured_bytes"].get<uint64_t>();
    CHECK(sum == info["totals"]["captured_bytes"].get<uint64_t>());
    CHECK(regions == sum);
    CHECK(info["dump"]["captured_bytes"] == info["totals"]["captured_bytes"]);
    for (const auto &region : info["regions"]) {
      std::string start = region["start"];
      CHECK(start.rfind("0x", 0) == 0);
    }
  }
}

TEST_CASE("info text on the story core names the process and the heap") {
  std::string core = unpackedFixture("cores/story.core.xz");
  CommandResult r = runDumpsift("info '" + core + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("process: story") != std::string::npos);
  CHECK(r.out.find(" heap ") != std::string::npos);
  CHECK(r.out.find("captured bytes by class:") != std::string::npos);
}

TEST_CASE("bad input: one-line errors naming the file and the cause, exit code 2") {
  std::string dir = scratchDir("cli-bad-input");
  SECTION("missing file") {
    checkOneLineError(runDumpsift("info '" + dir + "/nope.core'"), dir + "/nope.core");
  }
  SECTION("empty file") {
    writeFileBytes(dir + "/empty", {});
    CommandResult r = runDumpsift("info '" + dir + "/empty'");
    checkOneLineError(r, dir + "/empty");
    CHECK(r.err.find("empty file") != std::string::npos);
  }
  SECTION("not a dump") {
    writeFileBytes(dir + "/text", {'h', 'e', 'l', 'l', 'o', '\n'});
    CommandResult r = runDumpsift("analyze '" + dir + "/text'");
    checkOneLineError(r, dir + "/text");
    CHECK(r.err.find("not a core dump or minidump") != std::string::npos);
  }
  SECTION("an ELF executable is not a core") {
    CommandResult r = runDumpsift("info '" + toolPath() + "'");
    checkOneLineError(r, toolPath());
    CHECK(r.err.find("not a core dump") != std::string::npos);
  }
}

TEST_CASE("usage errors exit with code 2, --help with 0") {
  CHECK(runDumpsift("").exit_code == 2);
  CHECK(runDumpsift("info").exit_code == 2);
  CHECK(runDumpsift("frobnicate x").exit_code == 2);
  CHECK(runDumpsift("--help").exit_code == 0);
  CommandResult bad_size = runDumpsift("analyze x --min-size 12Q");
  CHECK(bad_size.exit_code == 2);
  CHECK(bad_size.err.find("--min-size") != std::string::npos);
  CommandResult bad_kind =
      runDumpsift("analyze '" + unpackedFixture("cores/story.core.xz") + "' --kind jpg");
  CHECK(bad_kind.exit_code == 2);
  CHECK(bad_kind.err.find("unknown kind 'jpg'") != std::string::npos);
}

TEST_CASE("progress goes to stderr on a terminal only, and --quiet silences it") {
  if (!availableOrSkipped(runCommand("script -qec true /dev/null > /dev/null 2>&1").exit_code == 0,
                          "script(1) cannot give the tool a terminal here (no script, or no ptys)"))
    return;
  std::string core = unpackedFixture("cores/story.core.xz");
  // script(1) runs the command on a pseudo-terminal and copies what it draws to our stdout;
  // the tool's stdout goes to /dev/null, so only stderr is seen.
  auto onTerminal = [&](const std::string &args) {
    CommandResult r = runCommand("script -qec \"'" + toolPath() + "' " + args + " '" + core +
                                 "' > /dev/null\" /dev/null");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
  };
  for (const char *command : {"heap", "analyze"}) {
    INFO(command);
    const std::string drawn = onTerminal(command);
    CHECK(drawn.find("dumpsift: walking glibc heaps") != std::string::npos);
    CHECK(drawn.find("\r\033[K") != std::string::npos); // the line is cleared when done
    CHECK(onTerminal(std::string(command) + " --quiet").empty());
    // Not a terminal: nothing on stderr.
    CommandResult piped = runDumpsift(std::string(command) + " '" + core + "' > /dev/null");
    CHECK(piped.exit_code == 0);
    CHECK(piped.err.empty());
  }
}

TEST_CASE("heap --json on the story core lists every planted buffer at its address and size") {
  std::string core = unpackedFixture("cores/story.core.xz");
  CommandResult r = runDumpsift("heap --json --min-size 4096 '" + core + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json heap = nlohmann::json::parse(r.out);
  REQUIRE(heap["heaps"].size() == 1);
  CHECK(heap["heaps"][0]["walker"] == "glibc");
  for (const auto &area : heap["heaps"][0]["areas"]) // mmapped chunks belong to no arena
    CHECK((area["kind"] == "mmapped") != area.contains("arena"));
  std::map<std::string, nlohmann::json> by_address;
  for (const auto &a : heap["allocations"])
    by_address[a["address"].get<std::string>()] = a;

  std::ifstream manifest(sourceDir() + "/fixtures/cores/story.manifest.jsonl");
  size_t planted = 0;
  for (std::string line; std::getline(manifest, line);) {
    if (line.empty())
      continue;
    nlohmann::json m = nlohmann::json::parse(line);
    INFO(line);
    auto it = by_address.find(m["address"].get<std::string>());
    REQUIRE(it != by_address.end());
    CHECK(it->second["size"] == m["usable_size"]);
    CHECK(it->second["state"] == "used");
    CHECK(it->second["walker"] == "glibc");
    ++planted;
  }
  CHECK(planted > 20);
}

TEST_CASE("analyze --label: the report records the labels, and a malformed or repeated one is "
          "a one-line usage error") {
  const std::string core = unpackedFixture("cores/story.core.xz");
  CommandResult r = runDumpsift("analyze '" + core +
                                "' --json --label version=1.2 --label "
                                "'service=shop front' --label host=");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["labels"] ==
        nlohmann::json({{"host", ""}, {"service", "shop front"}, {"version", "1.2"}}));
  for (const auto &[args, error] : std::map<std::string, std::string>{
           {"--label service", "--label: label 'service' is not KEY=VALUE"},
           {"--label =api",
            "--label: label key '' is not 1 to 64 characters among A-Z a-z 0-9 _ . -"},
           {"--label v=1 --label v=2", "--label: 'v' is given twice"}}) {
    CommandResult bad = runDumpsift("analyze '" + core + "' --json " + args);
    INFO(args);
    CHECK(bad.exit_code == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err == "dumpsift: error: " + error + "\n");
  }
}
