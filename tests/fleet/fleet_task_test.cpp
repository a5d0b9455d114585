// `dumpsift fleet task` and `fleet status` (docs/fleet.md) run on the committed cores, as a batch
// engine would run them: one task per index, with the exit codes, statuses and reports the
// contract gives.
#include "dumpsift/support/sizes.h"
#include "fleet_inputs.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <sys/stat.h>

namespace fs = std::filesystem;
using namespace dumpsift::test;

namespace {

/// A fleet in a fresh scratch directory: its dumps and a manifest of five rows over them.
struct SmallFleet {
  std::string dir, manifest, out;
  FleetDumps dumps;
  std::vector<FleetRow> rows;

  explicit SmallFleet(const std::string &name) : dir(scratchDir(name)) {
    dumps = makeFleetDumps(dir);
    rows = {{"story-1.9", dumps.story, "shop", "1.9"},
            {"hold-1.2", dumps.hold_buffers, "shop", "1.2"},
            {"notes", dumps.notes, "shop", "1.10"},
            {"story-cut", dumps.story_cut, "shop", "1.10"},
            {"glibc-2.0", dumps.glibc_truth, "queue", "2.0"}};
    manifest = dir + "/fleet.jsonl";
    out = dir + "/out";
    writeManifest(manifest, rows);
  }

  CommandResult task(const std::string &args) const {
    return runTool(dir, "fleet task fleet.jsonl --out out " + args);
  }
  nlohmann::json status(const std::string &id) const {
    return readJsonFile(out + "/" + id + ".status.json");
  }
};

/// What `analyze` prints on stderr for `dump` (its one-line error), without "dumpsift: error: ".
std::string analyzeError(const std::string &dump) {
  CommandResult r = runTool(".", "analyze '" + dump + "'");
  REQUIRE(r.exit_code == 2);
  std::string line = r.err.substr(0, r.err.find('\n'));
  REQUIRE(line.rfind("dumpsift: error: ", 0) == 0);
  return line.substr(std::string("dumpsift: error: ").size());
}

} // namespace

TEST_CASE("fleet task writes its row's report as analyze --label writes it, and a status") {
  SmallFleet fleet("fleet_task_row");
  CommandResult r = fleet.task("--index 0");
  REQUIRE(r.exit_code == 0);
  CHECK(r.err == "dumpsift fleet task: row 0 (story-1.9): ok, attempt 1 of 3\n");

  CommandResult analyzed =
      runTool(fleet.dir, "analyze '" + fleet.dumps.story +
                             "' --label service=shop --label version=1.9 --report expected.json");
  REQUIRE(analyzed.exit_code == 0);
  CHECK(readText(fleet.out + "/story-1.9.report.json") == readText(fleet.dir + "/expected.json"));
  CHECK(readJsonFile(fleet.out + "/story-1.9.report.json")["labels"] ==
        nlohmann::json({{"service", "shop"}, {"version", "1.9"}}));

  const nlohmann::json status = fleet.status("story-1.9");
  CHECK(status == nlohmann::json({{"id", "story-1.9"},
                                  {"row", 0},
                                  {"dump", fleet.dumps.story},
                                  {"outcome", "ok"},
                                  {"attempts", 1}}));
  // The directory holds a copy of the manifest: `fleet report` reads the rows from it.
  CHECK(readText(fleet.out + "/manifest.jsonl") == readText(fleet.manifest));
}

TEST_CASE("fleet task: a file that is not a dump is final bad-input after one attempt, a cut "
          "dump is final truncated, and a final row is skipped") {
  SmallFleet fleet("fleet_task_final");
  CommandResult bad = fleet.task("--index 2");
  CHECK(bad.exit_code == 0);
  const nlohmann::json bad_status = fleet.status("notes");
  CHECK(bad_status["outcome"] == "bad-input");
  CHECK(bad_status["attempts"] == 1);
  CHECK(bad_status["error"] == analyzeError(fleet.dumps.notes));
  CHECK(!fs::exists(fleet.out + "/notes.report.json"));

  CommandResult cut = fleet.task("--index 3");
  CHECK(cut.exit_code == 0);
  const nlohmann::json cut_status = fleet.status("story-cut");
  CHECK(cut_status["outcome"] == "truncated");
  const nlohmann::json truncated =
      readJsonFile(fleet.out + "/story-cut.report.json")["dump"]["truncated"];
  REQUIRE(truncated.is_object());
  CHECK(cut_status["error"] ==
        "the dump is truncated: the file ends at byte " +
            dumpsift::groupedDigits(truncated["file_size"].get<uint64_t>()) + " of " +
            dumpsift::groupedDigits(truncated["expected_size"].get<uint64_t>()) + "; " +
            dumpsift::groupedDigits(truncated["missing_bytes"].get<uint64_t>()) +
            " bytes of memory are missing");

  // Again: nothing runs, nothing changes.
  struct stat before {};
  REQUIRE(stat((fleet.out + "/story-cut.report.json").c_str(), &before) == 0);
  CommandResult again = fleet.task("--index 3");
  CHECK(again.exit_code == 0);
  CHECK(again.err.find("truncated, final already") != std::string::npos);
  CHECK(fleet.status("story-cut") == cut_status);
  struct stat after {};
  REQUIRE(stat((fleet.out + "/story-cut.report.json").c_str(), &after) == 0);
  CHECK(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
  CHECK(after.st_ino == before.st_ino);
}

TEST_CASE("fleet task: --stride covers every row once, --index-env reads the engine's index") {
  SmallFleet fleet("fleet_task_stride");
  // Without the variable the task is a usage error; with it, task 1 of 2 takes rows 1 and 3.
  CommandResult unset = runTool(fleet.dir, "fleet task fleet.jsonl --out out --index-env "
                                           "FLEET_TEST_UNSET_INDEX --stride 2");
  CHECK(unset.exit_code == 2);
  CHECK(unset.err == "dumpsift: error: --index-env: $FLEET_TEST_UNSET_INDEX is not set\n");
  CommandResult first =
      runCommand("cd '" + fleet.dir + "' && JOB_COMPLETION_INDEX=1 '" + toolPath() +
                 "' fleet task fleet.jsonl --out out --index-env "
                 "JOB_COMPLETION_INDEX --stride 2");
  CHECK(first.exit_code == 0);
  CHECK(first.err == "dumpsift fleet task: row 1 (hold-1.2): ok, attempt 1 of 3\n"
                     "dumpsift fleet task: row 3 (story-cut): truncated, attempt 1 of 3: " +
                         fleet.status("story-cut")["error"].get<std::string>() + "\n");
  CommandResult zero =
      runCommand("cd '" + fleet.dir + "' && JOB_COMPLETION_INDEX=0 '" + toolPath() +
                 "' fleet task fleet.jsonl --out out --index-env "
                 "JOB_COMPLETION_INDEX --stride 2");
  CHECK(zero.exit_code == 0);
  for (const FleetRow &row : fleet.rows)
    CHECK(fleet.status(row.id)["attempts"] == 1);
  CHECK(runTool(fleet.dir, "fleet status fleet.jsonl --out out --array").out == "\n");
}

TEST_CASE("fleet task: a timeout stops the analysis and exits 124, and the last attempt allowed "
          "gives the row up") {
  SmallFleet fleet("fleet_task_timeout");
  CommandResult first = fleet.task("--index 0 --timeout 0.001");
  CHECK(first.exit_code == 124);
  nlohmann::json status = fleet.status("story-1.9");
  CHECK(status["outcome"] == "timeout");
  CHECK(status["attempts"] == 1);
  CHECK(status["error"] == "the analysis ran past the timeout of 0.001 s");
  // Nothing half-written is left.
  CHECK(listDir(fleet.out) ==
        std::vector<std::string>{".fleet.lock", "manifest.jsonl", "story-1.9.status.json"});
  CHECK(runTool(fleet.dir, "fleet status fleet.jsonl --out out --array").out == "0-4\n");

  CommandResult second = fleet.task("--index 0 --timeout 0.001 --max-attempts 2");
  CHECK(second.exit_code == 0);
  status = fleet.status("story-1.9");
  CHECK(status["outcome"] == "gave-up");
  CHECK(status["attempts"] == 2);
  CHECK(status["error"] ==
        "gave up after 2 attempts; the last: the analysis ran past the timeout of 0.001 s");
  CHECK(fleet.task("--index 0").err.find("gave-up, final already") != std::string::npos);
}

TEST_CASE("fleet task: a row whose status counts every attempt allowed is given up without "
          "running") {
  SmallFleet fleet("fleet_task_attempts");
  for (int attempt = 1; attempt <= 3; ++attempt)
    REQUIRE(fleet.task("--index 1 --timeout 0.001 --max-attempts 9").exit_code == 124);
  REQUIRE(fleet.status("hold-1.2")["attempts"] == 3);
  CommandResult given_up = fleet.task("--index 1 --max-attempts 3");
  CHECK(given_up.exit_code == 0);
  CHECK(fleet.status("hold-1.2")["outcome"] == "gave-up");
  CHECK(fleet.status("hold-1.2")["attempts"] == 3);
  CHECK(!fs::exists(fleet.out + "/hold-1.2.report.json"));
}

TEST_CASE("fleet status lists the rows without a final status, as sbatch --array takes them") {
  SmallFleet fleet("fleet_status");
  REQUIRE(fleet.task("--index 0").exit_code == 0);
  REQUIRE(fleet.task("--index 2").exit_code == 0);
  REQUIRE(fleet.task("--index 4 --timeout 0.001").exit_code == 124);
  CommandResult listed = runTool(fleet.dir, "fleet status fleet.jsonl --out out");
  CHECK(listed.exit_code == 0);
  CHECK(listed.out == "5 rows of fleet.jsonl in out: 1 ok, 0 truncated, 1 bad-input, 0 gave-up, "
                      "3 to run (sbatch --array=1,3-4)\n"
                      "  row 1 (hold-1.2): not run\n"
                      "  row 3 (story-cut): not run\n"
                      "  row 4 (glibc-2.0): timeout after 1 attempt: the analysis ran past the "
                      "timeout of 0.001 s\n");
  CHECK(runTool(fleet.dir, "fleet status fleet.jsonl --out out --array").out == "1,3-4\n");
}

TEST_CASE("fleet task passes every analysis option to the analysis, and --html writes the page "
          "analyze --html writes") {
  SmallFleet fleet("fleet_task_options");
  const std::string options = "--min-size 4K --max-size 2M --kind jpeg --kind zero --state used "
                              "--walker glibc --no-region-scan --full-hash --group-by size,kind "
                              "--threads 2";
  REQUIRE(fleet.task("--index 0 --html " + options).exit_code == 0);
  REQUIRE(runTool(fleet.dir, "analyze '" + fleet.dumps.story + "' " + options +
                                 " --label service=shop --label version=1.9 --report "
                                 "expected.json --html expected.html")
              .exit_code == 0);
  const nlohmann::json report = readJsonFile(fleet.out + "/story-1.9.report.json");
  CHECK(report["options"] == readJsonFile(fleet.dir + "/expected.json")["options"]);
  CHECK(report["options"]["min_size"] == 4096);
  CHECK(readText(fleet.out + "/story-1.9.report.json") == readText(fleet.dir + "/expected.json"));
  CHECK(readText(fleet.out + "/story-1.9.html") == readText(fleet.dir + "/expected.html"));
}

TEST_CASE("fleet task: a bad manifest, a row past the end, another manifest's directory and a "
          "missing index are usage errors (exit 2, one line)") {
  SmallFleet fleet("fleet_task_usage");
  std::ofstream(fleet.dir + "/bad.jsonl")
      << "{\"id\": \"a\", \"dump\": \"a.core\"}\n{\"id\": \"b\", \"dump\": \"b.core\", "
         "\"lables\": {}}\n";
  CommandResult bad = runTool(fleet.dir, "fleet task bad.jsonl --out out --index 0");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err == "dumpsift: error: 'bad.jsonl': line 2: unknown field \"lables\" (known: id, "
                   "dump, labels)\n");

  std::ofstream(fleet.dir + "/dup.jsonl")
      << "{\"id\": \"a\", \"dump\": \"a.core\"}\n{\"id\": \"a\", \"dump\": \"b.core\"}\n";
  CHECK(runTool(fleet.dir, "fleet task dup.jsonl --out out --index 0").err ==
        "dumpsift: error: 'dup.jsonl': line 2: id \"a\" is on an earlier line too\n");

  CommandResult past = fleet.task("--index 5");
  CHECK(past.exit_code == 2);
  CHECK(past.err == "dumpsift: error: row 5: 'fleet.jsonl' has rows 0 to 4\n");

  REQUIRE(fleet.task("--index 0").exit_code == 0);
  std::ofstream(fleet.dir + "/other.jsonl")
      << "{\"id\": \"story\", \"dump\": \"" << fleet.dumps.story << "\"}\n";
  CommandResult other = runTool(fleet.dir, "fleet task other.jsonl --out out --index 0");
  CHECK(other.exit_code == 2);
  CHECK(other.err == "dumpsift: error: 'out': it holds the rows of another manifest "
                     "('out/manifest.jsonl' differs from 'other.jsonl'): give another --out\n");

  CommandResult no_index = runTool(fleet.dir, "fleet task fleet.jsonl --out out");
  CHECK(no_index.exit_code == 2);
  CHECK(no_index.err ==
        "dumpsift: error: 'dumpsift fleet task': give --index N or --index-env VAR\n");
}
