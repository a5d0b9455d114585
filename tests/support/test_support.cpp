#include "support/test_support.h"

#include "support/test_run.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace dumpsift::test {

std::string sourceDir() {
  return DUMPSIFT_SOURCE_DIR;
}
std::string binaryDir() {
  return DUMPSIFT_BINARY_DIR;
}
std::string sharedDumpsDir() {
  return std::string(DUMPSIFT_SHARED_DIR) + "/dumps";
}
std::string toolPath() {
  return DUMPSIFT_TOOL_PATH;
}
std::string fixtureProgram(const std::string &name) {
  return binaryDir() + "/fixtures/" + name;
}

std::string scratchDir(const std::string &name) {
  fs::path dir = fs::path(binaryDir()) / "test-scratch" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

namespace {

std::string current_test_case;
std::vector<std::string> current_tags;
std::vector<std::string> skips;

} // namespace

void testCaseStarting(const std::string &name, const std::vector<std::string> &tags) {
  current_test_case = name;
  current_tags = tags;
}

const std::vector<std::string> &skipsRecorded() {
  return skips;
}

void requireNotUnit(const std::string &what) {
  for (const std::string &tag : current_tags)
    if (tag == "live" || tag == "browser" || tag == "cluster")
      return;
  FAIL("'" << current_test_case << "' starts " << what
           << ", but it is tagged as a unit test: tag it [live], [browser] or [cluster] "
              "(docs/testing.md)");
}

bool canRunGcore() {
  requireNotUnit("gcore");
  static const bool ok = [] {
    if (runCommand("command -v gcore >/dev/null 2>&1").exit_code != 0)
      return false;
    std::ifstream scope("/proc/sys/kernel/yama/ptrace_scope");
    int value = 0;
    if (scope >> value && value >= 1 && geteuid() != 0)
      return false;
    return true;
  }();
  return ok;
}

bool availableOrSkipped(bool available, const std::string &why) {
  if (available)
    return true;
  if (std::getenv("CI"))
    FAIL("cannot run under CI: " << why);
  WARN("SKIPPED: " << why);
  skips.push_back(current_test_case + ": " + why);
  return false;
}

void leftOutOfThisBuild(const std::string &why) {
  WARN("left out of this build: " << why);
  skips.push_back(current_test_case + ": left out of this build: " + why);
}

bool gcoreOrSkipped() {
  return availableOrSkipped(canRunGcore(), "gcore is missing or cannot attach here (not root and "
                                           "/proc/sys/kernel/yama/ptrace_scope >= 1)");
}

std::string chromiumPath() {
  requireNotUnit("headless Chromium");
  const char *chosen = std::getenv("DUMPSIFT_CHROMIUM");
  return chosen && *chosen ? chosen : "/usr/bin/chromium";
}

bool chromiumOrSkipped() {
  const std::string chromium = chromiumPath();
  return availableOrSkipped(access(chromium.c_str(), X_OK) == 0,
                            "chromium: " + chromium +
                                " is not an executable (scripts/setup.sh --tests installs it)");
}

LiveProcess::LiveProcess(const std::string &program, const std::vector<std::string> &args) {
  requireNotUnit("the live process " + program);
  int out_pipe[2];
  REQUIRE(pipe(out_pipe) == 0);
  pid_ = fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    close(out_pipe[0]);
    close(out_pipe[1]);
    std::vector<char *> argv;
    argv.push_back(const_cast<char *>(program.c_str()));
    for (const std::string &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  FILE *out = fdopen(out_pipe[0], "r");
  REQUIRE(out != nullptr);
  std::string line;
  bool ready = false;
  for (int c; (c = fgetc(out)) != EOF;) {
    if (c != '\n') {
      line.push_back(static_cast<char>(c));
      continue;
    }
    if (line == "READY") {
      ready = true;
      break;
    }
    if (!line.empty() && line.front() == '{') // a runtime may print warnings of its own
      manifest_.push_back(nlohmann::json::parse(line));
    line.clear();
  }
  fclose(out);
  INFO("fixture program " << program << " did not print READY");
  REQUIRE(ready);
}

LiveProcess::~LiveProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void LiveProcess::gcore(const std::string &core_path) const {
  requireNotUnit("gcore");
  // gcore appends ".<pid>" to its -o prefix; dump to a temporary name and move it into place.
  // gdb 13 has been seen to fail an attach once in a few hundred runs on a loaded 2-core machine
  // (CI); one more try tells that apart from a real failure, which fails every time.
  std::string prefix = core_path + ".gcore";
  const std::string made = prefix + "." + std::to_string(pid_);
  std::string failures;
  bool dumped = false;
  for (int attempt = 1; attempt <= 3 && !dumped; ++attempt) {
    int status = 0;
    const pid_t exited = waitpid(pid_, &status, WNOHANG);
    INFO("the fixture program died before it was dumped, wait status " << status);
    REQUIRE(exited == 0);
    CommandResult r = runCommand("gcore -o '" + prefix + "' " + std::to_string(pid_));
    dumped = r.exit_code == 0 && fs::exists(made);
    if (dumped)
      break;
    // stdout first: gcore's own verdict is its last line; gdb's warnings on stderr can be long.
    failures += "attempt " + std::to_string(attempt) + ": exit " + std::to_string(r.exit_code) +
                "\nstdout: " + r.out + "\nstderr: " + r.err + "\n";
    WARN("gcore of pid " << pid_ << " failed, " << failures);
  }
  INFO("gcore failed every time:\n" << failures);
  REQUIRE(dumped);
  fs::rename(made, core_path);
}

const PreloadedCore *preloadedCore(const std::string &library, const std::string &program,
                                   const std::vector<std::string> &args) {
  std::string name = "preloaded_" + program + "_" + fs::path(library).filename().string();
  for (const std::string &a : args)
    name += "_" + a;
  // This process's cores, by name; their directories are removed when the process exits.
  static struct Made {
    std::map<std::string, PreloadedCore> cores;
    ~Made() {
      for (const auto &[name, core] : cores) {
        std::error_code ignored;
        fs::remove_all(fs::path(core.path).parent_path(), ignored);
      }
    }
  } made;
  if (!gcoreOrSkipped() ||
      !availableOrSkipped(fs::exists(library),
                          library + " is missing (scripts/setup.sh --tests installs it)"))
    return nullptr;
  if (auto it = made.cores.find(name); it != made.cores.end())
    return &it->second;
  std::vector<std::string> env_args{"LD_PRELOAD=" + library, fixtureProgram(program)};
  env_args.insert(env_args.end(), args.begin(), args.end());
  LiveProcess proc("/usr/bin/env", env_args);
  PreloadedCore core{scratchDir(name + "_" + std::to_string(getpid())) + "/core", proc.manifest()};
  proc.gcore(core.path);
  return &made.cores.emplace(name, std::move(core)).first->second;
}

namespace {

/// The name of a runtime, a browser, gcore or a script that starts one, as a command word of
/// `command_line` (after a space, quote, slash or shell operator; before a space, quote or
/// operator): what a unit test must not run.
std::string runtimeNamedIn(const std::string &command_line) {
  static const std::regex runtime(
      R"((^|[\s'"/;&|(])(gcore|gdb|java|javac|jhsdb|mono|mcs|dotnet|createdump|wine|wine64|node|)"
      R"(npm|rabbitmq-server|epmd|chromium|make_cores\.sh|make_dump\.sh)($|[\s'";&|)]))");
  std::smatch match;
  return std::regex_search(command_line, match, runtime) ? match[2].str() : std::string();
}

} // namespace

CommandResult runCommand(const std::string &command_line) {
  if (const std::string runtime = runtimeNamedIn(command_line); !runtime.empty())
    requireNotUnit(runtime);
  std::string err_path =
      fs::temp_directory_path() / ("dumpsift-test-err-" + std::to_string(getpid()) + "-" +
                                   std::to_string(reinterpret_cast<uintptr_t>(&command_line)));
  std::string full = "(" + command_line + ") 2>'" + err_path + "'";
  CommandResult result;
  FILE *pipe = popen(full.c_str(), "r");
  if (!pipe)
    return result;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0)
    result.out.append(buf, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream err(err_path, std::ios::binary);
  result.err.assign(std::istreambuf_iterator<char>(err), {});
  fs::remove(err_path);
  return result;
}

CommandResult runTool(const std::string &dir, const std::string &args) {
  CommandResult r = runCommand("cd '" + dir + "' && '" + toolPath() + "' " + args);
  UNSCOPED_INFO("dumpsift " << args << "\nexit " << r.exit_code << "\nstdout:\n"
                            << r.out << "stderr:\n"
                            << r.err);
  return r;
}

std::vector<nlohmann::json> readJsonLines(const std::string &path) {
  std::ifstream in(path);
  INFO("cannot read " << path);
  REQUIRE(in.good());
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      lines.push_back(nlohmann::json::parse(line));
  return lines;
}

std::string sha256sum(const std::string &path) {
  CommandResult r = runCommand("sha256sum '" + path + "'");
  REQUIRE(r.exit_code == 0);
  return r.out.substr(0, 64);
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<uint8_t> readFileBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  INFO("cannot read " << path);
  REQUIRE(in.good());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string readText(const std::string &path) {
  const std::vector<uint8_t> bytes = readFileBytes(path);
  return std::string(bytes.begin(), bytes.end());
}

void writeFileBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string unpackedFixture(const std::string &relative_compressed_path) {
  fs::path src = fs::path(sourceDir()) / "fixtures" / relative_compressed_path;
  fs::path dst = fs::path(binaryDir()) / "fixtures-unpacked" / relative_compressed_path;
  std::string tool = src.extension() == ".xz" ? "xz" : "gzip";
  dst.replace_extension();
  if (fs::exists(dst) && fs::last_write_time(dst) >= fs::last_write_time(src))
    return dst.string();
  fs::create_directories(dst.parent_path());
  std::string tmp = dst.string() + ".tmp" + std::to_string(getpid());
  CommandResult r = runCommand(tool + " -dc '" + src.string() + "' > '" + tmp + "'");
  INFO("cannot unpack " << src << ": " << r.err);
  REQUIRE(r.exit_code == 0);
  fs::rename(tmp, dst);
  return dst.string();
}

} // namespace dumpsift::test
