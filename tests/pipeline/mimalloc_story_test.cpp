// The story's uploader (fixtures/programs/story.c) run with Debian's libmimalloc preloaded and
// dumped with gcore: analyze must find every planted buffer at its exact address, with the usable
// size mimalloc answered and the right kind, from the mimalloc walker; glibc's walker and the
// region scan, which run in the same process, must not claim any of mimalloc's memory.
//
// Needs gdb (gcore) and libmimalloc2.0 (scripts/setup.sh --tests installs both); skipped with a
// warning without them, a failure under CI.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/support/hex.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

TEST_CASE("the story under mimalloc: every planted buffer exact, of the right kind, mimalloc's",
          "[live]") {
  const PreloadedCore *core = preloadedCore("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", "story");
  if (!core)
    return;
  auto snapshot = openDump(core->path);
  if (!snapshot)
    FAIL(core->path << ": " << llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);
  AnalyzeOptions options; // the documented defaults: 64 KiB and up
  Analysis analysis = analyze(memory, options);
  for (const Diagnostic &d : analysis.diagnostics.warnings())
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  CHECK(analysis.diagnostics.empty());

  const HeapWalkResult *mimalloc = nullptr;
  for (const HeapWalkResult &h : analysis.heaps)
    if (h.walker == "mimalloc")
      mimalloc = &h;
  REQUIRE(mimalloc != nullptr);

  REQUIRE(core->manifest.size() > 20);
  for (const nlohmann::json &m : core->manifest) {
    INFO(m.dump());
    const uint64_t address = *parseHexAddress(m["address"].get<std::string>());
    const Buffer *b = nullptr;
    for (const Buffer &x : analysis.buffers)
      if (x.allocation.address == address)
        b = &x;
    REQUIRE(b != nullptr);
    CHECK(b->allocation.size == m["usable_size"].get<uint64_t>());
    CHECK(b->allocation.state == AllocState::Used);
    CHECK(bufferSource(analysis, *b) == "mimalloc");
    CHECK(kindName(b->content.kind) == m["kind"].get<std::string>());
    if (m.contains("payload_kind")) {
      const DetailValue *payload = b->content.details.get("payload_kind");
      REQUIRE(payload != nullptr);
      REQUIRE(std::holds_alternative<std::string>(*payload));
      CHECK(std::get<std::string>(*payload) == m["payload_kind"].get<std::string>());
    }
  }

  // No buffer of another walker or of the region scan lies in mimalloc's segments, and no other
  // walker's area overlaps them.
  auto inMimalloc = [&](uint64_t start, uint64_t size) {
    for (const HeapArea &a : mimalloc->areas)
      if (start < a.start + a.size && a.start < start + size)
        return true;
    return false;
  };
  for (const Buffer &b : analysis.buffers) {
    INFO("buffer at " << hexAddress(b.allocation.address) << " from "
                      << bufferSource(analysis, b).str());
    if (bufferSource(analysis, b) != "mimalloc")
      CHECK_FALSE(inMimalloc(b.allocation.address, b.allocation.size));
  }
  for (const HeapWalkResult &h : analysis.heaps)
    if (&h != mimalloc)
      for (const HeapArea &a : h.areas)
        CHECK_FALSE(inMimalloc(a.start, a.size));
  for (const UnclaimedRange &r : analysis.unclaimed)
    CHECK_FALSE(inMimalloc(r.start, r.size));
}

TEST_CASE("the story under mimalloc: its report validates against the JSON schema", "[live]") {
  const PreloadedCore *core = preloadedCore("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", "story");
  if (!core)
    return;
  const std::string report = scratchDir("mimalloc-story-report") + "/r.json";
  CommandResult r = runCommand("'" + toolPath() + "' analyze '" + core->path +
                               "' --quiet --min-size 0 --report '" + report + "' > /dev/null");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CommandResult v =
      runCommand("/usr/bin/python3 '" + sourceDir() + "/scripts/validate_report.py' '" +
                 sourceDir() + "/docs/report.schema.json' '" + report + "'");
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(readFileBytes(report));
  bool mimalloc = false;
  for (const nlohmann::json &h : j["heaps"])
    mimalloc |= h["walker"] == "mimalloc" && h.value("size_classes", false);
  CHECK(mimalloc);
}
