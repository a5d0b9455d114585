// `dumpsift heap`'s text rows (formatted in memory, a block at a time) against its JSON listing
// and the fixture programs' manifests: every allocation, every column at its place. The JSON of
// glibc_truth's 764 allocations spans two 64 KiB blocks.
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
