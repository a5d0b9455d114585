// The glibc walker on a brk heap split by pages: fixtures/programs/glibc_gap makes a page inside
// a large buffer and a page of chunk headers PROT_NONE, so the kernel splits [heap] into five
// mappings and gcore writes five PT_LOADs. The walker must find every buffer the program printed
// in that core; and in a copy whose two protected PT_LOADs hold no bytes (p_filesz 0: pages the
// core lacks), every buffer but those whose headers are lost, naming each gap and how the walk got
// past it, and the report must list the buffer holding the first gap with its captured part.
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/heap_walk.h"
#include "support/test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// What glibc_gap printed: its buffers, and the two pages it protected.
struct GapTruth {
  std::vector<nlohmann::json> buffers;
  uint64_t gap_size = 0;
  uint64_t bridge_gap = 0;  // the page inside the bridge's user data
  uint64_t headers_gap = 0; // the page holding chunk headers
  uint64_t bridge = 0;      // the buffer whose user data holds bridge_gap
  uint64_t bridge_usable = 0;
};

GapTruth readTruth(const std::vector<nlohmann::json> &manifest) {
  GapTruth t;
  for (const nlohmann::json &m : manifest) {
    if (m.contains("gap")) {
      t.gap_size = m.at("gap_size").get<uint64_t>();
      (m.at("holds") == "bridge" ? t.bridge_gap : t.headers_gap) =
          *parseHexAddress(m.at("gap").get<std::string>());
      continue;
    }
    t.buffers.push_back(m);
    if (m.at("where") == "bridge") {
      t.bridge = manifestAddress(m);
      t.bridge_usable = m.at("usable_size").get<uint64_t>();
    }
  }
  REQUIRE(t.bridge_gap != 0);
  REQUIRE(t.headers_gap > t.bridge_gap);
  REQUIRE(t.bridge != 0);
  REQUIRE(t.buffers.size() > 300);
  return t;
}

/// Every buffer of `truth` is in `w` at its address, with its usable size and state; with
/// `headers_lost`, except those whose chunk header the core lacks (then nothing is reported for
/// them), and the chunk before them is reported with its size and state unknown.
void checkBuffers(const WalkedHeap &w, const GapTruth &truth, bool headers_lost) {
  unsigned after = 0, lost = 0;
  const uint64_t gap = truth.headers_gap, gap_end = gap + truth.gap_size;
  auto header_lost = [&](uint64_t chunk) {
    return headers_lost && chunk + 8 >= gap && chunk + 8 < gap_end;
  };
  // A tcache list that runs through the lost page is cut there (with a warning): the freed
  // chunks of that size (up to 0x410, the largest tcache chunk) are not all known to be free.
  std::set<uint64_t> cut_tcache_sizes;
  for (const nlohmann::json &m : truth.buffers) {
    const uint64_t chunk_size = m.at("usable_size").get<uint64_t>() + 8;
    if (m.at("state") == "free" && header_lost(manifestAddress(m) - 16) && chunk_size <= 0x410)
      cut_tcache_sizes.insert(chunk_size);
  }
  for (const nlohmann::json &m : truth.buffers) {
    INFO("manifest entry " << m.dump());
    const uint64_t chunk = manifestAddress(m) - 16, usable = m.at("usable_size").get<uint64_t>();
    const Allocation *a = w.at(manifestAddress(m));
    if (header_lost(chunk)) {
      CHECK(a == nullptr);
      ++lost;
      continue;
    }
    REQUIRE(a != nullptr);
    CHECK(a->size == usable);
    CHECK_FALSE(a->mmapped);
    const bool runs_into_gap = chunk + 8 < gap && chunk + 8 + usable >= gap; // to its end
    if (headers_lost && runs_into_gap)
      CHECK(a->state == AllocState::Unknown); // its state is in the next header, which is lost
    else if (m.at("state") == "free" && cut_tcache_sizes.count(usable + 8))
      CHECK(a->state != AllocState::Unknown);
    else
      CHECK(a->state == (m.at("state") == "used" ? AllocState::Used : AllocState::Free));
    after += m.at("where") == "after" && chunk >= gap_end;
  }
  CHECK(after >= 50);
  if (headers_lost)
    CHECK(lost >= 1);
}

} // namespace

TEST_CASE("glibc walker walks a brk heap that a protected page splits, and over a page the core "
          "lacks",
          "[live]") {
  if (!gcoreOrSkipped())
    return;
  LiveProcess proc(fixtureProgram("glibc_gap"));
  const GapTruth truth = readTruth(proc.manifest());
  const std::string dir = scratchDir("glibc_gap");
  proc.gcore(dir + "/core");

  { // The gcore core: the heap in five mappings, every byte captured.
    auto snap = openSnapshot(dir + "/core");
    AddressSpace memory(*snap);
    for (uint64_t gap : {truth.bridge_gap, truth.headers_gap}) {
      const Region *gap_region = memory.regionContaining(gap);
      REQUIRE(gap_region != nullptr);
      CHECK(gap_region->start == gap); // the kernel split [heap] at the protected page
      CHECK(gap_region->size == truth.gap_size);
    }
    WalkedHeap w = walkHeap(*snap, "glibc");
    REQUIRE(w.error.empty());
    CHECK(w.warnings.empty());
    checkBuffers(w, truth, false);
    CHECK(w.fact("main_heap").find("main_arena top and system_mem") == 0);
    CHECK(w.fact("heap_gaps_walked_past").empty());
  }

  { // A copy without the two pages: the walk steps over one, resumes after the other.
    const std::string gapped = dir + "/gapped.core";
    withoutPages(dir + "/core", {truth.headers_gap}, {truth.bridge_gap}, gapped);
    auto snap = openSnapshot(gapped);
    AddressSpace memory(*snap);
    REQUIRE(memory.classify(truth.bridge_gap) == Fault::Unmapped);
    REQUIRE(memory.classify(truth.headers_gap) == Fault::NotCaptured);
    WalkedHeap w = walkHeap(*snap, "glibc");
    REQUIRE(w.error.empty());
    checkBuffers(w, truth, true);
    const Allocation *bridge = w.at(truth.bridge);
    REQUIRE(bridge != nullptr);
    CHECK(bridge->size == truth.bridge_usable);
    CHECK(bridge->state == AllocState::Used);
    CHECK(w.fact("heap_gaps_walked_past") == "2");
    CHECK(w.fact("heaps_cut_short").empty());
    // One warning per gap: what it covers, how the walk got past it, the chunks after it; and
    // one per tcache list cut where an entry lies in the lost page.
    for (const Diagnostic &d : w.warnings)
      if (d.where.rfind("tcache ", 0) == 0)
        CHECK(d.message.find("lies in memory the dump lacks; list cut there") != std::string::npos);
    CHECK(std::count_if(w.warnings.begin(), w.warnings.end(), [](const Diagnostic &d) {
            return d.message.find("main heap bytes") != std::string::npos;
          }) == 2);
    auto chunks_from = [&](uint64_t from) {
      return std::count_if(w.allocations.begin(), w.allocations.end(),
                           [&](const Allocation &a) { return a.chunk_address >= from; });
    };
    auto gap_text = [&](uint64_t gap, const char *fault) {
      return hexAddress(gap) + ": main heap bytes " + hexAddress(gap) + "-" +
             hexAddress(gap + truth.gap_size) + " (" + std::to_string(truth.gap_size) + " bytes, " +
             fault + ")";
    };
    CHECK(w.warned(gap_text(truth.bridge_gap, "no mapping in the dump")));
    CHECK(w.warned("inside the chunk at " + hexAddress(bridge->chunk_address) + " (" +
                   std::to_string(bridge->chunk_size) + " bytes)"));
    CHECK(w.warned(": " + std::to_string(chunks_from(truth.bridge_gap)) +
                   " chunks walked after the gap"));
    // The walk resumes at the first chunk after the headers' page: the program's.
    uint64_t resume = UINT64_MAX;
    for (const nlohmann::json &m : truth.buffers)
      if (manifestAddress(m) - 16 >= truth.headers_gap + truth.gap_size)
        resume = std::min(resume, manifestAddress(m) - 16);
    CHECK(w.warned(gap_text(truth.headers_gap, "not captured in the dump")));
    CHECK(w.warned("hold chunk headers"));
    CHECK(w.warned("the walk resumes at the chunk at " + hexAddress(resume)));
    CHECK(w.warned(": " + std::to_string(chunks_from(resume)) + " chunks walked after the gap"));

    // The report lists the bridge with the bytes the dump holds of it: up to the gap.
    CommandResult run = runTool(dir, "analyze -q --json gapped.core");
    REQUIRE(run.exit_code == 0);
    nlohmann::json report = nlohmann::json::parse(run.out);
    const nlohmann::json *listed = nullptr;
    for (const nlohmann::json &b : report.at("buffers"))
      if (b.at("address") == hexAddress(truth.bridge))
        listed = &b;
    REQUIRE(listed != nullptr);
    CHECK(listed->at("size") == truth.bridge_usable);
    CHECK(listed->at("allocator") == "glibc");
    CHECK(listed->at("captured_bytes") == truth.bridge_gap - truth.bridge);
  }
}
