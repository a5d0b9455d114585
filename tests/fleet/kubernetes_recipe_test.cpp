// The Kubernetes Indexed Job recipe of docs/fleet.md: validated against the Kubernetes schema
// offline (npm's kubernetes-models, fixtures/kubernetes/), and its container's command run here as
// the task of index 0. No Kubernetes runs here; the doc says so.
#include "fleet_inputs.h"

#include <catch2/catch.hpp>
#include <filesystem>

namespace fs = std::filesystem;
using namespace dumpsift::test;

namespace {

/// `text` quoted for /bin/sh.
std::string shellQuoted(const std::string &text) {
  std::string quoted = "'";
  for (char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// `path` with its leading `from` directory replaced by `to` ("/fleet/x" -> "DIR/fleet/x").
std::string moved(const std::string &path, const std::string &from, const std::string &to) {
  if (path == from || path.rfind(from + "/", 0) == 0)
    return to + path.substr(from.size());
  return path;
}

} // namespace

TEST_CASE("the Kubernetes Indexed Job of docs/fleet.md is valid against the Kubernetes schema, "
          "and its container's command runs a fleet task",
          "[live]") {
  const std::string recipe = sourceDir() + "/fixtures/kubernetes";
  if (!availableOrSkipped(runCommand("command -v node").exit_code == 0 &&
                              fs::exists(recipe + "/node_modules/kubernetes-models/package.json"),
                          "node or fixtures/kubernetes/node_modules is missing (scripts/setup.sh "
                          "installs them: npm ci in fixtures/kubernetes)"))
    return;
  CommandResult r = runCommand("node " + shellQuoted(recipe + "/validate.js") + " " +
                               shellQuoted(sourceDir() + "/docs/fleet.md"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json validated = nlohmann::json::parse(r.out);
  REQUIRE(validated["documents"].size() == 1);
  const nlohmann::json &document = validated["documents"][0];
  INFO(document.dump(2));
  CHECK(document["kind"] == "Job");
  CHECK(document["valid"] == true);
  // The validator is not one that accepts anything.
  CHECK(validated["control"]["bad_completion_mode_rejected"] == true);

  const nlohmann::json &spec = document["manifest"]["spec"];
  CHECK(spec["completionMode"] == "Indexed");
  REQUIRE(spec["backoffLimitPerIndex"].is_number_integer());
  const nlohmann::json &pod = spec["template"]["spec"];
  CHECK(pod["restartPolicy"] == "Never");
  REQUIRE(pod["containers"].size() == 1);
  const nlohmann::json &container = pod["containers"][0];
  CHECK(container["resources"]["limits"].contains("memory"));
  const std::vector<std::string> command = container["command"];
  REQUIRE(command.size() > 3);
  CHECK(std::vector<std::string>(command.begin(), command.begin() + 3) ==
        std::vector<std::string>{"dumpsift", "fleet", "task"});
  auto value = [&](const std::string &option) {
    for (size_t i = 0; i + 1 < command.size(); ++i)
      if (command[i] == option)
        return command[i + 1];
    return std::string();
  };
  CHECK(value("--index-env") == "JOB_COMPLETION_INDEX");
  CHECK(value("--max-attempts") == std::to_string(spec["backoffLimitPerIndex"].get<int>() + 1));
  // The dump is copied to a local volume: --stage-dir is an emptyDir's mount.
  std::string stage_volume;
  for (const nlohmann::json &mount : container["volumeMounts"])
    if (mount["mountPath"] == value("--stage-dir"))
      stage_volume = mount["name"];
  REQUIRE(!stage_volume.empty());
  bool empty_dir = false;
  for (const nlohmann::json &volume : pod["volumes"])
    empty_dir = empty_dir || (volume["name"] == stage_volume && volume.contains("emptyDir"));
  CHECK(empty_dir);

  // The command, run here as the pod of index 0 would run it, with its volumes in the test's
  // directory: the manifest's row 0 is the story core.
  const std::string dir = scratchDir("kubernetes_recipe");
  std::string fleet_volume;
  for (const nlohmann::json &mount : container["volumeMounts"])
    if (mount["mountPath"] != value("--stage-dir"))
      fleet_volume = mount["mountPath"];
  REQUIRE(!fleet_volume.empty());
  fs::create_directories(dir + fleet_volume + "/dumps");
  fs::copy_file(unpackedFixture("cores/story.core.xz"), dir + fleet_volume + "/dumps/story.core");
  std::string line =
      "cd " + shellQuoted(dir) + " && JOB_COMPLETION_INDEX=0 " + shellQuoted(toolPath());
  for (size_t i = 1; i < command.size(); ++i)
    line += " " + shellQuoted(moved(moved(command[i], fleet_volume, dir + fleet_volume),
                                    value("--stage-dir"), dir + value("--stage-dir")));
  const std::string manifest = moved(command[3], fleet_volume, dir + fleet_volume);
  writeManifest(manifest, {{"story", "dumps/story.core", "shop", "1.9"}});
  CommandResult task = runCommand(line);
  INFO(line << "\n" << task.err);
  CHECK(task.exit_code == 0);
  const std::string out = moved(value("--out"), fleet_volume, dir + fleet_volume);
  CHECK(readJsonFile(out + "/story.status.json")["outcome"] == "ok");
  CHECK(readJsonFile(out + "/story.report.json")["dump"]["path"] ==
        dir + value("--stage-dir") + "/story.core");
  CHECK(fs::exists(out + "/story.html"));
  CHECK(fs::is_empty(dir + value("--stage-dir")));
}
