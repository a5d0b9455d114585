// What a newcomer meets first (issue 22): a truncated dump is visible to analyze, check and diff;
// typos in names are errors; every error has one format; extracted text parses.
#include "support/test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace dumpsift::test;

namespace {

CommandResult runDumpsift(const std::string &args) {
  return runCommand("'" + toolPath() + "' " + args);
}

void writeText(const std::string &path, const std::string &text) {
  writeFileBytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

// "0x7efc6083c010".
std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// "5,236,984".
std::string grouped(uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

// What cutting the ELF core `bytes` to `cut` bytes loses, read from its program headers with
// <elf.h> (independent of dumpsift's reader).
struct ExpectedCut {
  uint64_t expected_size = 0;
  uint64_t first_missing = UINT64_MAX;
  uint64_t missing_bytes = 0;
};
ExpectedCut expectedCut(const std::vector<uint8_t> &bytes, uint64_t cut) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  ExpectedCut e;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_LOAD || ph.p_filesz == 0 || ph.p_offset + ph.p_filesz <= cut)
      continue;
    const uint64_t captured = ph.p_offset < cut ? cut - ph.p_offset : 0;
    e.expected_size = std::max<uint64_t>(e.expected_size, ph.p_offset + ph.p_filesz);
    e.first_missing = std::min<uint64_t>(e.first_missing, ph.p_vaddr + captured);
    e.missing_bytes += ph.p_filesz - captured;
  }
  return e;
}

} // namespace

TEST_CASE("a core cut in half: analyze says where, check and diff fail unless told to accept it") {
  const std::string core = unpackedFixture("cores/story.core.xz");
  const std::vector<uint8_t> whole = readFileBytes(core);
  const uint64_t cut = whole.size() / 2;
  const ExpectedCut expected = expectedCut(whole, cut);
  REQUIRE(expected.missing_bytes > 0);
  const std::string dir = scratchDir("newcomer-truncated");
  const std::string half = dir + "/half.core";
  writeFileBytes(half, std::vector<uint8_t>(whole.begin(), whole.begin() + cut));
  const std::string where =
      "the file ends at byte " + grouped(cut) + " of " + grouped(expected.expected_size) + "; ";
  const std::string rules = sourceDir() + "/fixtures/rules/story.rules.json";

  SECTION("analyze: a TRUNCATED line under the dump's, naming the first missing address") {
    CommandResult r = runDumpsift("analyze '" + half + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("\nTRUNCATED: " + where) != std::string::npos);
    CHECK(r.out.find(" of memory from " + hex(expected.first_missing) + " on is missing") !=
          std::string::npos);
  }
  SECTION("the report: dump.truncated holds the same figures") {
    CommandResult r = runDumpsift("analyze -q --json '" + half + "'");
    REQUIRE(r.exit_code == 0);
    nlohmann::json t = nlohmann::json::parse(r.out)["dump"]["truncated"];
    CHECK(t["file_size"] == cut);
    CHECK(t["expected_size"] == expected.expected_size);
    CHECK(t["first_missing_address"] == hex(expected.first_missing));
    CHECK(t["missing_bytes"] == expected.missing_bytes);
    CommandResult full = runDumpsift("analyze -q --json '" + core + "'");
    CHECK_FALSE(nlohmann::json::parse(full.out)["dump"].contains("truncated"));
  }
  SECTION("check with the story rules: dump-complete and no-warnings fail") {
    CommandResult r = runDumpsift("check '" + half + "' --rules '" + rules + "'");
    INFO(r.out);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("FAIL dump-complete [dump truncated]: the dump is truncated: " +
                     grouped(expected.missing_bytes) + " (") != std::string::npos);
    CHECK(r.out.find("FAIL no-warnings [warnings]: count ") != std::string::npos);
    CHECK(runDumpsift("check '" + core + "' --rules '" + rules + "'").exit_code == 0);
  }
  SECTION("check with rules that say nothing of truncation: the built-in dump-complete fails") {
    writeText(dir + "/any.rules.json", R"({"version": 1, "rules": [{"name": "all",
                "all_buffers": true, "max_bytes": "1G"}]})");
    CommandResult r = runDumpsift("check '" + half + "' --rules '" + dir + "/any.rules.json'");
    INFO(r.out);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("FAIL dump-complete [dump truncated]: the dump is truncated: " + where) !=
          std::string::npos);
    CHECK(r.out.find("of memory from " + hex(expected.first_missing) + " on is missing") !=
          std::string::npos);
    writeText(dir + "/allow.rules.json", R"({"version": 1, "allow_truncated_dump": true,
                "rules": [{"name": "all", "all_buffers": true, "max_bytes": "1G"}]})");
    CHECK(runDumpsift("check '" + half + "' --rules '" + dir + "/allow.rules.json'").exit_code ==
          0);
  }
  SECTION("diff: a truncated side is a regression, without thresholds too") {
    CommandResult r = runDumpsift("diff '" + core + "' '" + half + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("REGRESSION new dump truncated: " + where) != std::string::npos);
    CHECK(runDumpsift("diff '" + core + "' '" + half + "' --allow-truncated").exit_code == 0);
  }
}

TEST_CASE("walker names: an unknown one is an error listing the known ones, on every command") {
  const std::string core = unpackedFixture("cores/story.core.xz");
  for (const std::string &command :
       {"analyze '" + core + "'", "heap '" + core + "'", "diff '" + core + "' '" + core + "'",
        "check '" + core + "' --rules x.json"})
    for (const char *name : {"foo", "GLIBC"}) {
      CommandResult r = runDumpsift(command + " --walker " + name);
      INFO(command << " --walker " << name << ": " << r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.err.rfind("dumpsift: error: --walker: unknown walker '" + std::string(name) +
                            "' (known: glibc, ",
                        0) == 0);
      CHECK(r.err.find("jemalloc") != std::string::npos);
    }
  CommandResult ok = runDumpsift("heap '" + core + "' --walker glibc --min-size 1M");
  CHECK(ok.exit_code == 0);
}

TEST_CASE("usage errors: one line, 'dumpsift: error: 'COMMAND': WHY', exit code 2") {
  struct Case {
    std::string args, command, why;
  };
  for (const Case &c : std::vector<Case>{
           {"", "dumpsift", "subcommand"},
           {"analyze", "dumpsift analyze", "dump is required"},
           {"analyze x --frobnicate", "dumpsift analyze", "--frobnicate"},
           {"frobnicate x", "dumpsift", "unknown command 'frobnicate' (known: info, heap, "},
       }) {
    CommandResult r = runDumpsift(c.args);
    INFO(c.args << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("dumpsift: error: '" + c.command + "': ", 0) == 0);
    CHECK(r.err.find(c.why) != std::string::npos);
    CHECK(r.err.find("(see '" + c.command + " --help')\n") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("extract on the story core: the messages name the dump and say what is true") {
  const std::string core = unpackedFixture("cores/story.core.xz");
  const std::vector<nlohmann::json> planted =
      readJsonLines(sourceDir() + "/fixtures/cores/story.manifest.jsonl");
  const std::string dir = scratchDir("newcomer-extract");
  auto plantedNamed = [&](const std::string &name) {
    auto it = std::find_if(planted.begin(), planted.end(),
                           [&](const nlohmann::json &p) { return p["name"] == name; });
    REQUIRE(it != planted.end());
    return *it;
  };

  SECTION("an address no allocation holds: the error names the dump") {
    CommandResult r = runDumpsift("extract '" + core + "' --address 0x10");
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("dumpsift: error: '" + core + "': ", 0) == 0);
  }
  SECTION("--body on an aws-chunked buffer: only amqp has bodies, --payload decodes it") {
    const std::string address = plantedNamed("aws-chunk")["address"];
    CommandResult r = runDumpsift("extract '" + core + "' --address " + address + " --body 1 " +
                                  "--out '" + dir + "/body.bin'");
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("holds aws-chunked; only amqp buffers have message bodies (--payload "
                     "decodes aws-chunked)") != std::string::npos);
    CHECK(r.err.find("no payload to decode") == std::string::npos);
  }
  SECTION("the JSON buffer, extracted: the file is the JSON text the program wrote, and parses") {
    const nlohmann::json json = plantedNamed("json");
    const std::string out = dir + "/story.json";
    CommandResult r = runDumpsift("extract '" + core + "' --address " +
                                  json["address"].get<std::string>() + " --out '" + out + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const std::vector<uint8_t> bytes = readFileBytes(out);
    CHECK(bytes.size() == json["requested"].get<uint64_t>());
    CHECK(std::find(bytes.begin(), bytes.end(), uint8_t(0)) == bytes.end());
    CHECK_NOTHROW(nlohmann::json::parse(bytes.begin(), bytes.end()));
  }
}

TEST_CASE("analyze on the story core: where the report went, --top 0, example addresses") {
  const std::string core = unpackedFixture("cores/story.core.xz");
  const std::string dir = scratchDir("newcomer-analyze");
  const std::string report = dir + "/r.json";

  CommandResult wrote = runDumpsift("analyze '" + core + "' --report '" + report + "'");
  INFO(wrote.err);
  REQUIRE(wrote.exit_code == 0);
  CHECK(wrote.err == "dumpsift: wrote the report to " + report + "\n");
  // --quiet: nothing on stdout or stderr, the files asked for written all the same; with --json
  // the report, and nothing else.
  CommandResult quiet =
      runDumpsift("analyze -q '" + core + "' --report '" + dir + "/q.json' --html '" + dir +
                  "/q.html' --extract '" + dir + "/q'");
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.out.empty());
  CHECK(quiet.err.empty());
  CHECK(std::filesystem::exists(dir + "/q.json"));
  CHECK(std::filesystem::exists(dir + "/q.html"));
  CHECK(readJsonLines(dir + "/q/manifest.jsonl").size() > 10);
  CommandResult quiet_json = runDumpsift("analyze -q --json '" + core + "'");
  CHECK(quiet_json.err.empty());
  const std::vector<uint8_t> report_bytes = readFileBytes(report);
  CHECK(quiet_json.out == std::string(report_bytes.begin(), report_bytes.end()));

  std::ifstream in(report);
  const nlohmann::json json = nlohmann::json::parse(in);
  CommandResult all = runDumpsift("analyze '" + core + "' --top 0");
  REQUIRE(all.exit_code == 0);
  CHECK(all.out.find("[other") == std::string::npos);
  CHECK(all.out.find("more finding") == std::string::npos);
  // Each group's row holds its lowest address, an address `extract --address` takes.
  for (const nlohmann::json &g : json["groups"]) {
    const std::string example = g["addresses"][0];
    INFO(example);
    CHECK(all.out.find("  " + example + "  ") != std::string::npos);
  }
  for (const nlohmann::json &f : json["findings"])
    CHECK(all.out.find(f["explanation"].get<std::string>().substr(0, 40)) != std::string::npos);
  std::istringstream lines(all.out);
  bool in_notes = false;
  for (std::string line; std::getline(lines, line);) {
    in_notes |= line == "notable:";
    if (in_notes)
      CHECK(line.size() <= 100);
  }
}

TEST_CASE("heap on the story core: mmapped chunks are listed without an arena") {
  const std::string core = unpackedFixture("cores/story.core.xz");
  CommandResult r = runDumpsift("heap -q '" + core + "' --min-size 131072");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("arena 0x0\n") == std::string::npos);
  const nlohmann::json listing =
      nlohmann::json::parse(runDumpsift("heap -q --json '" + core + "' --min-size 131072").out);
  size_t mmapped = 0;
  for (const nlohmann::json &a : listing["allocations"])
    if (a["mmapped"] == true) {
      ++mmapped;
      const std::string row = a["address"].get<std::string>();
      size_t at = r.out.find("\n" + row + " ");
      REQUIRE(at != std::string::npos);
      const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
      CHECK(line.find(" yes     -   ") != std::string::npos);
    }
  CHECK(mmapped > 0);
}
