// End to end on the story's process under musl: fixtures/programs/story.c built with musl-gcc
// -static holds the story's buffers (128 KiB JPEG slices, 131,162-byte aws-chunked frames, AMQP
// publish frames, PNG, JSON, zeros, random bytes) in mallocng memory. libjpeg-turbo and zlib exist
// for glibc only, so the glibc build writes the JPEGs and the PNG its encoders made
// (`story --write-content DIR`) and the musl build plants those bytes. analyze must find every
// planted buffer at its exact address and size, with the right kind, owned by the musl walker.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/hex.h"
#include "story_checks.h"
#include "support/test_support.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <map>

using namespace dumpsift;
using namespace dumpsift::test;

TEST_CASE("the story built with musl-gcc -static: every planted buffer, exact, owned by musl",
          "[live]") {
  const std::string musl_story = fixtureProgram("musl/story");
  if (!availableOrSkipped(std::filesystem::exists(musl_story),
                          musl_story +
                              " was not built: musl-gcc is missing (Debian: musl-tools; "
                              "scripts/setup.sh --tests installs it, then re-run cmake)") ||
      !availableOrSkipped(canRunGcore(), "gcore cannot attach to a child here"))
    return;
  const std::string dir = scratchDir("musl-story");
  CommandResult written =
      runCommand("'" + fixtureProgram("story") + "' --write-content '" + dir + "' > /dev/null");
  INFO(written.err);
  REQUIRE(written.exit_code == 0);

  LiveProcess story(musl_story, {dir});
  const std::vector<nlohmann::json> &manifest = story.manifest();
  REQUIRE(manifest.size() == 28);
  const std::string core = dir + "/story.core";
  story.gcore(core);
  auto snapshot = openDump(core);
  if (!snapshot)
    FAIL(core << ": " << llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);
  AnalyzeOptions options; // the documented defaults: 64 KiB and up
  Analysis analysis = analyze(memory, options);

  // The musl walker is the only heap; the glibc walker finds nothing to claim, and no warning
  // comes from anything else.
  REQUIRE(analysis.heaps.size() == 1);
  CHECK(analysis.heaps[0].walker == "musl");
  for (const Diagnostic &d : analysis.diagnostics.warnings()) {
    INFO(d.where << ": " << d.message);
    CHECK(d.where == "glibc");
  }

  // Every planted buffer at its exact address and malloc_usable_size, with its kind; nothing else
  // of 64 KiB or more (the encoders' and the JSON builder's temporaries were freed and unmapped),
  // and nothing from the region scan.
  const StoryGroups expected_groups = checkPlantedBuffers(analysis, manifest, "musl");
  CHECK(analysis.buffers.size() == manifest.size());
  for (const Buffer &b : analysis.buffers)
    CHECK(bufferSource(analysis, b) == "musl");

  // The same bytes as the glibc build's: a slice is the first 128 KiB of one of its JPEGs, the
  // PNG is its PNG.
  unsigned slice = 0;
  for (const nlohmann::json &m : manifest) {
    INFO(m.dump());
    const uint64_t address = *parseHexAddress(m["address"].get<std::string>());
    const auto b = std::find_if(analysis.buffers.begin(), analysis.buffers.end(),
                                [&](const Buffer &x) { return x.allocation.address == address; });
    REQUIRE(b != analysis.buffers.end());
    const llvm::ArrayRef<uint8_t> bytes = capturedPayload(memory, *b);
    if (m["name"] == "jpeg-slice") {
      const auto jpeg = readFileBytes(dir + "/story-" + std::to_string(slice++ % 3) + ".jpg");
      REQUIRE(bytes.size() == 131072);
      CHECK(std::memcmp(bytes.data(), jpeg.data(), bytes.size()) == 0);
    }
    if (m["name"] == "png")
      CHECK(std::vector<uint8_t>(bytes.begin(), bytes.end()) == readFileBytes(dir + "/story.png"));
  }
  CHECK(slice == 8);

  // musl's usable size is the requested size, so the slices and the frames are two groups: the
  // frames' is the story's 131,162 bytes, all ten aws-chunked.
  std::map<uint64_t, const SizeGroup *> groups;
  for (const SizeGroup &g : analysis.groups)
    groups[g.size] = &g;
  REQUIRE(groups.count(131162));
  REQUIRE(groups.count(131072));
  CHECK(groups[131162]->count == 10);
  CHECK(groups[131162]->kinds.size() == 1);
  CHECK(groups[131072]->count == 8);
  CHECK(groups[131072]->allocator == "musl");
  checkKindGroups(memory, options, expected_groups);

  std::string text_text;
  llvm::raw_string_ostream text(text_text);
  writeSummaryText(**snapshot, analysis, TextOptions{}, text);
  INFO(text.str());
  CHECK(text.str().find("heaps: musl") != std::string::npos);
  CHECK(text.str().find("aws-chunked x10 (payload jpeg 6") != std::string::npos);
  CHECK(text.str().find("jpeg x8 (8 truncated)") != std::string::npos);

  // The report names musl as each buffer's allocator and validates against the schema.
  const std::string report = dir + "/report.json";
  CommandResult analyzed = runCommand("'" + toolPath() + "' analyze '" + core +
                                      "' --quiet --report '" + report + "' > /dev/null");
  INFO(analyzed.err);
  REQUIRE(analyzed.exit_code == 0);
  const nlohmann::json json = nlohmann::json::parse(readFileBytes(report));
  REQUIRE(json["buffers"].size() == manifest.size());
  for (const nlohmann::json &b : json["buffers"])
    CHECK(b["allocator"] == "musl");
  CommandResult valid =
      runCommand("/usr/bin/python3 '" + sourceDir() + "/scripts/validate_report.py' '" +
                 sourceDir() + "/docs/report.schema.json' '" + report + "'");
  INFO(valid.out << valid.err);
  CHECK(valid.exit_code == 0);
  snapshot->reset();
  std::filesystem::remove(core);
}
