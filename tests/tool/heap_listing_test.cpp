// `dumpsift heap`'s text rows (formatted in memory, in pieces of 8,192 rows) against its JSON
// listing and the fixture programs' manifests: every allocation, every column at its place. Both,
// and analyze's report, are the same bytes whatever --threads says.
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <sstream>

using namespace dumpsift::test;

TEST_CASE("heap's text rows list what its JSON lists, in fixed columns, planted buffers included") {
  const std::string name = GENERATE(as<std::string>(), "story", "glibc_truth");
  INFO(name);
  const std::string core = unpackedFixture("cores/" + name + ".core.xz");
  const CommandResult text = runCommand("'" + toolPath() + "' heap --min-size 0 '" + core + "'");
  const CommandResult json =
      runCommand("'" + toolPath() + "' heap --json --min-size 0 '" + core + "'");
  INFO(text.err << json.err);
  REQUIRE(text.exit_code == 0);
  REQUIRE(json.exit_code == 0);
  const nlohmann::json listing = nlohmann::json::parse(json.out);
  const nlohmann::json &allocations = listing["allocations"];
  REQUIRE(allocations.size() >= 20);

  // The rows follow the column heads: address (18 wide), size (12, right-justified), state (7),
  // mmapped (7), arena (18, "-" for none), walker.
  std::istringstream lines(text.out);
  std::string line;
  while (std::getline(lines, line) && line.rfind("address ", 0) != 0) {
  }
  REQUIRE(line.find(" walker") == 18 + 1 + 12 + 1 + 7 + 1 + 7 + 1 + 18);
  std::map<std::string, uint64_t> size_at;
  size_t row = 0;
  for (; std::getline(lines, line); ++row) {
    INFO(line);
    REQUIRE(row < allocations.size());
    const nlohmann::json &a = allocations[row];
    const std::string arena = a["arena"] == "0x0" ? "-" : a["arena"].get<std::string>();
    auto field = [&](size_t at, size_t width) {
      std::string f = line.substr(at, width);
      return f.erase(f.find_last_not_of(' ') + 1).erase(0, f.find_first_not_of(' '));
    };
    CHECK(field(0, 18) == a["address"]);
    CHECK(field(19, 12) == std::to_string(a["size"].get<uint64_t>()));
    CHECK(line[30] != ' '); // right-justified
    CHECK(field(32, 7) == a["state"]);
    CHECK(field(40, 7) == (a["mmapped"].get<bool>() ? "yes" : "no"));
    CHECK(field(48, 18) == arena);
    CHECK(line.substr(67) == a["walker"]);
    size_at[a["address"].get<std::string>()] = a["size"].get<uint64_t>();
  }
  CHECK(row == allocations.size());

  std::ifstream manifest(sourceDir() + "/fixtures/cores/" + name + ".manifest.jsonl");
  size_t planted = 0;
  for (std::string m; std::getline(manifest, m);) {
    if (m.empty())
      continue;
    const nlohmann::json want = nlohmann::json::parse(m);
    INFO(m);
    if (want.value("state", "used") != "used")
      continue;
    auto it = size_at.find(want["address"].get<std::string>());
    REQUIRE(it != size_at.end());
    CHECK(it->second == want["usable_size"].get<uint64_t>());
    ++planted;
  }
  CHECK(planted > 20);
}

namespace {

/// `dumpsift ARGS` run with `--threads N` added; REQUIREs success and returns its output.
std::string outputOn(const std::string &args, unsigned threads) {
  const CommandResult r =
      runCommand("'" + toolPath() + "' " + args + " --quiet --threads " + std::to_string(threads));
  INFO(args << " --threads " << threads << ": " << r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

/// `heap` (text and JSON) and `analyze`'s JSON report of `core` with --threads 1 and 4, byte for
/// byte. `dir` is where the reports go.
void checkSameBytesOnFourThreads(const std::string &core, const std::string &dir) {
  for (const char *heap : {"heap --min-size 0 '", "heap --json --min-size 0 '"}) {
    const std::string one = outputOn(heap + core + "'", 1);
    CHECK(one.size() > 2000);
    CHECK(one == outputOn(heap + core + "'", 4));
  }
  std::string reports[2];
  for (unsigned i : {0u, 1u}) {
    const std::string report = dir + "/report-" + std::to_string(i) + ".json";
    outputOn("analyze '" + core + "' --min-size 0 --report '" + report + "'", i ? 4 : 1);
    const std::vector<uint8_t> bytes = readFileBytes(report);
    reports[i].assign(bytes.begin(), bytes.end());
  }
  CHECK(reports[0].size() > 10000);
  CHECK(reports[0] == reports[1]);
}

} // namespace

TEST_CASE("heap and analyze write the same bytes with --threads 1 and 4: committed cores") {
  const std::string name = GENERATE(as<std::string>(), "glibc_truth", "story");
  INFO(name);
  checkSameBytesOnFourThreads(unpackedFixture("cores/" + name + ".core.xz"),
                              scratchDir("threads_same_bytes_" + name));
}

TEST_CASE("heap and analyze write the same bytes with --threads 1 and 4: a live glibc_truth "
          "process (a main heap, three thread heaps, mmapped chunks)",
          "[live]") {
  if (!gcoreOrSkipped())
    return;
  LiveProcess proc(fixtureProgram("glibc_truth"));
  const std::string dir = scratchDir("threads_same_bytes_live");
  proc.gcore(dir + "/core");
  checkSameBytesOnFourThreads(dir + "/core", dir);
}
