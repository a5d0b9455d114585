// Whole analyses of processes with Debian's libjemalloc.so.2 preloaded, dumped by gcore:
// - the story (fixtures/programs/story): every planted buffer at its exact address with jemalloc's
//   usable size and the right kind, owned by the jemalloc walker (not by glibc's walker nor the
//   region scan), with the size groups named as jemalloc's size classes;
// - two heaps in one process (fixtures/programs/two_heaps: malloc is jemalloc's, __libc_malloc
//   glibc's): each walker claims its own allocator's buffers and none of the other's.
//
// Needs gdb (gcore) and libjemalloc2 (scripts/setup.sh --tests installs them); skipped with a
// visible warning without them, except under CI (CI set), where they fail.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "support/test_support.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

const char *const kJemallocLibrary = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

/// True when a process can run with jemalloc preloaded and be dumped; else skips the test
/// (availableOrSkipped: a failure under CI).
bool canRunPreloaded() {
  std::string why;
  if (!canRunGcore())
    why = "gcore is missing or ptrace is not allowed";
  else if (!std::filesystem::exists(kJemallocLibrary))
    why = std::string(kJemallocLibrary) + " is missing (apt-get install libjemalloc2)";
  return availableOrSkipped(why.empty(), "cannot run a process under jemalloc: " + why);
}

/// Runs fixture `program` with jemalloc preloaded and dumps it into `core`; returns its manifest.
std::vector<nlohmann::json> dumpPreloaded(const std::string &program, const std::string &core) {
  setenv("LD_PRELOAD", kJemallocLibrary, 1);
  LiveProcess process(fixtureProgram(program));
  unsetenv("LD_PRELOAD");
  process.gcore(core);
  return process.manifest();
}

} // namespace

TEST_CASE("the story under jemalloc: every planted buffer at its exact address, size class and "
          "kind",
          "[live]") {
  if (!canRunPreloaded())
    return;
  std::string core = scratchDir("story-jemalloc") + "/story.core";
  const std::vector<nlohmann::json> manifest = dumpPreloaded("story", core);

  auto snapshot = openDump(core);
  if (!snapshot)
    FAIL(core << ": " << llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);
  Analysis analysis = analyze(memory, AnalyzeOptions{}); // the documented defaults: 64 KiB and up

  REQUIRE(manifest.size() > 20);
  std::map<uint64_t, uint64_t> planted_by_size;
  uint64_t aws_size = 0;
  for (const nlohmann::json &m : manifest) {
    INFO(m.dump());
    uint64_t address = *parseHexAddress(m["address"].get<std::string>());
    uint64_t usable = m["usable_size"].get<uint64_t>();
    const Buffer *b = nullptr;
    for (const Buffer &x : analysis.buffers)
      if (x.allocation.address == address)
        b = &x;
    REQUIRE(b != nullptr);
    CHECK(b->allocation.size == usable);
    CHECK(b->allocation.state == AllocState::Used);
    CHECK(bufferSource(analysis, *b) == "jemalloc");
    CHECK(kindName(b->content.kind) == m["kind"].get<std::string>());
    if (m.contains("payload_kind")) {
      const DetailValue *payload = b->content.details.get("payload_kind");
      REQUIRE(payload != nullptr);
      CHECK(std::get<std::string>(*payload) == m["payload_kind"].get<std::string>());
    }
    if (m["kind"] == "aws-chunked")
      aws_size = usable;
    ++planted_by_size[usable];
  }

  // Nothing else claims the planted memory: every other buffer lies outside the planted ones.
  for (const Buffer &b : analysis.buffers) {
    if (bufferSource(analysis, b) == "jemalloc")
      continue;
    for (const nlohmann::json &m : manifest) {
      uint64_t address = *parseHexAddress(m["address"].get<std::string>());
      uint64_t end = address + m["usable_size"].get<uint64_t>();
      CHECK_FALSE(
          (b.allocation.address < end && b.allocation.address + b.allocation.size > address));
    }
  }

  // The size groups are jemalloc's size classes, and the summary says so.
  for (const SizeGroup &g : analysis.groups)
    if (planted_by_size.count(g.size))
      CHECK(g.count >= planted_by_size[g.size]);
  std::string text_text;
  llvm::raw_string_ostream text(text_text);
  writeSummaryText(**snapshot, analysis, TextOptions{}, text);
  INFO(text.str());
  REQUIRE(aws_size != 0);
  CHECK(text.str().find("jemalloc size class " + groupedDigits(aws_size) + "  used       10") !=
        std::string::npos);
  CHECK(text.str().find("aws-chunked x10 (payload jpeg") != std::string::npos);

  // The report of a jemalloc heap fits the schema.
  const std::string report = scratchDir("story-jemalloc-report") + "/r.json";
  CommandResult r = runCommand("'" + toolPath() + "' analyze '" + core + "' --quiet --report '" +
                               report + "' > /dev/null");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CommandResult v =
      runCommand("/usr/bin/python3 '" + sourceDir() + "/scripts/validate_report.py' '" +
                 sourceDir() + "/docs/report.schema.json' '" + report + "'");
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);
  std::filesystem::remove(core); // the mapping stays valid until the snapshot goes
}

TEST_CASE("glibc's and jemalloc's heaps in one process: each walker claims its own buffers",
          "[live]") {
  if (!canRunPreloaded())
    return;
  std::string core = scratchDir("two-heaps") + "/two_heaps.core";
  const std::vector<nlohmann::json> manifest = dumpPreloaded("two_heaps", core);
  auto snapshot = openDump(core);
  if (!snapshot)
    FAIL(core << ": " << llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);
  Analysis analysis = analyze(memory, AnalyzeOptions{});

  REQUIRE(manifest.size() == 16);
  for (const nlohmann::json &m : manifest) {
    INFO(m.dump());
    uint64_t address = *parseHexAddress(m["address"].get<std::string>());
    const Buffer *b = nullptr;
    for (const Buffer &x : analysis.buffers)
      if (x.allocation.address == address)
        b = &x;
    REQUIRE(b != nullptr);
    CHECK(b->allocation.state == AllocState::Used);
    if (m["allocator"] == "preloaded") {
      CHECK(bufferSource(analysis, *b) == "jemalloc");
      CHECK(b->allocation.size == m["usable_size"].get<uint64_t>());
    } else {
      CHECK(bufferSource(analysis, *b) == "glibc");
      CHECK(b->allocation.size >= m["requested"].get<uint64_t>());
      CHECK(b->allocation.size < m["requested"].get<uint64_t>() + 4096);
    }
  }
  // No memory is claimed twice: buffers never overlap, and neither do two walkers' areas.
  for (size_t i = 1; i < analysis.buffers.size(); ++i) {
    const Allocation &p = analysis.buffers[i - 1].allocation, &c = analysis.buffers[i].allocation;
    CHECK(p.address + p.size <= c.address);
  }
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (size_t h = 0; h < analysis.heaps.size(); ++h)
    for (const HeapArea &a : analysis.heaps[h].areas)
      spans.emplace_back(a.start, a.start + a.size);
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    CHECK(spans[i - 1].second <= spans[i].first);
  CHECK(analysis.heaps.size() == 2);
  std::filesystem::remove(core);
}
