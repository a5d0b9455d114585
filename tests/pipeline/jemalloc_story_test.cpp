// The story under jemalloc: fixtures/programs/story runs with Debian's libjemalloc.so.2
// preloaded, gcore dumps it, and analyze must find every planted buffer at its exact address with
// jemalloc's usable size and the right kind, owned by the jemalloc walker (not by glibc's walker
// nor the region scan), with the size groups named as jemalloc's size classes.
//
// Needs gdb (gcore) and libjemalloc2 (scripts/setup.sh installs them); skipped with a visible
// warning without them, except under CI (CI set), where it fails.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/hex.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

const char *const kJemallocLibrary = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

/// "163,840".
std::string commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

} // namespace

TEST_CASE("the story under jemalloc: every planted buffer at its exact address, size class and "
          "kind") {
  std::string why;
  if (!canRunGcore())
    why = "gcore is missing or ptrace is not allowed";
  else if (!std::filesystem::exists(kJemallocLibrary))
    why = std::string(kJemallocLibrary) + " is missing (apt-get install libjemalloc2)";
  if (!why.empty()) {
    if (std::getenv("CI"))
      FAIL("cannot run the story under jemalloc under CI: " << why);
    WARN("SKIPPED: " << why);
    return;
  }
  setenv("LD_PRELOAD", kJemallocLibrary, 1);
  LiveProcess story(fixtureProgram("story"));
  unsetenv("LD_PRELOAD");
  std::string core = scratchDir("story-jemalloc") + "/story.core";
  story.gcore(core);

  auto snapshot = openDump(core);
  if (!snapshot)
    FAIL(core << ": " << llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);
  Analysis analysis = analyze(memory, AnalyzeOptions{}); // the documented defaults: 64 KiB and up

  const std::vector<nlohmann::json> &manifest = story.manifest();
  REQUIRE(manifest.size() > 20);
  std::map<uint64_t, uint64_t> planted_by_size;
  uint64_t aws_size = 0;
  for (const nlohmann::json &m : manifest) {
    INFO(m.dump());
    uint64_t address = *parseHexAddress(m["address"].get<std::string>());
    uint64_t usable = m["usable_size"].get<uint64_t>();
    const Buffer *b = nullptr;
    for (const Buffer &x : analysis.buffers)
      if (x.allocation.address == address)
        b = &x;
    REQUIRE(b != nullptr);
    CHECK(b->allocation.size == usable);
    CHECK(b->allocation.state == AllocState::Used);
    CHECK(bufferSource(analysis, *b) == "jemalloc");
    CHECK(kindName(b->content.kind) == m["kind"].get<std::string>());
    if (m.contains("payload_kind")) {
      const DetailValue *payload = b->content.details.get("payload_kind");
      REQUIRE(payload != nullptr);
      CHECK(std::get<std::string>(*payload) == m["payload_kind"].get<std::string>());
    }
    if (m["kind"] == "aws-chunked")
      aws_size = usable;
    ++planted_by_size[usable];
  }

  // Nothing else claims the planted memory: every other buffer lies outside the planted ones.
  for (const Buffer &b : analysis.buffers) {
    if (bufferSource(analysis, b) == "jemalloc")
      continue;
    for (const nlohmann::json &m : manifest) {
      uint64_t address = *parseHexAddress(m["address"].get<std::string>());
      uint64_t end = address + m["usable_size"].get<uint64_t>();
      CHECK_FALSE(
          (b.allocation.address < end && b.allocation.address + b.allocation.size > address));
    }
  }

  // The size groups are jemalloc's size classes, and the summary says so.
  for (const SizeGroup &g : analysis.groups)
    if (planted_by_size.count(g.size))
      CHECK(g.count >= planted_by_size[g.size]);
  std::ostringstream text;
  writeSummaryText(**snapshot, analysis, TextOptions{}, text);
  INFO(text.str());
  REQUIRE(aws_size != 0);
  CHECK(text.str().find("jemalloc size class " + commas(aws_size) + "  used       10") !=
        std::string::npos);
  CHECK(text.str().find("aws-chunked x10 (payload jpeg") != std::string::npos);
}
