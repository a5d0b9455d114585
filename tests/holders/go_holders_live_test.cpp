// The holders pass on a live Go program: fixtures/go/go_holders.go holds []byte arrays in fields
// of its structs reached from globals, in a bytes.Buffer, in the backing array of a [][]byte, in
// a bytes.Reader behind an io.Reader, in a global, in a local of a parked goroutine, and drops
// two; it prints, for each held array, the object and offset (or the global) that holds it as the
// runtime lays them out. gcore dumps it; `dumpsift analyze` must name exactly that holder, find
// the path from the global or the goroutine's stack, call the dropped ones unreferenced, and take
// no holder from the runtime's own records (its mspans, the collector's work buffers, goroutines'
// stack bounds, dead stack). With the executable's DWARF, each holder is named as Go names its
// type and field (through the interface too). The stripped build gives the honest fallback: the
// holders by offset in their objects among the runtime records it cannot tell without symbols,
// and no dropped array called unreferenced.
//
// Needs Debian's Go (the fixture is built with it) and gdb (gcore): skipped with a visible warning
// without them, except under CI (CI set), where they fail.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/support/hex.h"
#include "support/planted_tag.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>

using namespace dumpsift;
using namespace dumpsift::test;
using nlohmann::json;

namespace {

/// The global each role's array is reached from (its path's root).
const std::map<std::string, std::string> kRootOf = {
    {"input", "main.streams"},     {"output", "main.streams"},     {"rented", "main.channel"},
    {"download", "main.download"}, {"reader", "main.requestBody"}, {"static", "main.staticBuffer"}};

/// Dumps `program` (a build of go_holders) and returns the report of `analyze` with `args`, the
/// manifest, and the go buffers of the report by their tag.
struct GoRun {
  json report;
  std::vector<json> manifest;
  std::map<std::string, json> by_tag;
};

bool runGo(const std::string &name, const std::string &args, GoRun &run) {
  const std::string program = fixtureProgram("go/" + name);
  if (!availableOrSkipped(std::filesystem::exists(program),
                          program + " was not built (no Go toolchain when CMake ran: run "
                                    "scripts/setup.sh --tests)") ||
      !gcoreOrSkipped())
    return false;
  const std::string dir = scratchDir("go_holders_" + name);
  {
    LiveProcess process(program);
    run.manifest = process.manifest();
    process.gcore(dir + "/go.core");
  }
  CommandResult r = runTool(dir, "analyze go.core --report report.json -q " + args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  run.report = json::parse(readText(dir + "/report.json"));
  auto snapshot = openDump(dir + "/go.core");
  if (!snapshot)
    FAIL(llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);
  for (const json &b : run.report["buffers"])
    if (b["allocator"] == "go")
      if (std::string tag = plantedTag(memory, *parseHexAddress(b["address"].get<std::string>()));
          !tag.empty()) {
        CHECK(run.by_tag.count(tag) == 0);
        run.by_tag[tag] = b;
      }
  if (!std::getenv("DUMPSIFT_KEEP_CORES"))
    std::filesystem::remove_all(dir);
  return true;
}

/// The role of a tag: "input" of "holders:input:2".
std::string roleOf(const std::string &tag) {
  return tag.substr(8, tag.rfind(':') - 8);
}

} // namespace

TEST_CASE("go holders: each array's holder by offset in its object, its path to a global or a "
          "goroutine's stack, and the dropped ones unreferenced",
          "[live]") {
  GoRun run;
  if (!runGo("go_holders", "--exe '" + fixtureProgram("go/go_holders") + "'", run))
    return;
  const json &report = run.report;
  for (const json &h : report["heaps"])
    if (h["walker"] == "go")
      CHECK_THAT(h["facts"]["go_goroutines"].get<std::string>(),
                 Catch::Contains("with a live stack"));
  REQUIRE(run.manifest.size() == 8 + 4 + 1 + 1 + 1);
  for (const json &m : run.manifest) {
    INFO(m.dump());
    const std::string tag = m["tag"];
    REQUIRE(run.by_tag.count(tag) == 1);
    const json &b = run.by_tag[tag];
    INFO(b.dump());
    CHECK(b["address"] == m["address"]);
    CHECK(b["verdict"] == "anchored");
    const json &holders = b["holders"];
    REQUIRE(holders.size() == 1); // that holder, and no record of the runtime's
    const json &h = holders[0];
    const json &path = b["path"];
    REQUIRE_FALSE(path.empty());
    CHECK(b["path_steps"] == path.size());
    CHECK(path[0] == h);
    // The global that reaches it, or main's goroutine, whose frame may still hold what it made
    // (a loop's variable): a shortest path.
    const json &root = path.back();
    if (root["kind"] == "global")
      CHECK(root.value("symbol", "") == kRootOf.at(roleOf(tag)));
    else
      CHECK((root["kind"] == "stack" && root.value("goroutine", 0) == 1));
    if (m["holder"] == "global") {
      CHECK(h["kind"] == "global");
      CHECK(h.value("symbol", "") == m["symbol"]);
      CHECK(path.size() == 1);
      continue;
    }
    // Held at the field's offset of the object the program names.
    CHECK(h["kind"] == "heap");
    CHECK(h["allocator"] == "go");
    CHECK(h.value("allocation", "") == m["holder_object"]);
    CHECK(h.value("offset", uint64_t(0)) == m["holder_offset"]);
    CHECK(h["points_to"] == b["address"]);
    // Typed from the executable's DWARF, down from the global: named as Go names them.
    CHECK(h.value("class", "") == m["holder_type"]);
    CHECK(h.value("field", "") == m["holder_field"]);
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      CHECK(path[i]["kind"] == "heap");
      CHECK_FALSE(path[i].value("class", "").empty()); // typed down from a global
      if (i > 0)
        CHECK(path[i]["points_to"] == path[i - 1].value("allocation", ""));
    }
  }
  // The rented arrays' group: held by elements of a slice's backing array, owned by the first
  // object outside the runtime and its arrays on their paths (when a path runs through one: a
  // frame of main may hold the array itself).
  int rented_groups = 0;
  for (const json &g : report["groups"]) {
    const std::string summary = g.contains("holders") ? g["holders"]["summary"] : "";
    if (summary.find("held in elements of `[4][]uint8` arrays") == std::string::npos)
      continue;
    ++rented_groups;
    INFO(summary);
    if (summary.find("owned by") != std::string::npos)
      CHECK_THAT(summary, Catch::Contains("owned by `main.Channel.rented`"));
  }
  CHECK(rented_groups == 1);
  // One finding says what the upload streams hold together: both arrays of each of the four.
  std::vector<std::string> by_type;
  for (const json &f : report["findings"])
    if (f["type"] == "held-by-type")
      by_type.push_back(f["explanation"]);
  REQUIRE(by_type.size() == 1);
  CHECK_THAT(by_type[0], Catch::StartsWith("4 `main.ChunkedUploadWrapperStream` objects hold 8 "
                                           "buffers"));
  CHECK_THAT(by_type[0], Catch::Contains("`inputBuffer` 4 x "));
  CHECK_THAT(by_type[0], Catch::Contains("`outputBuffer` 4 x "));
  // The parked goroutine's local: held from that goroutine's stack, and only from it.
  {
    REQUIRE(run.by_tag.count("holders:local:0") == 1);
    const json &b = run.by_tag["holders:local:0"];
    INFO(b.dump());
    CHECK(b["verdict"] == "anchored");
    REQUIRE_FALSE(b["holders"].empty());
    bool in_sleeper = false;
    for (const json &h : b["holders"]) {
      CHECK(h["kind"] == "stack");
      CHECK(h.value("goroutine", 0) > 1); // not main's
      // The frame that holds it, told apart along the parked goroutine's frame pointers.
      CHECK_FALSE(h.value("function", "").empty());
      in_sleeper |= h.value("function", "") == "main.sleeper";
    }
    CHECK(in_sleeper);
  }
  // Made after the last collection and dropped: nothing points at them. (Now and then the
  // runtime frees one before the dump, GC disabled or not: its pages are free then.)
  int dropped = 0;
  for (const char *tag : {"holders:dropped:0", "holders:dropped:1"}) {
    INFO(tag);
    if (!run.by_tag.count(tag))
      continue;
    ++dropped;
    const json &b = run.by_tag[tag];
    INFO(b.dump());
    CHECK(b["holders"].empty());
    CHECK(b["references"] == 0);
    CHECK(b["verdict"] == "unreferenced");
  }
  CHECK(dropped >= 1);
}

TEST_CASE("go holders of a stripped program: the holders by offset in their objects, no record "
          "outside the heap a holder, and nothing called unreferenced",
          "[live]") {
  GoRun run;
  if (!runGo("go_holders_stripped", "", run))
    return;
  for (const json &h : run.report["heaps"])
    if (h["walker"] == "go")
      CHECK_THAT(h["facts"]["go_goroutines"].get<std::string>(), Catch::Contains("not read"));
  for (const json &m : run.manifest) {
    INFO(m.dump());
    REQUIRE(run.by_tag.count(m["tag"]) == 1);
    const json &b = run.by_tag[m["tag"]];
    INFO(b.dump());
    // The program's holder among them. Without symbols the runtime's records in its own heap
    // objects cannot be told (a P's page cache, runtime.allp's, holds the address of the pages
    // after the last large object), and words of the unread goroutine stacks may hold it.
    const json *found = nullptr;
    for (const json &h : b["holders"])
      if (m["holder"] == "global" ? h["kind"] == "global"
                                  : h.value("allocation", "") == m["holder_object"])
        found = &h;
    REQUIRE(found != nullptr);
    const json &h = *found;
    // Reached from a root (the executable's data, no symbol naming it, or a stack).
    CHECK(b["verdict"] == "anchored");
    CHECK(b["path"].back()["kind"] != "heap");
    for (const json &other : b["holders"])
      CHECK(other["kind"] != "other"); // the mspans are found without symbols
    if (m["holder"] == "global") {
      CHECK(h["kind"] == "global");
      continue;
    }
    CHECK(h["kind"] == "heap");
    CHECK(h.value("offset", uint64_t(0)) == m["holder_offset"]);
  }
  // Without the goroutines' stacks, a buffer no root reaches may be held by one: not decided.
  // Without symbols the runtime's records in its own objects (a g's stack bounds, a P's page
  // cache) cannot be told either: they may hold a dropped array, but no global of the program
  // and no record outside the heap does.
  for (const char *tag : {"holders:dropped:0", "holders:dropped:1"}) {
    INFO(tag);
    if (!run.by_tag.count(tag))
      continue; // freed before the dump, as above
    const json &b = run.by_tag[tag];
    INFO(b.dump());
    for (const json &h : b["holders"])
      CHECK((h["kind"] == "heap" || h["kind"] == "stack" || h["kind"] == "register"));
    CHECK(b["verdict"] != "unreferenced");
  }
}
