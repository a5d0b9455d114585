// The extraction's manifest (manifest.h): the JSON line of every file written, checked against the
// files on disk (sha256sum) and what the extraction recorded, and the report's `extracted` section.
#include "../../src/report/json_values.h"
#include "dumpsift/report/manifest.h"
#include "extract/extract_fixtures.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

TEST_CASE("manifest: one line per file written, with its path, size, SHA-256 and details") {
  Story s;
  const std::string dir = scratchDir("manifest-all") + "/out";
  Extraction result;
  llvm::Error e =
      extractBuffers(s.memory(), s.buffers, dir, ExtractOptions{}, writeManifest, result);
  REQUIRE_FALSE(static_cast<bool>(e));
  REQUIRE(result.files.size() == 5 + 1 + 2); // five buffers, one payload, two bodies

  std::vector<nlohmann::json> manifest = readJsonLines(dir + "/manifest.jsonl");
  REQUIRE(manifest.size() == result.files.size());
  for (size_t i = 0; i < manifest.size(); ++i) {
    const nlohmann::json &m = manifest[i];
    const ExtractedFile &f = result.files[i];
    INFO(m.dump());
    const std::string name = m["path"];
    CHECK(name == f.name);
    CHECK(fileBytes(dir, name).size() == m["size"].get<uint64_t>());
    CHECK(m["sha256"] == sha256sum(dir + "/" + name));
    CHECK(m["sha256"] == f.sha256);
    CHECK(m["role"] == roleName(f.role).str());
    CHECK(m["kind"] == kindName(f.kind).str());
    CHECK(m["address"] == "0x" + llvm::utohexstr(f.address, /*LowerCase=*/true));
    CHECK(m["offset"] == f.offset);
    CHECK(m.contains("details"));
    CHECK(m.contains("pieces") == (f.role != ExtractRole::Buffer));
    CHECK(m.contains("body") == (f.role == ExtractRole::Body));
    CHECK_FALSE(m.contains("addresses")); // only with dedupe
  }

  // The truncated JPEG: the manifest says so, and so do its details.
  const std::string half = "0x200000-" + std::to_string(s.jpeg.size() / 2) + ".jpg";
  bool found = false;
  for (const nlohmann::json &m : manifest)
    if (m["path"] == half) {
      found = true;
      CHECK(m["truncated"] == true);
      CHECK(m["details"]["truncated"] == true);
    }
  CHECK(found);

  // The report's section: the same objects, with the directory in the path.
  detail::Json section = detail::extractedJson(result);
  REQUIRE(section.size() == manifest.size());
  for (size_t i = 0; i < manifest.size(); ++i) {
    nlohmann::json line = manifest[i];
    line["path"] = dir + "/" + line["path"].get<std::string>();
    CHECK(nlohmann::json::parse(section[i].dump()) == line);
  }
}

TEST_CASE("manifest: with dedupe, each line lists every address that holds its bytes") {
  DedupeStory s;
  const std::string dir = scratchDir("manifest-dedupe");
  ExtractOptions options;
  options.dedupe = true;
  Extraction result;
  REQUIRE_FALSE(static_cast<bool>(
      extractBuffers(s.memory(), s.buffers, dir, options, writeManifest, result)));
  std::vector<nlohmann::json> manifest = readJsonLines(dir + "/manifest.jsonl");
  REQUIRE(manifest.size() == 2);
  CHECK(manifest[0]["addresses"] == nlohmann::json({"0x10000", "0x20000", "0x40000"}));
  CHECK(manifest[1]["addresses"] == nlohmann::json({"0x30000"}));
}
