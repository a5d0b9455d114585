// Stale content in large free blocks on a real process: fixtures/programs/stale_free.c frees a
// 520 KiB and a 900 KiB glibc block that held JPEGs and aws-chunked frames at offsets from 65 KiB
// on, and prints where each copy was. Dumped with gcore, analyze must report each free block with
// the copies it holds as stale_content, each at the offset and with the length the program printed.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/sniff/kinds.h"
#include "dumpsift/support/hex.h"
#include "support/dumps.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

TEST_CASE("analyze: stale JPEGs and aws-chunked frames inside free glibc blocks, at their offsets",
          "[live]") {
  if (!gcoreOrSkipped())
    return;
  LiveProcess process(fixtureProgram("stale_free"));
  REQUIRE(process.manifest().size() == 4);
  auto snap = dumpLive(process, "stale_free");
  AddressSpace memory(*snap);
  const Analysis analysis = analyze(memory, AnalyzeOptions{});
  size_t found = 0;
  for (const nlohmann::json &copy : process.manifest()) {
    INFO(copy.dump());
    const uint64_t block = *parseHexAddress(copy.at("block").get<std::string>());
    const Buffer *free_block = nullptr;
    for (const Buffer &b : analysis.buffers)
      if (b.allocation.address == block)
        free_block = &b;
    REQUIRE(free_block != nullptr);
    CHECK(free_block->allocation.state == AllocState::Free);
    CHECK(bufferSource(analysis, *free_block) == "glibc");
    const StaleContent *match = nullptr;
    for (const StaleContent &c : free_block->stale_content)
      if (c.offset == copy.at("offset").get<uint64_t>())
        match = &c;
    REQUIRE(match != nullptr);
    CHECK(kindName(match->kind) == copy.at("kind").get<std::string>());
    CHECK(match->length == copy.at("length").get<uint64_t>());
    // A JPEG's extent is the format's; a data frame without its stream's final chunk has none, so
    // its extent is an estimate: to the zeros calloc left behind it, the frame's length exactly.
    CHECK(match->estimated == (copy.at("kind") == "aws-chunked"));
    ++found;
  }
  CHECK(found == 4);
  // Each block holds the copies the program put there, and nothing else.
  size_t stale = 0;
  for (const Buffer &b : analysis.buffers)
    for (const nlohmann::json &copy : process.manifest())
      if (b.allocation.address == *parseHexAddress(copy.at("block").get<std::string>())) {
        stale += b.stale_content.size();
        break;
      }
  CHECK(stale == 4);
}
