// `dumpsift fleet rows` and `fleet report` (docs/fleet.md) over a fleet made by `fleet task` from
// the committed cores: every answer is checked against the reports themselves, read here with
// nlohmann-json, apart from the fleet layer's reader.
#include "dumpsift/fleet/records.h"
#include "fleet_inputs.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

namespace fs = std::filesystem;
using namespace dumpsift::test;

namespace {

using GroupKey = std::tuple<uint64_t, std::string>; // size, state

/// The size groups of a report.
std::set<GroupKey> groupsOf(const nlohmann::json &report) {
  std::set<GroupKey> groups;
  for (const nlohmann::json &g : report["groups"])
    groups.emplace(g["size"].get<uint64_t>(), g["state"].get<std::string>());
  return groups;
}

/// A fleet of two services over the committed cores, its tasks run but for one row:
///   shop:  hold_buffers at 1.2, story at 1.9 and 1.10, a text file and the story core cut in
///          half at 1.10;
///   queue: glibc_truth at 2.0 and 2.1, hold_buffers at 2.1 (never run: missing).
/// Versions 1.9 and 1.10 are ordered as version numbers only: as text, "1.10" < "1.9".
struct ReportedFleet {
  std::string dir;
  FleetDumps dumps;
  std::vector<FleetRow> rows;

  explicit ReportedFleet(const std::string &name) : dir(scratchDir(name)) {
    dumps = makeFleetDumps(dir);
    rows = {{"story-1.9", dumps.story, "shop", "1.9"},
            {"story-1.10", dumps.story, "shop", "1.10"},
            {"hold-1.2", dumps.hold_buffers, "shop", "1.2"},
            {"notes", dumps.notes, "shop", "1.10"},
            {"story-cut", dumps.story_cut, "shop", "1.10"},
            {"glibc-2.0", dumps.glibc_truth, "queue", "2.0"},
            {"glibc-2.1", dumps.glibc_truth, "queue", "2.1"},
            {"hold-2.1", dumps.hold_buffers, "queue", "2.1"}};
    writeManifest(dir + "/fleet.jsonl", rows);
    for (size_t i = 0; i + 1 < rows.size(); ++i)
      REQUIRE(runTool(dir, "fleet task fleet.jsonl --out out --html --index " + std::to_string(i))
                  .exit_code == 0);
  }

  nlohmann::json report(const std::string &id) const {
    return readJsonFile(dir + "/out/" + id + ".report.json");
  }
};

} // namespace

TEST_CASE("versions compare as version numbers through their key") {
  using dumpsift::versionKey;
  CHECK(versionKey("1.9") < versionKey("1.10"));
  CHECK(versionKey("1.2") < versionKey("1.10"));
  CHECK(versionKey("1.10") < versionKey("1.10-rc1"));
  CHECK(versionKey("1.10-rc1") < versionKey("2.0"));
  CHECK(versionKey("2.0") < versionKey("10.0"));
  CHECK(versionKey("v1.01") == versionKey("v1.1"));
  CHECK(versionKey("1.9") == "011.019");
}

TEST_CASE("fleet rows prints each dump's rows: its outcome, labels, kinds, groups and findings "
          "as its report says") {
  ReportedFleet fleet("fleet_rows");
  CommandResult r = runTool(fleet.dir, "fleet rows out");
  REQUIRE(r.exit_code == 0);
  std::map<std::string, nlohmann::json> dumps;
  std::map<std::string, std::set<GroupKey>> groups;
  std::map<std::string, std::map<std::string, nlohmann::json>> kinds;
  std::map<std::string, std::vector<std::string>> findings;
  std::map<std::string, std::map<std::string, std::string>> labels;
  size_t lines = 0;
  for (size_t at = 0; at < r.out.size(); ++lines) {
    const size_t end = r.out.find('\n', at);
    REQUIRE(end != std::string::npos);
    const nlohmann::json row = nlohmann::json::parse(r.out.substr(at, end - at));
    at = end + 1;
    const std::string table = row["table"], id = row["id"];
    if (table == "dumps")
      dumps[id] = row;
    else if (table == "groups")
      CHECK(
          groups[id].emplace(row["size"].get<uint64_t>(), row["state"].get<std::string>()).second);
    else if (table == "kinds")
      kinds[id][row["kind"]] = {{"count", row["count"]}, {"bytes", row["bytes"]}};
    else if (table == "findings")
      findings[id].push_back(row["type"]);
    else if (table == "labels")
      labels[id][row["key"]] = row["value"];
    else
      CHECK(table == "group_kinds");
  }
  CHECK(lines > 0);
  REQUIRE(dumps.size() == fleet.rows.size());
  for (const FleetRow &row : fleet.rows) {
    INFO(row.id);
    const nlohmann::json &d = dumps[row.id];
    CHECK(d["service"] == row.service);
    CHECK(d["version"] == row.version);
    CHECK(labels[row.id] ==
          std::map<std::string, std::string>{{"service", row.service}, {"version", row.version}});
    if (row.id == "notes" || row.id == "hold-2.1") {
      CHECK(d["outcome"] == (row.id == "notes" ? "bad-input" : "missing"));
      CHECK(d["error"] == (row.id == "notes"
                               ? readJsonFile(fleet.dir + "/out/notes.status.json")["error"]
                               : nlohmann::json("not run")));
      CHECK(d["report"].is_null());
      CHECK(groups[row.id].empty());
      continue;
    }
    const nlohmann::json report = fleet.report(row.id);
    CHECK(d["outcome"] == (row.id == "story-cut" ? "truncated" : "ok"));
    CHECK(d["buffers"] == report["summary"]["buffers"]);
    CHECK(d["buffer_bytes"] == report["summary"]["buffer_bytes"]);
    CHECK(d["page"] == fleet.dir + "/out/" + row.id + ".html");
    CHECK(groups[row.id] == groupsOf(report));
    std::map<std::string, nlohmann::json> by_kind;
    for (const auto &[kind, tally] : report["summary"]["by_kind"].items())
      by_kind[kind] = tally;
    CHECK(kinds[row.id] == by_kind);
    std::vector<std::string> types;
    for (const nlohmann::json &f : report["findings"])
      types.push_back(f["type"]);
    CHECK(findings[row.id] == types);
  }
  CHECK(dumps["story-cut"]["missing_bytes"] ==
        fleet.report("story-cut")["dump"]["truncated"]["missing_bytes"]);
}

TEST_CASE("fleet report answers from SQLite: outcomes, recurring groups since their first "
          "version, groups new in a version, bytes per kind and version, waste per type") {
  ReportedFleet fleet("fleet_report");
  CommandResult r =
      runTool(fleet.dir, "fleet report out --db fleet.sqlite --json fleet.json --html fleet.html");
  REQUIRE(r.exit_code == 0);
  const nlohmann::json answers = readJsonFile(fleet.dir + "/fleet.json");

  CHECK(answers["outcome_counts"] ==
        nlohmann::json({{"bad-input", 1}, {"missing", 1}, {"ok", 5}, {"truncated", 1}}));
  for (const nlohmann::json &o : answers["outcomes"])
    if (o["id"] == "notes")
      CHECK(o["error"] == readJsonFile(fleet.dir + "/out/notes.status.json")["error"]);
  CHECK(r.out.find("fleet: 8 dumps: 5 ok, 1 truncated, 1 bad-input, 0 gave-up, 1 missing\n") == 0);

  // shop: the story core's groups recur in 1.9 and 1.10; those hold_buffers holds too, from 1.2.
  const std::set<GroupKey> story = groupsOf(fleet.report("story-1.9"));
  const std::set<GroupKey> hold = groupsOf(fleet.report("hold-1.2"));
  const std::set<GroupKey> glibc = groupsOf(fleet.report("glibc-2.0"));
  std::map<std::pair<std::string, GroupKey>, nlohmann::json> recurring;
  for (const nlohmann::json &g : answers["recurring_groups"])
    recurring[{g["service"], {g["size"].get<uint64_t>(), g["state"].get<std::string>()}}] = g;
  size_t expected = 0;
  for (const GroupKey &key : story) {
    INFO("shop group " << std::get<0>(key) << " " << std::get<1>(key));
    const bool in_hold = hold.count(key) != 0;
    REQUIRE(recurring.count({"shop", key}));
    const nlohmann::json &g = recurring[{"shop", key}];
    CHECK(g["dumps"] == (in_hold ? 3 : 2));
    CHECK(g["whole_dumps_since_first"] == g["dumps"]);
    CHECK(g["first_version"] == (in_hold ? "1.2" : "1.9"));
    CHECK(g["last_version"] == "1.10");
    CHECK(g["holders"].size() == g["dumps"]);
    CHECK(g["holders"][0]["id"] == "story-1.10");
    CHECK(g["holders"][0]["page"] == fleet.dir + "/out/story-1.10.html");
    ++expected;
  }
  for (const GroupKey &key : glibc) {
    REQUIRE(recurring.count({"queue", key}));
    CHECK(recurring[{"queue", key}]["dumps"] == 2);
    CHECK(recurring[{"queue", key}]["first_version"] == "2.0");
    ++expected;
  }
  CHECK(answers["recurring_groups"].size() == expected);

  // New in a version: shop 1.9 brings the story core's groups hold_buffers lacks; 1.10 and the
  // first versions bring none.
  std::set<GroupKey> new_in_1_9;
  for (const nlohmann::json &g : answers["new_groups"]) {
    CHECK(g["service"] == "shop");
    CHECK(g["version"] == "1.9");
    new_in_1_9.emplace(g["size"].get<uint64_t>(), g["state"].get<std::string>());
  }
  std::set<GroupKey> story_only;
  for (const GroupKey &key : story)
    if (!hold.count(key))
      story_only.insert(key);
  CHECK(new_in_1_9 == story_only);

  // Bytes per kind: shop 1.10 has one whole dump (the story core at 1.10), shop 1.9 one too.
  const nlohmann::json story_kinds = fleet.report("story-1.10")["summary"]["by_kind"];
  size_t kind_rows = 0;
  for (const nlohmann::json &k : answers["kind_bytes"])
    if (k["service"] == "shop" && k["version"] == "1.10") {
      CHECK(k["whole_dumps"] == 1);
      CHECK(k["bytes"] == story_kinds[k["kind"].get<std::string>()]["bytes"]);
      ++kind_rows;
    }
  CHECK(kind_rows == story_kinds.size());

  // Waste per finding type over the whole dumps, each type on its own.
  std::map<std::string, std::pair<uint64_t, uint64_t>> waste; // type -> findings, bytes
  for (const char *id : {"story-1.9", "story-1.10", "hold-1.2", "glibc-2.0", "glibc-2.1"}) {
    const nlohmann::json report = fleet.report(id);
    for (const nlohmann::json &f : report["findings"]) {
      ++waste[f["type"]].first;
      waste[f["type"]].second += f["bytes"].get<uint64_t>();
    }
  }
  REQUIRE(answers["waste_by_type"].size() == waste.size());
  for (const nlohmann::json &w : answers["waste_by_type"]) {
    CHECK(w["findings"] == waste[w["type"]].first);
    CHECK(w["bytes"] == waste[w["type"]].second);
  }
  for (const nlohmann::json &w : answers["top_waste"])
    CHECK(w["rank"].get<uint64_t>() <= 10);
  CHECK(fs::exists(fleet.dir + "/fleet.sqlite"));
}

TEST_CASE("the fleet database answers the documented queries in sqlite3, and loading a directory "
          "again replaces its dumps' rows") {
  ReportedFleet fleet("fleet_sqlite");
  if (!availableOrSkipped(runCommand("command -v sqlite3").exit_code == 0,
                          "sqlite3 is not installed (scripts/setup.sh installs it)"))
    return;
  REQUIRE(runTool(fleet.dir, "fleet report out --db fleet.sqlite --json first.json -q").exit_code ==
          0);
  auto sql = [&](const std::string &query) {
    CommandResult r =
        runCommand("cd '" + fleet.dir + "' && sqlite3 fleet.sqlite \"" + query + "\"");
    INFO(query << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
  };
  const std::string groups_before = sql("SELECT COUNT(*) FROM groups");
  CHECK(sql("SELECT outcome, dumps FROM outcome_counts") ==
        "bad-input|1\nmissing|1\nok|5\ntruncated|1\n");
  CHECK(sql("SELECT first_version FROM recurring_groups WHERE service = 'shop' AND dumps = 2 "
            "GROUP BY first_version") == "1.9\n");

  // The missing row runs; loading again replaces every dump's rows and adds none twice.
  REQUIRE(runTool(fleet.dir, "fleet task fleet.jsonl --out out --index 7").exit_code == 0);
  REQUIRE(runTool(fleet.dir, "fleet report out --db fleet.sqlite -q").exit_code == 0);
  CHECK(sql("SELECT outcome, dumps FROM outcome_counts") == "bad-input|1\nok|6\ntruncated|1\n");
  const size_t hold_groups = groupsOf(fleet.report("hold-2.1")).size();
  CHECK(std::stoul(sql("SELECT COUNT(*) FROM groups")) == std::stoul(groups_before) + hold_groups);
  CHECK(sql("SELECT COUNT(*) FROM dumps") == "8\n");

  // A file of another schema is refused, and left as it is.
  sql("PRAGMA user_version = 7");
  CommandResult refused = runTool(fleet.dir, "fleet report out --db fleet.sqlite");
  CHECK(refused.exit_code == 2);
  CHECK(refused.err == "dumpsift: error: 'fleet.sqlite': not a fleet database of this dumpsift "
                       "(its user_version is 7, not 1): give another --db, or delete it and load "
                       "the directories again\n");
}

TEST_CASE("fleet report: a directory that fleet task did not write is an error naming it") {
  const std::string dir = scratchDir("fleet_report_not_fleet");
  fs::create_directories(dir + "/empty");
  CommandResult r = runTool(dir, "fleet report empty");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dumpsift: error: 'empty': not a fleet directory: it has no manifest.jsonl "
                 "(`dumpsift fleet task --out DIR` writes it)\n");
}
