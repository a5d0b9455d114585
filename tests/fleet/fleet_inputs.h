// A small fleet for the fleet tests, from the committed cores (fixtures/cores): a manifest over
// them with labels, a file that is not a dump, and the story core cut in half.
#pragma once

#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dumpsift::test {

/// One manifest row as the tests write it.
struct FleetRow {
  std::string id;
  std::string dump; // absolute
  std::string service, version;
};

/// The dumps of the small fleet, in `dir`: the unpacked story, hold_buffers and glibc_truth cores,
/// `notes.txt` (text, not a dump) and `story-cut.core` (the story core's first half).
struct FleetDumps {
  std::string story, hold_buffers, glibc_truth, notes, story_cut;
};
inline FleetDumps makeFleetDumps(const std::string &dir) {
  FleetDumps dumps;
  dumps.story = unpackedFixture("cores/story.core.xz");
  dumps.hold_buffers = unpackedFixture("cores/hold_buffers.core.xz");
  dumps.glibc_truth = unpackedFixture("cores/glibc_truth.core.xz");
  dumps.notes = dir + "/notes.txt";
  std::ofstream(dumps.notes) << "release notes, not a dump\n";
  dumps.story_cut = dir + "/story-cut.core";
  std::vector<uint8_t> story = readFileBytes(dumps.story);
  story.resize(story.size() / 2);
  writeFileBytes(dumps.story_cut, story);
  return dumps;
}

/// Writes the manifest of `rows` to `path`, one JSON object a line.
inline void writeManifest(const std::string &path, const std::vector<FleetRow> &rows) {
  std::ofstream out(path);
  for (const FleetRow &row : rows) {
    nlohmann::json line = {{"id", row.id}, {"dump", row.dump}};
    line["labels"] = nlohmann::json::object();
    if (!row.service.empty())
      line["labels"]["service"] = row.service;
    if (!row.version.empty())
      line["labels"]["version"] = row.version;
    out << line.dump() << "\n";
  }
  REQUIRE(out.good());
}

/// The JSON object in the file at `path` (REQUIREs that it parses).
inline nlohmann::json readJsonFile(const std::string &path) {
  std::ifstream in(path);
  INFO("cannot read " << path);
  REQUIRE(in.good());
  nlohmann::json value = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  REQUIRE(!value.is_discarded());
  return value;
}

} // namespace dumpsift::test
