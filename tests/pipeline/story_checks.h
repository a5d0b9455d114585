// Checks of an analysis of a story process (fixtures/programs/story.c) against what it printed,
// shared by the story's tests under each allocator.
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/support/hex.h"

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace dumpsift::test {

/// Buffers expected per (usable size, kind), as the story planted them.
using StoryGroups = std::map<std::pair<uint64_t, std::string>, uint64_t>;

/// Every planted buffer of `manifest` is in `analysis`: at its exact address and usable size,
/// used, owned by `walker`, of the printed kind and payload kind, and a JPEG slice is a cut JPEG.
/// Returns how many buffers of each size and kind were planted.
inline StoryGroups checkPlantedBuffers(const Analysis &analysis,
                                       const std::vector<nlohmann::json> &manifest,
                                       const std::string &walker) {
  std::map<uint64_t, const Buffer *> by_address;
  for (const Buffer &b : analysis.buffers)
    by_address[b.allocation.address] = &b;
  StoryGroups groups;
  for (const nlohmann::json &m : manifest) {
    const uint64_t address = *parseHexAddress(m["address"].get<std::string>());
    const uint64_t usable = m["usable_size"].get<uint64_t>();
    const std::string kind = m["kind"];
    INFO(m.dump());
    REQUIRE(by_address.count(address));
    const Buffer &b = *by_address[address];
    CHECK(b.allocation.size == usable);
    CHECK(b.allocation.state == AllocState::Used);
    CHECK(bufferSource(analysis, b) == walker);
    CHECK(kindName(b.content.kind) == kind);
    if (m.contains("payload_kind")) {
      const DetailValue *payload = b.content.details.get("payload_kind");
      REQUIRE(payload != nullptr);
      REQUIRE(std::holds_alternative<std::string>(*payload));
      CHECK(std::get<std::string>(*payload) == m["payload_kind"].get<std::string>());
    }
    if (m["name"] == "jpeg-slice") { // 128 KiB of a larger image: a truncated JPEG
      const DetailValue *complete = b.content.details.get("complete");
      REQUIRE(complete != nullptr);
      CHECK(std::get<bool>(*complete) == false);
    }
    if (m["name"] == "aws-final-chunk") { // written over a copy of the last 128 KiB frame
      const DetailValue *stale = b.content.details.get("stale_bytes");
      REQUIRE(stale != nullptr);
      // The 86-byte final chunk, then the rest of the copied frame (which ends in CRLF), then
      // whatever slack the allocator left behind it.
      CHECK(std::get<uint64_t>(*stale) >= m["requested"].get<uint64_t>() - 86);
      CHECK(std::get<uint64_t>(*stale) <= usable - 86);
      const DetailValue *stale_kind = b.content.details.get("stale_kind");
      REQUIRE(stale_kind != nullptr);
      CHECK(std::get<std::string>(*stale_kind) == "jpeg"); // the middle of an image
    }
    ++groups[{usable, kind}];
  }
  return groups;
}

/// With --group-by size,kind, each planted size and kind is one group of the planted count.
inline void checkKindGroups(const AddressSpace &memory, AnalyzeOptions options,
                            const StoryGroups &expected) {
  options.group_by = GroupBy::SizeKind;
  const Analysis by_kind = analyze(memory, options);
  for (const auto &[key, count] : expected) {
    INFO("size " << key.first << " kind " << key.second);
    bool found = false;
    for (const SizeGroup &g : by_kind.groups)
      if (g.size == key.first && g.kind && kindName(*g.kind) == key.second) {
        found = true;
        CHECK(g.count == count);
      }
    CHECK(found);
  }
}

} // namespace dumpsift::test
