// Replays the fuzz corpus (fixtures/corpus/, seeds and regression files of every crash found)
// through every fuzz target in the ordinary test build, so that CI checks them without libFuzzer.
// A crash, a failed contract check (an abort) or a sanitizer report fails the test binary.
#include "fuzz/fuzz_targets.h"
#include "support/test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <set>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

namespace fs = std::filesystem;

/// Every regular file under fixtures/corpus/, sorted by path.
std::vector<fs::path> corpusFiles() {
  std::vector<fs::path> files;
  const fs::path root = fs::path(sourceDir()) / "fixtures" / "corpus";
  if (fs::is_directory(root))
    for (const auto &entry : fs::recursive_directory_iterator(root))
      if (entry.is_regular_file() && entry.path().filename().string()[0] != '.')
        files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

/// Runs every corpus file through the target named `name`; each input must finish quickly.
void replayThrough(const std::string &name) {
  const fuzz::Target *target = nullptr;
  for (const fuzz::Target &t : fuzz::targets())
    if (t.name == name)
      target = &t;
  REQUIRE(target != nullptr);
  const std::vector<fs::path> files = corpusFiles();
  REQUIRE(files.size() > 10);
  for (const fs::path &file : files) {
    std::vector<uint8_t> bytes = readFileBytes(file.string());
    INFO("corpus file " << file.string());
    auto start = std::chrono::steady_clock::now();
    CHECK(target->run(bytes.data(), bytes.size()) == 0);
    // libFuzzer runs with -timeout=5 under ASan; plain builds must be far below that.
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  }
}

/// The names in `text` between the separators `separator`, as one sorted line: "a b c".
std::string sortedNames(llvm::StringRef text, char separator) {
  std::set<std::string> names;
  for (llvm::StringRef rest = text; !rest.empty();) {
    auto [name, tail] = rest.split(separator);
    if (!name.empty())
      names.insert(name.str());
    rest = tail;
  }
  std::string line;
  for (const std::string &name : names)
    line += (line.empty() ? "" : " ") + name;
  return line;
}

} // namespace

// One replay per row of the target list, so that no target goes without one.
#define DUMPSIFT_FUZZ_TARGET(name, function)                                                       \
  TEST_CASE("fuzz corpus replays through " #name) {                                                \
    replayThrough(#name);                                                                          \
  }
#include "fuzz/fuzz_targets.def"
#undef DUMPSIFT_FUZZ_TARGET

TEST_CASE("fuzz targets: each has a replay, seeds, a libFuzzer build, a row in docs/fuzzing.md, "
          "and bench/fuzz.sh runs them all") {
  // Each set of names below is compared as one sorted line, so that a failure shows both.
  std::string list;
  for (const fuzz::Target &t : fuzz::targets())
    list += std::string(t.name) + "\n";
  const std::string names = sortedNames(list, '\n');
  REQUIRE(std::count(names.begin(), names.end(), ' ') + 1 == long(fuzz::targets().size()));

  // A replay test case per target.
  std::string replayed;
  for (const Catch::TestCase &test : Catch::getRegistryHub().getTestCaseRegistry().getAllTests())
    if (llvm::StringRef name = test.name; name.consume_front("fuzz corpus replays through "))
      replayed += name.str() + "\n";
  CHECK(sortedNames(replayed, '\n') == names);

  // A corpus folder per target, and no folder of a target that is gone (crashes/ aside).
  std::string folders;
  for (const auto &entry : fs::directory_iterator(fs::path(sourceDir()) / "fixtures" / "corpus"))
    if (entry.is_directory() && entry.path().filename() != "crashes")
      folders += entry.path().filename().string() + "\n";
  CHECK(sortedNames(folders, '\n') == names);

  // The libFuzzer executables tests/CMakeLists.txt makes (with DUMPSIFT_FUZZ=ON) and the targets
  // bench/fuzz.sh runs by default: both read the list.
  CHECK(sortedNames(DUMPSIFT_FUZZ_CMAKE_TARGETS, ',') == names);
  CommandResult listed = runCommand("'" + sourceDir() + "/bench/fuzz.sh' -l");
  REQUIRE(listed.exit_code == 0);
  CHECK(sortedNames(listed.out, '\n') == names);

  // The table of docs/fuzzing.md has a row per target.
  const std::vector<uint8_t> doc = readFileBytes(sourceDir() + "/docs/fuzzing.md");
  const std::string text(doc.begin(), doc.end());
  for (const fuzz::Target &t : fuzz::targets()) {
    INFO("target " << t.name);
    CHECK(text.find("\n| `" + std::string(t.name) + "` | ") != std::string::npos);
  }
}

TEST_CASE("fuzz process encoding round-trips") {
  Snapshot snap;
  snap.system.pointer_size = 8;
  snap.system.os = Os::Linux;
  snap.auxv.push_back({6, 4096});
  std::vector<uint8_t> heap(64, 0xab);
  Region libc;
  libc.start = 0x7f0000000000;
  libc.size = 0x1000;
  libc.perms.read = libc.perms.write = true;
  libc.backing_file = "/lib/x86_64-linux-gnu/libc.so.6";
  libc.cls = RegionClass::Image;
  Region h;
  h.start = 0x555555559000;
  h.size = 0x2000;
  h.perms.read = h.perms.write = true;
  h.cls = RegionClass::Heap;
  snap.regions = {h, libc};
  snap.memory = {{h.start, llvm::ArrayRef<uint8_t>(heap)}};
  snap.modules.push_back({libc.backing_file, libc.start, libc.end(), ""});
  const std::string encoded = fuzz::encodeFuzzProcess(
      snap, [](const Region &) { return true; }, 16);
  auto decoded =
      fuzz::decodeFuzzProcess(reinterpret_cast<const uint8_t *>(encoded.data()), encoded.size());
  REQUIRE(decoded->regions.size() == 2);
  CHECK(decoded->regions[0].start == h.start);
  CHECK(decoded->regions[0].size == h.size);
  CHECK(decoded->regions[0].cls == RegionClass::Heap);
  CHECK(decoded->regions[0].captured == 16);
  CHECK(decoded->regions[1].backing_file == "/usr/lib/x86_64-linux-gnu/libc.so.6");
  REQUIRE(decoded->memory.size() == 1);
  CHECK(decoded->memory[0].bytes.size() == 16);
  CHECK(decoded->memory[0].bytes[15] == 0xab);
  REQUIRE(decoded->modules.size() == 1);
  CHECK(decoded->modules[0].end == libc.end());
  REQUIRE(decoded->auxv.size() == 1);
  CHECK(decoded->auxv[0].second == 4096);
}
