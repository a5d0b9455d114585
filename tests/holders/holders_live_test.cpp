// The holders pass on live processes: fixtures/programs/holders.cpp holds buffers each a different
// way (a field of a class with a vtable reached from a global, a field of a struct without one, a
// global pointer, a local of a sleeping thread, a register, an object nothing holds, nothing at
// all) and prints the holder, class and verdict each must get; gcore dumps it and `dumpsift
// analyze` must report exactly that, under glibc's malloc and under jemalloc, tcmalloc and
// mimalloc (preloaded), and for a stripped build of the program (its classes named from their RTTI,
// its globals by symbol only when --module-path gives the unstripped file).
//
// Needs gdb (gcore), and libjemalloc2, libtcmalloc-minimal4 and libmimalloc2.0 for the preloaded
// cases: skipped with a visible warning without them, except under CI (CI set), where they fail.
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

using namespace dumpsift::test;
using nlohmann::json;

namespace {

const char *const kJemallocLibrary = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
const char *const kTcmallocLibrary = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";
const char *const kMimallocLibrary = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2";

/// What `analyze --json` said of each buffer, by address.
std::map<std::string, json> buffersByAddress(const std::string &dir, const std::string &args) {
  CommandResult r = runTool(dir, "analyze --json " + args);
  REQUIRE(r.exit_code == 0);
  json report = json::parse(r.out);
  REQUIRE(report.contains("holders"));
  CHECK(report["holders"]["ran"] == "chains");
  CHECK(report["holders"]["reachability"] == true);
  std::map<std::string, json> out;
  for (const json &b : report["buffers"])
    out[b["address"].get<std::string>()] = b;
  return out;
}

/// Checks every buffer the program named against the report: its verdict, the kind of its first
/// holder, the class (when `classes`), the offset and the global's symbol (when `symbols`).
void checkManifest(const std::vector<json> &manifest, const std::map<std::string, json> &buffers,
                   bool symbols) {
  unsigned checked = 0;
  for (const json &line : manifest) {
    if (!line.contains("verdict"))
      continue;
    const std::string name = line["name"].get<std::string>();
    INFO("buffer " << name << " at " << line["address"].get<std::string>());
    auto it = buffers.find(line["address"].get<std::string>());
    REQUIRE(it != buffers.end());
    const json &b = it->second;
    INFO("reported: " << b.dump());
    CHECK(b["verdict"] == line["verdict"]);
    if (line.contains("anchor"))
      CHECK(b["anchor"] == line["anchor"]);
    else
      CHECK(!b.contains("anchor"));
    if (!line.contains("holder")) {
      CHECK(b["holders"].empty());
      CHECK(b["references"] == 0);
      ++checked;
      continue;
    }
    REQUIRE(!b["holders"].empty());
    const json &first = b["holders"][0];
    CHECK(first["kind"] == line["holder"]);
    if (line.contains("class")) {
      if (line["class"] == "")
        CHECK(!first.contains("class"));
      else
        CHECK(first["class"] == line["class"]);
    }
    if (line.contains("offset"))
      CHECK(first["offset"] == line["offset"]);
    if (line["holder"] == "register")
      CHECK(first["register"] == "r12");
    if (line.contains("symbol") && symbols)
      CHECK(first["symbol"] == line["symbol"]);
    if (line["verdict"] == "anchored") {
      REQUIRE(b.contains("path"));
      CHECK(b["path"].back()["kind"] == line["anchor"]);
      if (name == "uploader_chunk" && symbols)
        CHECK(b["path"].back()["symbol"] == "g_uploader");
      if (name == "plain_field" && symbols)
        CHECK(b["path"].back()["symbol"] == "g_plain");
    }
    ++checked;
  }
#if defined(__x86_64__)
  CHECK(checked == 9);
#else
  CHECK(checked == 8); // the program holds nothing in a register
#endif
}

/// The holders program with `library` preloaded as its malloc: every buffer as it said.
void checkPreloaded(const char *library, const std::string &walker) {
  if (!availableOrSkipped(canRunGcore() && std::filesystem::exists(library),
                          "gcore or " + std::string(library) + " is missing"))
    return;
  const PreloadedCore *core = preloadedCore(library, "holders");
  REQUIRE(core != nullptr);
  const std::string dir = scratchDir("holders_live_" + walker);
  CommandResult r = runTool(dir, "analyze --json '" + core->path + "'");
  REQUIRE(r.exit_code == 0);
  const json report = json::parse(r.out);
  REQUIRE(report["heaps"].size() >= 1);
  CHECK(report["heaps"][0]["walker"] == walker);
  checkManifest(core->manifest, buffersByAddress(dir, "'" + core->path + "'"), true);
}

} // namespace

TEST_CASE("every buffer of a live program under glibc gets its holder, class and "
          "verdict",
          "[live]") {
  if (!gcoreOrSkipped())
    return;
  const std::string dir = scratchDir("holders_live_glibc");
  LiveProcess process(fixtureProgram("holders"));
  process.gcore(dir + "/holders.core");
  checkManifest(process.manifest(), buffersByAddress(dir, "holders.core"), true);
  // One thread or four: the same report.
  CommandResult one = runTool(dir, "analyze --json --threads 1 holders.core");
  CommandResult four = runTool(dir, "analyze --json --threads 4 holders.core");
  REQUIRE(one.exit_code == 0);
  CHECK(one.out == four.out);
}

TEST_CASE("a stripped program's classes are named from its RTTI, its globals from the "
          "unstripped file --module-path gives",
          "[live]") {
  if (!gcoreOrSkipped())
    return;
  const std::string dir = scratchDir("holders_live_stripped");
  LiveProcess process(fixtureProgram("holders_stripped"));
  process.gcore(dir + "/holders.core");
  // The stripped file on disk: classes from RTTI, globals without symbols.
  const std::map<std::string, json> stripped = buffersByAddress(dir, "holders.core");
  checkManifest(process.manifest(), stripped, false);
  for (const auto &[address, b] : stripped)
    for (const json &h : b["holders"])
      if (h["kind"] == "global" && h["module"] == "holders_stripped")
        CHECK(!h.contains("symbol"));
  // The unstripped build (the same build ID) under the stripped one's name in --module-path.
  std::filesystem::create_directories(dir + "/sysroot");
  std::filesystem::copy_file(fixtureProgram("holders"), dir + "/sysroot/holders_stripped",
                             std::filesystem::copy_options::overwrite_existing);
  checkManifest(process.manifest(), buffersByAddress(dir, "--module-path sysroot holders.core"),
                true);
}

TEST_CASE("every buffer of a live program under jemalloc gets its holder, class and "
          "verdict",
          "[live]") {
  checkPreloaded(kJemallocLibrary, "jemalloc");
}

TEST_CASE("every buffer of a live program under tcmalloc gets its holder, class and "
          "verdict",
          "[live]") {
  checkPreloaded(kTcmallocLibrary, "tcmalloc");
}

TEST_CASE("every buffer of a live program under mimalloc gets its holder, class and "
          "verdict",
          "[live]") {
  checkPreloaded(kMimallocLibrary, "mimalloc");
}

TEST_CASE("the story names the holder of its aws-chunked and JPEG buffers: its global "
          "array keep",
          "[live]") {
  if (!gcoreOrSkipped())
    return;
  const std::string dir = scratchDir("holders_live_story");
  LiveProcess process(fixtureProgram("story"));
  process.gcore(dir + "/story.core");
  const std::map<std::string, json> buffers = buffersByAddress(dir, "story.core");
  unsigned checked = 0;
  for (const json &line : process.manifest()) {
    if (!line.contains("kind") || (line["kind"] != "aws-chunked" && line["kind"] != "jpeg"))
      continue;
    INFO(line.dump());
    auto it = buffers.find(line["address"].get<std::string>());
    REQUIRE(it != buffers.end());
    const json &b = it->second;
    CHECK(b["verdict"] == "anchored");
    CHECK(b["anchor"] == "global");
    REQUIRE(!b["holders"].empty());
    CHECK(b["holders"][0]["kind"] == "global");
    CHECK(b["holders"][0]["module"] == "story");
    CHECK(b["holders"][0]["symbol"] == "keep");
    ++checked;
  }
  CHECK(checked >= 10);
}
