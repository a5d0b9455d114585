// The fleet page (`dumpsift fleet report --html`, docs/fleet.md) in headless Chromium: the
// recurring groups link each dump's own page, each service's trend is drawn, and the page makes
// no request.
#include "browser.h"
#include "fleet/fleet_inputs.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

namespace fs = std::filesystem;
using namespace dumpsift::test;

TEST_CASE("the fleet page in Chromium links each dump's page from its recurring groups, draws "
          "each service's versions, lists the dumps not ok, and makes no request",
          "[browser]") {
  if (!chromiumOrSkipped())
    return;
  const std::string dir = scratchDir("html_fleet");
  const FleetDumps dumps = makeFleetDumps(dir);
  const std::vector<FleetRow> rows = {{"hold-1.2", dumps.hold_buffers, "shop", "1.2"},
                                      {"story-1.9", dumps.story, "shop", "1.9"},
                                      {"story-1.10", dumps.story, "shop", "1.10"},
                                      {"notes", dumps.notes, "shop", "1.10"},
                                      {"story-cut", dumps.story_cut, "shop", "1.10"},
                                      {"glibc-2.0", dumps.glibc_truth, "queue", "2.0"},
                                      {"glibc-2.1", dumps.glibc_truth, "queue", "2.1"}};
  writeManifest(dir + "/fleet.jsonl", rows);
  for (size_t i = 0; i < rows.size(); ++i)
    REQUIRE(runTool(dir, "fleet task fleet.jsonl --out out --html --index " + std::to_string(i))
                .exit_code == 0);
  REQUIRE(runTool(dir, "fleet report out --html fleet.html --json fleet.json -q").exit_code == 0);
  const nlohmann::json answers = readJsonFile(dir + "/fleet.json");

  const std::string page = dir + "/fleet.html";
  const nlohmann::json seen = loadInBrowser(dir, page, dir + "/fleet.png");
  requireQuietPage(seen, page);
  const nlohmann::json &facts = seen["facts"];
  INFO(facts.dump(2));
  CHECK(facts["title"] == "dumpsift fleet");
  CHECK(facts["scripts"] == 1);
  CHECK(facts["group_rows"] == answers["recurring_groups"].size());
  CHECK(facts["sorted_by_count"] == true);
  CHECK(facts["filter_shown"] == true);
  size_t every = 0;
  for (const nlohmann::json &g : answers["recurring_groups"])
    every += g["dumps"] == g["whole_dumps_since_first"];
  CHECK(facts["every_dump_groups"] == every);
  CHECK(facts["not_ok"] == nlohmann::json({"bad-input", "truncated"}));

  // Each link is relative to the page and reaches a dump's own page.
  std::set<std::string> linked;
  for (const nlohmann::json &href : facts["dump_links"]) {
    const std::string link = href;
    CHECK(link.rfind("out/", 0) == 0);
    CHECK(fs::exists(dir + "/" + link));
    linked.insert(link);
  }
  // The pages linked: the holders of the recurring groups, the dumps not ok, the top findings'.
  std::set<std::string> pages;
  auto add_page = [&](const nlohmann::json &entry) {
    if (entry["page"] != "")
      pages.insert(fs::relative(entry["page"].get<std::string>(), dir).string());
  };
  for (const nlohmann::json &g : answers["recurring_groups"])
    for (const nlohmann::json &holder : g["holders"])
      add_page(holder);
  for (const nlohmann::json &o : answers["outcomes"])
    if (o["outcome"] != "ok")
      add_page(o);
  for (const nlohmann::json &w : answers["top_waste"])
    add_page(w);
  CHECK(linked == pages);
  CHECK(linked.count("out/story-1.9.html"));
  CHECK(linked.count("out/story-cut.html"));

  // One chart per service; a bar per kind of each version with whole dumps, in version order.
  CHECK(facts["trend_charts"] == 2);
  std::vector<std::string> bars;
  for (const nlohmann::json &k : answers["kind_bytes"])
    bars.push_back(k["version"]);
  CHECK(facts["trend_bars"] == bars);
  CHECK(std::find(bars.begin(), bars.end(), "1.9") < std::find(bars.begin(), bars.end(), "1.10"));
}
