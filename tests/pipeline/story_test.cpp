// End to end on the story's process: a real program holds 128 KiB JPEG slices, 131,162-byte
// aws-chunked frames, AMQP publish frames, PNG, JSON, zeros and random bytes in glibc memory;
// gcore dumps it; analyze must find every planted buffer at its exact address and size, with the
// right kind, and group them as the story did.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/hex.h"
#include "story_checks.h"
#include "support/test_support.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>
#include <map>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

// Every planted buffer of at least `min_size` usable bytes: found, exact size, kind, payload.
void checkPlanted(const std::string &core, const std::vector<nlohmann::json> &manifest) {
  auto snapshot = openDump(core);
  if (!snapshot)
    FAIL(core << ": " << llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);
  AnalyzeOptions options; // the documented defaults: 64 KiB and up
  Analysis analysis = analyze(memory, options);

  REQUIRE(analysis.heaps.size() >= 1);
  CHECK(analysis.heaps[0].walker == "glibc");

  StoryGroups expected_groups = checkPlantedBuffers(analysis, manifest, "glibc");

  // The story's group: 131,072- and 131,162-byte requests are both 135,152-byte mmapped chunks,
  // one size group holding both kinds.
  const SizeGroup *story = nullptr;
  for (const SizeGroup &g : analysis.groups)
    if (g.size == 135152)
      story = &g;
  REQUIRE(story != nullptr);
  uint64_t jpeg = expected_groups[{135152, "jpeg"}];
  uint64_t aws = expected_groups[{135152, "aws-chunked"}];
  CHECK(jpeg >= 7);
  CHECK(aws == 10);
  CHECK(story->count == jpeg + aws);
  std::map<std::string, uint64_t> kinds;
  for (const auto &[kind, count] : story->kinds)
    kinds[kindName(kind).str()] = count;
  CHECK(kinds["jpeg"] == jpeg);
  CHECK(kinds["aws-chunked"] == aws);

  // --group-by size,kind: the two populations stand apart.
  checkKindGroups(memory, options, expected_groups);

  // The summary tells the story at a glance.
  std::string text_text;
  llvm::raw_string_ostream text(text_text);
  writeSummaryText(**snapshot, analysis, TextOptions{}, text);
  INFO(text.str());
  CHECK(text.str().find("135,152") != std::string::npos);
  CHECK(text.str().find("aws-chunked x10 (payload jpeg") != std::string::npos);
  CHECK(text.str().find("truncated") != std::string::npos);
}

} // namespace

TEST_CASE("the committed story core: every planted buffer at its exact address, size and kind") {
  checkPlanted(unpackedFixture("cores/story.core.xz"),
               readJsonLines(sourceDir() + "/fixtures/cores/story.manifest.jsonl"));
}

TEST_CASE("a live story process dumped with gcore: every planted buffer found", "[live]") {
  if (!gcoreOrSkipped())
    return;
  LiveProcess story(fixtureProgram("story"));
  std::string core = scratchDir("story-live") + "/story.core";
  story.gcore(core);
  checkPlanted(core, story.manifest());
}

TEST_CASE("analyze reports validate against the JSON schema and are deterministic") {
  std::string core = unpackedFixture("cores/story.core.xz");
  std::string dir = scratchDir("story-report");
  for (const char *name : {"a.json", "b.json"}) {
    CommandResult r = runCommand("'" + toolPath() + "' analyze '" + core + "' --quiet --report '" +
                                 dir + "/" + name + "' > /dev/null");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  CHECK(readFileBytes(dir + "/a.json") == readFileBytes(dir + "/b.json"));
  CommandResult v =
      runCommand("/usr/bin/python3 '" + sourceDir() + "/scripts/validate_report.py' '" +
                 sourceDir() + "/docs/report.schema.json' '" + dir + "/a.json'");
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);
}
