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

/// True when this process may ptrace others (gcore works).
bool canRunGcore();

/// For a test that needs what this machine may lack (gcore, a runtime, its fixtures): true when
/// `available`. Otherwise, outside CI, a visible "SKIPPED: <why>" warning and false (the caller
/// returns); under CI (the environment variable CI set) the test fails with `why`: CI never passes
/// a test by skipping it.
bool availableOrSkipped(bool available, const std::string &why);

/// For a test case this build leaves out on purpose (one that cannot hold under the sanitizers):
/// prints "DUMPSIFT_LEFT_OUT: <why>", which ctest reports as a skipped test (tests/CMakeLists.txt).
void leftOutOfThisBuild(const std::string &why);

/// availableOrSkipped(canRunGcore(), ...): for the tests that dump a live process.
bool gcoreOrSkipped();

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
/// test binary run (into scratchDir("preloaded_<program>_<library file name>[_<args>]")). Returns
/// nullptr when gcore cannot attach or the library is missing, after a visible warning; under CI
/// (CI set) that is a failure instead (scripts/setup.sh installs what the tests need).
const PreloadedCore *preloadedCore(const std::string &library, const std::string &program,
                                   const std::vector<std::string> &args = {});

/// Runs a command line through /bin/sh; returns its exit status and captures stdout and stderr.
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
void writeFileBytes(const std::string &path, const std::vector<uint8_t> &bytes);

/// Decompresses fixtures/<name>.xz (or .gz) into the build tree once and returns the path.
std::string unpackedFixture(const std::string &relative_compressed_path);

} // namespace dumpsift::test
