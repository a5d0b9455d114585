// The glibc walker on a brk heap split by a page: fixtures/programs/glibc_gap makes a page inside
// a large buffer PROT_NONE, so the kernel splits [heap] into three mappings and gcore writes three
// PT_LOADs. The walker must find every buffer the program printed in that core, and in a copy
// whose middle PT_LOAD holds no bytes (p_filesz 0: the page the core lacks), where it must also
// name the gap and report the buffer holding it with its captured part.
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/heap_walk.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <elf.h>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// What glibc_gap printed: its buffers, and the page it protected.
struct GapTruth {
  std::vector<nlohmann::json> buffers;
  uint64_t gap = 0;
  uint64_t gap_size = 0;
  uint64_t bridge = 0; // the buffer whose user data holds the gap
  uint64_t bridge_usable = 0;
};

GapTruth readTruth(const std::vector<nlohmann::json> &manifest) {
  GapTruth t;
  for (const nlohmann::json &m : manifest) {
    if (m.contains("gap")) {
      t.gap = *parseHexAddress(m.at("gap").get<std::string>());
      t.gap_size = m.at("gap_size").get<uint64_t>();
      continue;
    }
    t.buffers.push_back(m);
    if (m.at("where") == "bridge") {
      t.bridge = manifestAddress(m);
      t.bridge_usable = m.at("usable_size").get<uint64_t>();
    }
  }
  REQUIRE(t.gap != 0);
  REQUIRE(t.bridge != 0);
  REQUIRE(t.buffers.size() > 300);
  return t;
}

/// Every buffer of `truth` is in `w` at its address, with its usable size and state.
void checkBuffers(const WalkedHeap &w, const GapTruth &truth) {
  unsigned after = 0;
  for (const nlohmann::json &m : truth.buffers) {
    INFO("manifest entry " << m.dump());
    const Allocation *a = w.at(manifestAddress(m));
    REQUIRE(a != nullptr);
    CHECK(a->size == m.at("usable_size").get<uint64_t>());
    CHECK(a->state == (m.at("state") == "used" ? AllocState::Used : AllocState::Free));
    CHECK_FALSE(a->mmapped);
    after += m.at("where") == "after";
  }
  CHECK(after >= 200);
}

/// A copy of the core at `path` whose PT_LOAD starting at `vaddr` keeps no bytes in the file
/// (p_filesz 0), written to `copy`. REQUIREs that there is one such segment.
void dropSegmentBytes(const std::string &path, uint64_t vaddr, const std::string &copy) {
  std::vector<uint8_t> bytes = readFileBytes(path);
  REQUIRE(bytes.size() >= sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  REQUIRE(eh.e_phentsize == sizeof(Elf64_Phdr));
  REQUIRE(eh.e_phoff + uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr) <= bytes.size());
  unsigned dropped = 0;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    uint8_t *at = bytes.data() + eh.e_phoff + i * sizeof(Elf64_Phdr);
    Elf64_Phdr ph;
    std::memcpy(&ph, at, sizeof ph);
    if (ph.p_type != PT_LOAD || ph.p_vaddr != vaddr)
      continue;
    ph.p_filesz = 0;
    std::memcpy(at, &ph, sizeof ph);
    ++dropped;
  }
  REQUIRE(dropped == 1);
  writeFileBytes(copy, bytes);
}

} // namespace

TEST_CASE("glibc walker walks a brk heap that a protected page splits, and over a page the core "
          "lacks") {
  if (!gcoreOrSkipped())
    return;
  LiveProcess proc(fixtureProgram("glibc_gap"));
  const GapTruth truth = readTruth(proc.manifest());
  const std::string dir = scratchDir("glibc_gap");
  proc.gcore(dir + "/core");

  { // The gcore core: the heap in three mappings, every byte captured.
    auto snap = openSnapshot(dir + "/core");
    AddressSpace memory(*snap);
    const Region *gap_region = memory.regionContaining(truth.gap);
    REQUIRE(gap_region != nullptr);
    CHECK(gap_region->start == truth.gap); // the kernel split [heap] at the protected page
    CHECK(gap_region->size == truth.gap_size);
    WalkedHeap w = walkHeap(*snap, "glibc");
    REQUIRE(w.error.empty());
    CHECK(w.warnings.empty());
    checkBuffers(w, truth);
    CHECK(w.fact("main_heap").find("main_arena top and system_mem") == 0);
    CHECK(w.fact("heap_gaps_bridged").empty());
  }

  { // A copy without the page's bytes: the walk steps over it and names it.
    const std::string gapped = dir + "/gapped.core";
    dropSegmentBytes(dir + "/core", truth.gap, gapped);
    auto snap = openSnapshot(gapped);
    AddressSpace memory(*snap);
    REQUIRE(memory.classify(truth.gap) == Fault::NotCaptured);
    WalkedHeap w = walkHeap(*snap, "glibc");
    REQUIRE(w.error.empty());
    checkBuffers(w, truth);
    const Allocation *bridge = w.at(truth.bridge);
    REQUIRE(bridge != nullptr);
    CHECK(bridge->size == truth.bridge_usable);
    CHECK(bridge->state == AllocState::Used);
    CHECK(w.fact("heap_gaps_bridged") == "1");
    CHECK(w.fact("heaps_cut_short").empty());
    // One warning, at the gap: what it covers, the chunk that bridges it, the chunks after it.
    REQUIRE(w.warnings.size() == 1);
    unsigned chunks_after = 0;
    for (const Allocation &a : w.allocations)
      chunks_after += a.chunk_address > truth.gap;
    CHECK(w.warned(hexAddress(truth.gap) + ": main heap bytes " + hexAddress(truth.gap) + "-" +
                   hexAddress(truth.gap + truth.gap_size) + " (" + std::to_string(truth.gap_size) +
                   " bytes, not captured"));
    CHECK(w.warned("inside the chunk at " + hexAddress(bridge->chunk_address) + " (" +
                   std::to_string(bridge->chunk_size) + " bytes)"));
    CHECK(w.warned(": " + std::to_string(chunks_after) + " chunks walked after the gap"));

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
    CHECK(listed->at("captured_bytes") == truth.gap - truth.bridge);
  }
}
