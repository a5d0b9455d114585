// Issue 24's hostile dumps at the sizes it gives, written by bench/hostile_dumps.py (aliased file
// ranges in a core and a minidump, 6 M one-byte ranges, a region of back-to-back gzip bombs,
// terminal escapes in names, a region of cut JPEG streams): `info` and `analyze` must each finish,
// say what was wrong, and keep their output bounded. (bench/hostile.sh measures their time and
// memory; a test does not time.)
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace dumpsift::test;

namespace {

/// The directory holding the hostile dump `dump`, written on first use. Each dump has a directory
/// of its own: ctest runs the test cases as parallel processes, and one must not remove or rewrite
/// a file another is reading.
std::string hostileDir(const std::string &dump) {
  static std::map<std::string, std::string> written;
  auto it = written.find(dump);
  if (it == written.end()) {
    const std::string out = scratchDir("hostile_dumps_" + dump);
    const CommandResult made =
        runCommand("python3 " + sourceDir() + "/bench/hostile_dumps.py " + out + " " + dump);
    REQUIRE(made.exit_code == 0);
    it = written.emplace(dump, out).first;
  }
  return it->second;
}

/// The JSON that `dumpsift COMMAND --json DUMP` writes, or its last 64 KiB (the diagnostics)
/// when it is over 32 MiB: `info` on a dump of 2^19 regions writes 120 MB, too much for a test
/// log or a scratch file. Checks that the output is bounded.
std::string jsonOf(const std::string &command, const std::string &dump) {
  const CommandResult r =
      runTool(hostileDir(dump),
              command + " --json " + dump +
                  " | python3 -c 'import sys; d = sys.stdin.buffer.read(); print(len(d)); "
                  "sys.stdout.buffer.write(d if len(d) < 32 << 20 else d[-65536:])'");
  REQUIRE(r.exit_code == 0);
  const size_t newline = r.out.find('\n');
  REQUIRE(newline != std::string::npos);
  const uint64_t size = std::stoull(r.out.substr(0, newline));
  // The output grows with what it reports, not with what the dump declares: `info` lists every
  // region it kept (at most 2^19, a few hundred bytes each), `analyze` what it found.
  CHECK(size < (1u << 20) + 320 * (command == "info" ? 1u << 19 : 0));
  return r.out.substr(newline + 1);
}

uint64_t fileSize(const std::string &dump) {
  return std::filesystem::file_size(hostileDir(dump) + "/" + dump);
}

} // namespace

TEST_CASE("hostile dumps: aliased file ranges capture no more than the file") {
  for (const std::string dump : {"aliased.core", "aliased.dmp"}) {
    INFO(dump);
    const std::string why = "point at file bytes another range holds";
    const nlohmann::json info = nlohmann::json::parse(jsonOf("info", dump));
    CHECK(info["diagnostics"].dump().find(why) != std::string::npos);
    CHECK(info["dump"]["captured_bytes"].get<uint64_t>() <= fileSize(dump));
    CHECK(jsonOf("analyze", dump).find(why) != std::string::npos);
  }
}

TEST_CASE("hostile dumps: six million one-byte ranges are cut at the limit") {
  const std::string why = "6,000,000 entries; only the first 524,288 are read";
  CHECK(jsonOf("info", "ranges.dmp").find(why) != std::string::npos);
  CHECK(jsonOf("analyze", "ranges.dmp").find(why) != std::string::npos);
}

TEST_CASE("hostile dumps: a region of gzip bombs stops at the run's inflate budget") {
  const nlohmann::json report = nlohmann::json::parse(jsonOf("analyze", "gzip.core"));
  REQUIRE(report["diagnostics"].size() == 1);
  CHECK(report["diagnostics"][0]["where"] == "region scan");
  CHECK(report["diagnostics"][0]["message"].get<std::string>().find(
            "the run's inflate budget (128.0 MiB of output) ran out in the range at 0x20000000 "
            "(4.0 MiB)") == 0);
  // Each member is 4 KiB: under the 64 KiB threshold, none is a buffer of its own.
  CHECK(report["buffers"].empty());
}

TEST_CASE("hostile dumps: terminal escapes in names print escaped") {
  const CommandResult r = runTool(hostileDir("escapes.dmp"), "info escapes.dmp");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("evil\\x1b[2J\\x1b]0;owned\\x07\\x0dfake line") != std::string::npos);
  CHECK(std::none_of(r.out.begin(), r.out.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f;
  }));
}

TEST_CASE("hostile dumps: a region of cut JPEG streams ends each estimate at the next stream") {
  // 4 MiB of JPEG headers and 400 bytes of scan data each (748 bytes), no end marker: each stream's
  // extent is an estimate, the run of non-zero bytes it starts (the whole region) cut at the next
  // stream. The run's end is found once for all of them (it was found once per stream: 31 s).
  const CommandResult r =
      runTool(hostileDir("jpegs.core"), "analyze jpegs.core --min-size 512 --quiet --json");
  REQUIRE(r.exit_code == 0);
  const nlohmann::json report = nlohmann::json::parse(r.out);
  CHECK(report["diagnostics"].empty());
  const nlohmann::json &buffers = report["buffers"];
  constexpr uint64_t kStream = 748;
  REQUIRE(buffers.size() == (4u << 20) / kStream);
  for (size_t i = 0; i < buffers.size(); ++i) {
    INFO("buffer " << buffers[i].dump());
    std::ostringstream address;
    address << "0x" << std::hex << 0x20000000 + i * kStream;
    CHECK(buffers[i]["address"] == address.str());
    CHECK(buffers[i]["size"] == kStream);
    CHECK(buffers[i]["kind"] == "jpeg");
  }
}
