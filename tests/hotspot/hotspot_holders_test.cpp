// Who holds each Java array, against ground truth from real JVMs: fixtures/java/Holders.java holds
// tagged byte[] buffers in fields of its own classes, in a ByteArrayOutputStream, in an ArrayList's
// elements, in a static field and in a local of a sleeping thread, drops two, and prints for each
// the holder's class and field as the JVM names them. gcore dumps it under each collector, with
// compressed oops on and off; `dumpsift analyze` must name exactly that holder for every buffer
// (reading the narrow references between objects), name no other, find the path from a root
// through the static that reaches it, and call the dropped ones unreferenced.
//
// The tests need a JDK 17 and gcore (as hotspot_truth_test.cpp); the JDK 24+ ones run by hand with
// DUMPSIFT_JAVA_HOME set: dumpsift_hotspot_tests "[.jdk24]".
#include "dumpsift/dump/address_space.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "java_fixture.h"
#include "support/planted_tag.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>

using namespace dumpsift;
using namespace dumpsift::test;
namespace fs = std::filesystem;

namespace {

uint64_t addressOf(const nlohmann::json &value) {
  return std::stoull(value.get<std::string>(), nullptr, 16);
}

/// Runs Holders under `flags`, dumps it and checks every buffer's holders and verdict.
void checkHolders(const std::string &name, const std::vector<std::string> &flags) {
  std::string why;
  const std::string classes = javaClasses("Holders", why);
  if (!availableOrSkipped(!classes.empty(), "cannot run the JVM tests: " + why))
    return;
  const std::string dir = scratchDir("hotspot-holders-" + name);
  const std::string core = dir + "/holders.core";
  std::vector<nlohmann::json> planted;
  {
    std::vector<std::string> args{
        "MALLOC_ARENA_MAX=2", javaHome() + "/bin/java",       "-Xmx64m", "-Xms64m",
        "-XX:-UsePerfData",   "-XX:ReservedCodeCacheSize=32m"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"-cp", classes, "Holders"});
    LiveProcess jvm("/usr/bin/env", args);
    REQUIRE(jvm.manifest().size() == 1 + 17);
    planted.assign(jvm.manifest().begin() + 1, jvm.manifest().end());
    jvm.gcore(core);
  }
  CommandResult r = runTool(dir, "analyze '" + core + "' --report report.json -q");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json report = nlohmann::json::parse(readText(dir + "/report.json"));
  auto snapshot = openDump(core);
  if (!snapshot)
    FAIL(llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);

  std::map<std::string, std::vector<const nlohmann::json *>> by_tag;
  for (const nlohmann::json &b : report["buffers"])
    if (b["allocator"] == "hotspot")
      if (std::string tag =
              plantedTag(memory, addressOf(b["address"]) + b["data_offset"].get<uint64_t>());
          !tag.empty())
        by_tag[tag].push_back(&b);

  for (const nlohmann::json &p : planted) {
    INFO(name << ": " << p.dump());
    const auto &found = by_tag[p["tag"]];
    REQUIRE(found.size() == 1);
    const nlohmann::json &b = *found.front();
    INFO(b.dump());
    CHECK(b["managed"]["type"] == "byte[]");
    if (p["length"] != 0)
      CHECK(b["managed"]["length"] == p["length"]);
    const nlohmann::json &holders = b["holders"];
    const std::string tag = p["tag"], type = p["holder_type"];
    if (!type.empty()) {
      // Held in a field (or an element) of one Java object: that object, named, and no other.
      REQUIRE(holders.size() == 1);
      const nlohmann::json &h = holders[0];
      CHECK(h["kind"] == "heap");
      CHECK(h["allocator"] == "hotspot");
      CHECK(h["class"] == type);
      CHECK(h["field"] == p["holder_field"]);
      CHECK(h["points_to"] == b["address"]);
      const uint64_t slot = addressOf(h["address"]), object = addressOf(h["allocation"]);
      CHECK(object < slot);
      CHECK(slot < object + h["allocation_size"].get<uint64_t>());
      // Reached from a static of Holders: the path runs from the holder through the objects
      // between, the static among them (a word of the class's mirror), up to a root.
      CHECK(b["verdict"] == "anchored");
      const nlohmann::json &path = b["path"];
      REQUIRE(path.size() >= 2);
      CHECK(b["path_steps"] == path.size());
      CHECK(path[0].value("class", "") == type);
      CHECK(path[0].value("field", "") == p["holder_field"]);
      CHECK(path[0]["address"] == h["address"]);
      CHECK(path.back()["kind"] != "heap");
      const std::string role = tag.substr(8, tag.rfind(':') - 8);
      const std::map<std::string, std::string> statics{{"input", "streams"},
                                                       {"output", "streams"},
                                                       {"rented", "channel"},
                                                       {"download", "download"},
                                                       {"static", "staticBuffer"}};
      REQUIRE(statics.count(role));
      size_t through_static = 0;
      for (size_t i = 0; i + 1 < path.size(); ++i) {
        CHECK(path[i]["kind"] == "heap");
        CHECK(path[i]["allocator"] == "hotspot");
        if (path[i].value("class", "") == "Holders" &&
            path[i].value("field", "") == statics.at(role) && path[i].value("static", false))
          ++through_static;
        // Each step holds the one before it.
        if (i > 0)
          CHECK(path[i]["points_to"] == path[i - 1].value("allocation", ""));
      }
      CHECK(through_static == 1);
    } else if (tag.rfind("holders:local:", 0) == 0) {
      // A local of the sleeping thread: its stack (or a register) holds it, and only that.
      CHECK(b["verdict"] == "anchored");
      REQUIRE_FALSE(holders.empty());
      for (const nlohmann::json &h : holders) {
        CHECK((h["kind"] == "stack" || h["kind"] == "register"));
        CHECK(h["points_to"] == b["address"]);
      }
    } else {
      // Dropped: no word of the dump refers to it.
      CHECK(holders.empty());
      CHECK(b["references"] == 0);
      CHECK(b["verdict"] == "unreferenced");
    }
  }

  // The story's groups say who holds their members, in one line each.
  std::map<std::string, std::string> summaries; // the groups' holder summaries, by first tag
  for (const nlohmann::json &g : report["groups"])
    if (g.contains("holders"))
      for (const auto &[tag, found] : by_tag)
        if (found.front()->at("size") == g["size"])
          summaries[tag.substr(0, tag.rfind(':'))] = g["holders"]["summary"];
  CHECK_THAT(summaries["holders:input"],
             Catch::Contains("4 of 4 held in `Holders$ChunkedUploadWrapperStream._inputBuffer`"));
  CHECK_THAT(summaries["holders:output"],
             Catch::Contains("4 of 4 held in `Holders$ChunkedUploadWrapperStream._outputBuffer`"));
  CHECK_THAT(summaries["holders:rented"],
             Catch::Contains("4 of 4 held in elements of `java.lang.Object[]`"));
  // The first object outside java.* on the paths: the program's owner of the buffers.
  CHECK_THAT(summaries["holders:rented"], Catch::Contains("owned by `Holders$Channel.rented`"));
  // The static each path passes is its root, as a heap analyzer's static GC roots.
  CHECK_THAT(summaries["holders:rented"],
             Catch::Contains("anchored from static `Holders.channel`"));
  CHECK_THAT(summaries["holders:download"],
             Catch::Contains("1 of 1 held in `java.io.ByteArrayOutputStream.buf`, anchored from "
                             "static `Holders.download`"));
  CHECK_THAT(summaries["holders:input"], Catch::Contains("anchored from static `Holders.streams`"));
  CHECK_THAT(summaries["holders:input"], !Catch::Contains("owned by"));
  CHECK_THAT(summaries["holders:static"], Catch::Contains("static `Holders.staticBuffer`"));
  CHECK_THAT(summaries["holders:dropped"], Catch::Contains("nothing holds them"));
  // And one finding says what the streams hold together: both arrays of each of the four.
  std::vector<std::string> by_type;
  for (const nlohmann::json &f : report["findings"])
    if (f["type"] == "held-by-type")
      by_type.push_back(f["explanation"]);
  REQUIRE(by_type.size() == 1);
  const uint64_t input = by_tag.at("holders:input:0").front()->at("size"),
                 output = by_tag.at("holders:output:0").front()->at("size");
  CHECK_THAT(by_type[0], Catch::StartsWith("4 `Holders$ChunkedUploadWrapperStream` objects hold 8 "
                                           "buffers"));
  CHECK_THAT(by_type[0],
             Catch::EndsWith("`_inputBuffer` 4 x " + groupedDigits(input) +
                             " bytes, `_outputBuffer` 4 x " + groupedDigits(output) + " bytes"));

  // No Java array is held by the VM's own records: outside the Java heap, only Java threads'
  // stacks and registers hold one.
  for (const nlohmann::json &b : report["buffers"]) {
    if (b["allocator"] != "hotspot")
      continue;
    for (const nlohmann::json &h : b["holders"]) {
      INFO(b.dump());
      CHECK((h["kind"] == "stack" || h["kind"] == "register" ||
             (h["kind"] == "heap" && h["allocator"] == "hotspot")));
    }
  }
  if (!std::getenv("DUMPSIFT_KEEP_CORES"))
    fs::remove_all(dir);
}

} // namespace

TEST_CASE("hotspot holders on G1 with compressed oops: every buffer's holder named",
          "[jvm][live]") {
  checkHolders("g1", {"-XX:+UseG1GC", "-XX:CompressedClassSpaceSize=16m"});
}

TEST_CASE("hotspot holders on G1 without compressed oops: every buffer's holder named",
          "[jvm][live]") {
  checkHolders("g1-no-oops",
               {"-XX:+UseG1GC", "-XX:-UseCompressedOops", "-XX:CompressedClassSpaceSize=16m"});
}

TEST_CASE("hotspot holders on Parallel: every buffer's holder named", "[jvm][live]") {
  checkHolders("parallel", {"-XX:+UseParallelGC", "-XX:CompressedClassSpaceSize=16m"});
}

TEST_CASE("hotspot holders on Serial without compressed oops or class pointers: every buffer's "
          "holder named",
          "[jvm][live]") {
  checkHolders("serial-no-ccp",
               {"-XX:+UseSerialGC", "-XX:-UseCompressedOops", "-XX:-UseCompressedClassPointers"});
}

// JDK 21+ keeps a class's fields as a stream of numbers; JDK 24+ may put the class in the mark
// word.
TEST_CASE("hotspot holders on JDK 24+ G1: every buffer's holder named", "[.jdk24][live]") {
  checkHolders("jdk24-g1", {"-XX:+UseG1GC", "-XX:CompressedClassSpaceSize=16m"});
}

TEST_CASE("hotspot holders on JDK 24+ G1 with compact object headers: every buffer's holder named",
          "[.jdk24][live]") {
  checkHolders("jdk24-g1-compact", {"-XX:+UseG1GC", "-XX:+UseCompactObjectHeaders"});
}
