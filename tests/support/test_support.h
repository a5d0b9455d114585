// Helpers shared by the tests: where things are, running fixture programs, dumping them with gcore.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dumpsift::test {

std::string sourceDir();                             // the repository
std::string binaryDir();                             // the build tree
std::string sharedDumpsDir();                        // ../shared/dumps: real third-party dumps
std::string toolPath();                              // the dumpsift binary
std::string fixtureProgram(const std::string &name); // build/fixtures/<name>
/// A fresh empty directory under the build tree for one test's files.
std::string scratchDir(const std::string &name);

/// True when this process may ptrace others (gcore works). Only a test tagged [live], [browser]
/// or [cluster] may ask (requireNotUnit).
bool canRunGcore();

/// The ctest label of each test case comes from its Catch tag (tests/CMakeLists.txt): [live]
/// (it dumps a live process or starts a runtime: gcore, a JVM, .NET, Mono, Go, Wine, a broker),
/// [browser] (headless Chromium), [cluster] (a fleet of machines); a test case with none of
/// them is a unit test (no process but the tool and small command-line tools, no network,
/// seconds). requireNotUnit FAILs when the running test case is a unit test: everything that
/// starts a live process, a runtime or a browser calls it (LiveProcess, gcore, preloadedCore,
/// chromiumPath, and runCommand for the runtimes' command names), so that a test that starts
/// one cannot pass as a unit test. `what` names what was about to start.
void requireNotUnit(const std::string &what);

/// For a test that needs what this machine may lack (gcore, a runtime, its fixtures): true when
/// `available`. Otherwise, outside CI, a visible "SKIPPED: <why>" warning, the test case is
/// recorded as skipped and false is returned (the caller returns): the test binary then exits
/// with kSkipExitCode, which ctest reports as skipped. Under CI (the environment variable CI set)
/// the test fails with `why` instead: CI never passes a test by skipping it.
bool availableOrSkipped(bool available, const std::string &why);

/// For a test case this build leaves out on purpose (one that cannot hold under the sanitizers):
/// "left out of this build: <why>", and the test case is recorded as skipped, under CI too.
void leftOutOfThisBuild(const std::string &why);

/// availableOrSkipped(canRunGcore(), ...): for the tests that dump a live process.
bool gcoreOrSkipped();

/// The headless Chromium the browser tests drive: $DUMPSIFT_CHROMIUM when set, else
/// /usr/bin/chromium. Calls requireNotUnit.
std::string chromiumPath();

/// availableOrSkipped for chromiumPath(): true when it is an executable.
bool chromiumOrSkipped();

/// A fixture program started with `args`. It prints JSON objects, one per line, then a line
/// "READY" and waits; the constructor reads up to READY. The destructor kills it.
class LiveProcess {
public:
  explicit LiveProcess(const std::string &program, const std::vector<std::string> &args = {});
  ~LiveProcess();
  LiveProcess(const LiveProcess &) = delete;
  LiveProcess &operator=(const LiveProcess &) = delete;

  pid_t pid() const { return pid_; }
  /// The JSON lines printed before READY.
  const std::vector<nlohmann::json> &manifest() const { return manifest_; }
  /// Dumps the process with gcore into `core_path`; REQUIREs success.
  void gcore(const std::string &core_path) const;

private:
  pid_t pid_ = -1;
  std::vector<nlohmann::json> manifest_;
};

/// A gcore dump of a fixture program run with a library preloaded (LD_PRELOAD), and the JSON lines
/// the program printed before READY.
struct PreloadedCore {
  std::string path;
  std::vector<nlohmann::json> manifest;
};
/// Runs fixture program `program` with `args` and `library` preloaded, and dumps it, once per
/// test binary run (into scratchDir("preloaded_<program>_<library file name>[_<args>]_<pid>"):
/// ctest runs the test cases that share a core as processes side by side, so each process makes
/// its own, and removes it when it exits). Returns
/// nullptr when gcore cannot attach or the library is missing, the test case skipped
/// (availableOrSkipped: a failure under CI). For [live] tests only (requireNotUnit).
const PreloadedCore *preloadedCore(const std::string &library, const std::string &program,
                                   const std::vector<std::string> &args = {});

/// Runs a command line through /bin/sh; returns its exit status and captures stdout and stderr.
/// A command line that names a runtime, a browser or gcore (java, mono, node, wine, chromium,
/// gcore, ...) calls requireNotUnit first.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
CommandResult runCommand(const std::string &command_line);

/// `dumpsift ARGS` (already quoted as needed), run from `dir` (so that relative paths in its
/// messages stay short), with the command and its result in the test's log.
CommandResult runTool(const std::string &dir, const std::string &args);

/// The JSON object on each non-empty line of the file at `path` (REQUIREs it is readable).
std::vector<nlohmann::json> readJsonLines(const std::string &path);

/// sha256sum's digest of the file at `path`: a SHA-256 independent of the code under test.
std::string sha256sum(const std::string &path);

/// The names in `dir`, sorted.
std::vector<std::string> listDir(const std::string &dir);

/// The whole file as bytes (REQUIREs it is readable).
std::vector<uint8_t> readFileBytes(const std::string &path);
/// The whole file as text (REQUIREs it is readable).
std::string readText(const std::string &path);
void writeFileBytes(const std::string &path, const std::vector<uint8_t> &bytes);

/// Decompresses fixtures/<name>.xz (or .gz) into the build tree once and returns the path.
std::string unpackedFixture(const std::string &relative_compressed_path);

} // namespace dumpsift::test
