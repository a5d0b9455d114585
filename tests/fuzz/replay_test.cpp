// Replays the fuzz corpus (fixtures/corpus/, seeds and regression files of every crash found)
// through every fuzz target in the ordinary test build, so that CI checks them without libFuzzer.
// A crash, a failed contract check (an abort) or a sanitizer report fails the test binary.
#include "fuzz/fuzz_targets.h"
#include "support/test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>

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

} // namespace

TEST_CASE("fuzz corpus replays through elf_core") {
  replayThrough("elf_core");
}
TEST_CASE("fuzz corpus replays through minidump") {
  replayThrough("minidump");
}
TEST_CASE("fuzz corpus replays through glibc_walker") {
  replayThrough("glibc_walker");
}
TEST_CASE("fuzz corpus replays through managed_walkers") {
  replayThrough("managed_walkers");
}
TEST_CASE("fuzz corpus replays through mimalloc_walker") {
  replayThrough("mimalloc_walker");
}
TEST_CASE("fuzz corpus replays through musl_walker") {
  replayThrough("musl_walker");
}
TEST_CASE("fuzz corpus replays through tcmalloc_walker") {
  replayThrough("tcmalloc_walker");
}
TEST_CASE("fuzz corpus replays through go_walker") {
  replayThrough("go_walker");
}
TEST_CASE("fuzz corpus replays through pipeline") {
  replayThrough("pipeline");
}
TEST_CASE("fuzz corpus replays through sniff") {
  replayThrough("sniff");
}

TEST_CASE("fuzz corpus has a seed folder per target and stays small") {
  const fs::path root = fs::path(sourceDir()) / "fixtures" / "corpus";
  for (const fuzz::Target &t : fuzz::targets()) {
    INFO("target " << t.name);
    CHECK(fs::is_directory(root / t.name));
    CHECK_FALSE(fs::is_empty(root / t.name));
  }
  uintmax_t total = 0;
  for (const fs::path &file : corpusFiles())
    total += fs::file_size(file);
  CHECK(total < (4u << 20));
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
