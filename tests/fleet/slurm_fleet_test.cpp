// `dumpsift fleet` on a real Slurm cluster (docs/fleet.md): a localhost cluster of two nodes runs
// scripts/fleet-slurm.sh as a job array over dumps of a fixture program in two services and three
// versions, a file that is not a dump and a truncated dump; one node is killed while it analyzes
// a dump, one analysis is SIGKILLed as the OOM killer would, and the fleet report answers.
#include "local_slurm.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace dumpsift::test;

namespace {

/// One dump of the fleet, made from fixtures/programs/fleet_service.c.
struct ServiceDump {
  std::string id, service, version;
  int cache_mib = 0; // a JSON cache that makes the analysis take a second or two
};

/// The manifest rows: three dumps with a cache first (the tasks killed are among them), the
/// other whole dumps (two of each service and version in all), a file that is not a dump, and an
/// api 1.2 dump cut in half.
const std::vector<ServiceDump> kDumps = {
    {"api-1.2-a", "api", "1.2", 64},   {"worker-1.1-a", "worker", "1.1", 64},
    {"api-1.1-a", "api", "1.1", 64},   {"api-1.0-a", "api", "1.0"},
    {"api-1.0-b", "api", "1.0"},       {"api-1.1-b", "api", "1.1"},
    {"api-1.2-b", "api", "1.2"},       {"worker-1.0-a", "worker", "1.0"},
    {"worker-1.0-b", "worker", "1.0"}, {"worker-1.1-b", "worker", "1.1"},
    {"worker-1.2-a", "worker", "1.2"}, {"worker-1.2-b", "worker", "1.2"},
    {"api-1.2-cut", "api", "1.2"}};
constexpr size_t kCachedRows = 3;
const std::string kNotADump = "release-notes";

/// The text of a file ("" when there is none).
std::string fileText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The status of manifest row `id` in `out` (null when it has none yet).
nlohmann::json statusOf(const std::string &out, const std::string &id) {
  const std::string text = fileText(out + "/" + id + ".status.json");
  return text.empty() ? nlohmann::json() : nlohmann::json::parse(text, nullptr, false);
}

/// The jobcomp records (one line per job end) of array job `array`: index -> its JobStates, in
/// order.
std::map<int, std::vector<std::string>> jobEnds(const std::string &jobcomp,
                                                const std::string &array) {
  std::map<int, std::vector<std::string>> ends;
  std::istringstream lines(fileText(jobcomp));
  for (std::string line; std::getline(lines, line);) {
    auto field = [&](const std::string &name) {
      const size_t at = line.find(" " + name + "=");
      if (at == std::string::npos)
        return std::string();
      const size_t from = at + name.size() + 2;
      return line.substr(from, line.find(' ', from) - from);
    };
    if (field("ArrayJobId") == array)
      ends[std::stoi(field("ArrayTaskId"))].push_back(field("JobState"));
  }
  return ends;
}

using Clock = std::chrono::steady_clock;

} // namespace

TEST_CASE("fleet tasks on a localhost Slurm cluster of two nodes: a bad file, a lost node, a "
          "SIGKILLed analysis, and the fleet report",
          "[cluster]") {
  const Clock::time_point start = Clock::now();
  if (!gcoreOrSkipped())
    return;
  if (!availableOrSkipped(LocalSlurm::installed(),
                          "Slurm and munge are not installed (scripts/setup.sh installs "
                          "slurmctld, slurmd, slurm-client and munge)"))
    return;
  const std::string dir = scratchDir("cluster_fleet");
  const std::string out = dir + "/out";

  // The dumps, in parallel processes first (the caches take a moment to write), then gcore'd.
  uint64_t session_cache_size = 0;
  {
    std::vector<std::unique_ptr<LiveProcess>> processes;
    for (const ServiceDump &d : kDumps) {
      std::vector<std::string> args = {d.service, d.version};
      if (d.cache_mib)
        args.push_back(std::to_string(d.cache_mib));
      processes.push_back(std::make_unique<LiveProcess>(fixtureProgram("fleet_service"), args));
      for (const nlohmann::json &line : processes.back()->manifest())
        if (line["name"] == "session_cache")
          session_cache_size = line["usable_size"];
    }
    for (size_t i = 0; i < kDumps.size(); ++i)
      processes[i]->gcore(dir + "/" + kDumps[i].id + ".core");
  }
  REQUIRE(session_cache_size > 0);
  const std::string cut = dir + "/api-1.2-cut.core";
  fs::resize_file(cut, fs::file_size(cut) / 2);
  std::ofstream(dir + "/" + kNotADump + ".txt") << "Release notes of api 1.1: not a dump\n";

  std::ofstream manifest(dir + "/fleet.jsonl");
  auto row = [&](const std::string &id, const std::string &dump, const std::string &service,
                 const std::string &version) {
    manifest << nlohmann::json({{"id", id},
                                {"dump", dump},
                                {"labels", {{"service", service}, {"version", version}}}})
                    .dump()
             << "\n";
  };
  for (size_t i = 0; i + 1 < kDumps.size(); ++i)
    row(kDumps[i].id, kDumps[i].id + ".core", kDumps[i].service, kDumps[i].version);
  const size_t bad_row = kDumps.size() - 1;
  row(kNotADump, kNotADump + ".txt", "api", "1.1");
  row("api-1.2-cut", "api-1.2-cut.core", "api", "1.2");
  manifest.close();
  const size_t rows = kDumps.size() + 1;
  INFO("dumps made in " << std::chrono::duration<double>(Clock::now() - start).count() << " s");

  LocalSlurm cluster(dir + "/slurm");
  // scripts/fleet-slurm.sh as docs/fleet.md submits it, over the rows `array` names.
  auto submit = [&](const std::string &rows_spec) {
    CommandResult r =
        cluster.run("cd '" + dir + "' && sbatch --parsable --array=" + rows_spec + " -o '" + dir +
                    "/slurm-%A_%a.out' --export=ALL,DUMPSIFT='" + toolPath() +
                    "',FLEET_MANIFEST='" + dir + "/fleet.jsonl',FLEET_OUT='" + out +
                    "',FLEET_TIMEOUT=2m '" + sourceDir() + "/scripts/fleet-slurm.sh' 2>&1");
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    return r.out.substr(0, r.out.find_first_of(";\n"));
  };
  const std::string array = submit("0-" + std::to_string(rows - 1));

  // While the array runs: the first cached dump seen analyzed on node2 loses its node, the first
  // seen analyzed on node1 loses its analysis (SIGKILL, as the OOM killer sends it).
  std::optional<size_t> node_row, killed_row;
  std::string node_job;
  std::vector<std::string> node_victims;
  const Clock::time_point kill_deadline = Clock::now() + std::chrono::seconds(60);
  while ((!node_row || !killed_row) && Clock::now() < kill_deadline) {
    for (size_t r = 0; r < kCachedRows; ++r) {
      if (r == node_row || r == killed_row)
        continue;
      const nlohmann::json status = statusOf(out, kDumps[r].id);
      if (!status.is_object() || status["outcome"] != "running")
        continue;
      // The task: its job id and node.
      std::istringstream task(
          cluster.run("squeue -h -r -j " + array + "_" + std::to_string(r) + " -o '%A %N %T'").out);
      std::string job, node, state;
      if (!(task >> job >> node >> state) || state != "RUNNING")
        continue;
      // Its analysis, once the task has started it.
      std::vector<pid_t> analyses;
      for (pid_t pid : allPids()) {
        const std::vector<std::string> args = procStrings(pid, "cmdline");
        if (args.size() > 2 && args[0] == toolPath() && args[1] == "analyze" &&
            hasEnvironment(pid, "SLURM_JOB_ID=" + job))
          analyses.push_back(pid);
      }
      if (analyses.empty())
        continue;
      if (node == "node2" && !node_row) {
        node_victims = cluster.killNode("node2", job);
        node_row = r;
        node_job = job;
      } else if (node == "node1" && !killed_row) {
        for (pid_t pid : analyses) {
          REQUIRE(procStrings(pid, "cmdline")[2] == dir + "/" + kDumps[r].id + ".core");
          killChecked(pid);
        }
        killed_row = r;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  INFO("killed with node2: " << (node_victims.empty() ? "" : node_victims.front()));
  REQUIRE(node_row);
  REQUIRE(killed_row);

  // Slurm notices the lost node (3 to 5 x SlurmdTimeout), requeues its task and holds it until a
  // begin time, which is released; node2 comes back.
  cluster.waitUntil(
      [&] {
        return cluster.run("squeue -h -j " + node_job + " -o %T").out.rfind("PENDING", 0) == 0;
      },
      90, "requeued the task of node2");
  REQUIRE(cluster.run("scontrol update JobId=" + node_job + " StartTime=now").exit_code == 0);
  cluster.startNode("node2");
  cluster.waitUntil([&] { return cluster.run("squeue -h").out.empty(); }, 60,
                    "done with the array");

  // The SIGKILLed row is the one row still to run; one resubmission finishes it.
  CommandResult status = runTool(dir, "fleet status fleet.jsonl --out out");
  CHECK(status.out.find("1 to run (sbatch --array=" + std::to_string(*killed_row) + ")") !=
        std::string::npos);
  CHECK(status.out.find("crashed after 1 attempt: the analysis died by signal 9") !=
        std::string::npos);
  const std::string todo = runTool(dir, "fleet status fleet.jsonl --out out --array").out;
  REQUIRE(todo == std::to_string(*killed_row) + "\n");
  const std::string second_array = submit(todo.substr(0, todo.size() - 1));
  cluster.waitUntil([&] { return cluster.run("squeue -h").out.empty(); }, 60,
                    "done with the resubmission");
  CHECK(runTool(dir, "fleet status fleet.jsonl --out out --array").out == "\n");

  // What the engine recorded, and what the statuses say.
  const auto ends = jobEnds(cluster.dir() + "/jobcomp.txt", array);
  INFO("jobcomp:\n" << fileText(cluster.dir() + "/jobcomp.txt"));
  CHECK(ends.at(int(bad_row)) == std::vector<std::string>{"COMPLETED"});
  CHECK(ends.at(int(*node_row)) == std::vector<std::string>{"NODE_FAIL", "COMPLETED"});
  CHECK(ends.at(int(*killed_row)) == std::vector<std::string>{"FAILED"});
  CHECK(jobEnds(cluster.dir() + "/jobcomp.txt", second_array).at(int(*killed_row)) ==
        std::vector<std::string>{"COMPLETED"});
  const nlohmann::json bad = statusOf(out, kNotADump);
  CHECK(bad["outcome"] == "bad-input");
  CHECK(bad["attempts"] == 1);
  CHECK(statusOf(out, "api-1.2-cut")["outcome"] == "truncated");
  const nlohmann::json requeued = statusOf(out, kDumps[*node_row].id);
  CHECK(requeued["outcome"] == "ok");
  CHECK(requeued["attempts"] == 2); // the attempt the node took with it, and the one after
  const nlohmann::json resubmitted_status = statusOf(out, kDumps[*killed_row].id);
  CHECK(resubmitted_status["outcome"] == "ok");
  CHECK(resubmitted_status["attempts"] == 2);
  for (size_t r = 0; r + 1 < kDumps.size(); ++r)
    CHECK(statusOf(out, kDumps[r].id)["outcome"] == "ok");

  // The fleet report: the session cache recurs in every whole dump of 1.1 and later, first seen
  // in 1.1; the truncated dump and the bad file are flagged.
  CommandResult report = runTool(dir, "fleet report out --db fleet.sqlite --json fleet.json "
                                      "--html fleet.html");
  REQUIRE(report.exit_code == 0);
  const nlohmann::json answers = nlohmann::json::parse(fileText(dir + "/fleet.json"));
  CHECK(answers["outcome_counts"] ==
        nlohmann::json({{"bad-input", 1}, {"ok", 12}, {"truncated", 1}}));
  for (const std::string service : {"api", "worker"}) {
    INFO(service);
    size_t whole_since_1_1 = 0;
    for (size_t r = 0; r + 1 < kDumps.size(); ++r)
      whole_since_1_1 += kDumps[r].service == service && kDumps[r].version != "1.0";
    REQUIRE(whole_since_1_1 == 4);
    size_t found = 0;
    for (const nlohmann::json &g : answers["recurring_groups"])
      if (g["service"] == service && g["size"] == session_cache_size) {
        ++found;
        CHECK(g["dumps"] == whole_since_1_1);
        CHECK(g["whole_dumps_since_first"] == whole_since_1_1);
        CHECK(g["first_version"] == "1.1");
        CHECK(g["last_version"] == "1.2");
        CHECK(g["dominant_kinds"] == "text x" + std::to_string(3 * whole_since_1_1));
      }
    CHECK(found == 1);
    bool new_in_1_1 = false;
    for (const nlohmann::json &g : answers["new_groups"])
      new_in_1_1 = new_in_1_1 || (g["service"] == service && g["size"] == session_cache_size &&
                                  g["version"] == "1.1");
    CHECK(new_in_1_1);
  }
  for (const nlohmann::json &o : answers["outcomes"]) {
    if (o["id"] == "api-1.2-cut") {
      CHECK(o["outcome"] == "truncated");
      CHECK(o["error"].get<std::string>().rfind("the dump is truncated: ", 0) == 0);
    }
    if (o["id"] == kNotADump)
      CHECK(o["error"] == bad["error"]);
  }
  CHECK(report.out.find("  api-1.2-cut  truncated: the dump is truncated: ") != std::string::npos);
  CHECK(report.out.find("  " + kNotADump + "  bad-input: ") != std::string::npos);

  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  WARN("the cluster test took " << seconds << " s");
  CHECK(seconds < 180);
}
