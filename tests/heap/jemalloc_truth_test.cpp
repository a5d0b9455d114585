// The jemalloc walker against ground truth: fixtures/programs/alloc_truth runs with Debian's
// libjemalloc.so.2 preloaded (and, built with libjemalloc.a, with jemalloc linked in statically),
// prints every buffer it holds with malloc_usable_size, and the walker must find each one in a
// gcore of it: live buffers at their exact address and usable size, used; freed ones (thread
// caches included) not used.
//
// Needs gdb (gcore) and libjemalloc2/libjemalloc-dev (scripts/setup.sh --tests installs them).
// Without them the tests are skipped with a visible warning, except under CI (CI set), where they
// fail.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/unclaimed.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/heap_walk.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

const char *const kJemallocLibrary = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

/// Why a jemalloc process cannot be dumped here ("" when it can); `program` must exist too.
std::string cannotRun(const std::string &program) {
  if (!canRunGcore())
    return "gcore is missing or ptrace is not allowed";
  if (!std::filesystem::exists(kJemallocLibrary))
    return std::string(kJemallocLibrary) + " is missing (apt-get install libjemalloc2)";
  if (!std::filesystem::exists(program))
    return program + " was not built (libjemalloc-dev missing when cmake ran?)";
  return "";
}

/// True when the test can go on; else skips it (availableOrSkipped: a failure under CI).
bool canRun(const std::string &program) {
  const std::string why = cannotRun(program);
  return availableOrSkipped(why.empty(), "cannot run the jemalloc ground truth: " + why);
}

/// Sets LD_PRELOAD for the processes started while it lives (not for gcore, started later).
class Preload {
public:
  explicit Preload(const char *library) { setenv("LD_PRELOAD", library, 1); }
  ~Preload() { unsetenv("LD_PRELOAD"); }
};

/// A gcore'd run of `program` (with jemalloc preloaded when `preload`): its manifest and core.
struct Dumped {
  std::vector<nlohmann::json> manifest;
  std::string core;
};

Dumped dumpProgram(const std::string &program, bool preload, const std::string &name) {
  std::optional<Preload> env;
  if (preload)
    env.emplace(kJemallocLibrary);
  LiveProcess proc(program);
  env.reset();
  Dumped d{proc.manifest(), scratchDir(name) + "/core"};
  proc.gcore(d.core);
  return d;
}

/// jemalloc's size classes up to 2^62 as sc.c makes them with LG_QUANTUM 4 and 4 classes per
/// doubling: 8, then 16 ... 128 in steps of 16, then base + k * base / 4 for k = 1..4.
std::set<uint64_t> jemallocSizeClasses() {
  std::set<uint64_t> sizes = {8};
  for (uint64_t s = 16; s <= 128; s += 16)
    sizes.insert(s);
  for (uint64_t base = 128; base < (1ull << 62); base *= 2)
    for (uint64_t k = 1; k <= 4; ++k)
      sizes.insert(base + k * base / 4);
  return sizes;
}

/// The last record per address: a freed buffer's address may be handed out again later.
std::map<uint64_t, nlohmann::json> lastRecordByAddress(const std::vector<nlohmann::json> &m) {
  std::map<uint64_t, nlohmann::json> out;
  for (const nlohmann::json &entry : m)
    out[manifestAddress(entry)] = entry;
  return out;
}

/// Every check of alloc_truth's manifest against a walk of its core.
void checkAgainstManifest(const Snapshot &snap, const std::vector<nlohmann::json> &manifest,
                          bool statically_linked) {
  WalkedHeap w = walkHeap(snap, "jemalloc");
  REQUIRE(w.error.empty());
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  CHECK(w.warnings.empty());
  REQUIRE(manifest.size() > 190);

  const std::map<uint64_t, nlohmann::json> last = lastRecordByAddress(manifest);
  unsigned used = 0, freed = 0, freed_seen_free = 0;
  std::set<std::string> hows;
  std::map<std::string, std::set<uint64_t>> arenas_by_how;
  for (const auto &[address, m] : last) {
    std::string how = m.at("how").get<std::string>();
    hows.insert(how);
    INFO("manifest entry " << m.dump());
    const Allocation *a = w.at(address);
    if (m.at("state") == "used") {
      ++used;
      REQUIRE(a != nullptr);
      CHECK(a->size == m.at("usable_size").get<uint64_t>());
      CHECK(a->state == AllocState::Used);
      CHECK(a->arena != 0);
      CHECK(a->chunk_address <= a->address);
      CHECK(a->address + a->size <= a->chunk_address + a->chunk_size);
      arenas_by_how[how == "thread" ? m.at("thread").get<std::string>() : how].insert(a->arena);
      continue;
    }
    ++freed;
    if (a) {
      CHECK(a->state == AllocState::Free);
      CHECK(a->size == m.at("usable_size").get<uint64_t>());
      ++freed_seen_free;
    }
  }
  CHECK(used > 120);
  CHECK(freed > 30);
  // Freed small buffers stay in their slab: the bitmap or a thread cache says they are free.
  CHECK(freed_seen_free > 30);
  for (const char *how : {"class", "calloc", "aligned", "realloc", "large", "thread", "free-class",
                          "free-thread", "free-large"})
    CHECK(hows.count(how) == 1);

  // Each thread has its own arena, and the 16 and 40 MiB blocks live in the huge arena.
  REQUIRE(arenas_by_how["t1"].size() == 1);
  REQUIRE(arenas_by_how["t2"].size() == 1);
  REQUIRE(arenas_by_how["large"].size() == 1);
  std::set<uint64_t> distinct = {*arenas_by_how["t1"].begin(), *arenas_by_how["t2"].begin(),
                                 *arenas_by_how["large"].begin()};
  CHECK(distinct.size() == 3);
  CHECK(arenas_by_how["class"].count(*arenas_by_how["large"].begin()) == 0);

  // The thread caches were read: the threads' freed buffers sit in them, still marked allocated.
  CHECK(std::stoull(w.fact("tcaches")) == 3);
  CHECK(std::stoull(w.fact("tcache_cached")) > 20);
  CHECK(w.fact("small_state") == "slab bitmaps and thread caches read");
  CHECK(w.fact("found_in").find(statically_linked ? "(linked in statically)" : "libjemalloc") !=
        std::string::npos);

  // Every size is a jemalloc size class; allocations come in address order and never overlap.
  CHECK(w.result.size_classes);
  const std::set<uint64_t> classes = jemallocSizeClasses();
  for (size_t i = 0; i < w.allocations.size(); ++i) {
    const Allocation &c = w.allocations[i];
    CHECK(classes.count(c.size) == 1);
    if (i > 0)
      CHECK(w.allocations[i - 1].chunk_address + w.allocations[i - 1].chunk_size <=
            c.chunk_address);
  }

  // No live buffer lies in memory the walker calls free.
  for (const auto &[address, m] : last) {
    if (m.at("state") != "used")
      continue;
    for (const HeapArea &area : w.result.areas)
      if (area.kind == "dirty" || area.kind == "muzzy" || area.kind == "retained")
        CHECK_FALSE((address >= area.start && address < area.start + area.size));
  }

  // The walker explains the heap: of the anonymous memory only jemalloc's and the program's .bss
  // (2.1 MiB and 0.3 MiB) and a few pages stay unclaimed, out of more than 100 MiB.
  uint64_t unclaimed = 0, walkable = 0;
  for (const UnclaimedRange &r : unclaimedRanges(snap, w.result.areas))
    unclaimed += r.size;
  for (const Region &r : snap.regions)
    if (r.cls == RegionClass::Anonymous || r.cls == RegionClass::Heap)
      walkable += r.captured;
  CHECK(walkable > (100u << 20));
  CHECK(unclaimed < (3u << 20));
}

/// The edata_t that the extent map names for the page of `address` (root from the walker's
/// `extent_map` fact; leaf elements hold the descriptor in bits 7-47, docs/heap-jemalloc.md).
uint64_t descriptorOf(const Snapshot &snap, const WalkedHeap &w, uint64_t address) {
  const std::string map = w.fact("extent_map"); // "rtree root 0x..., 1 leaf"
  const uint64_t root = *parseHexAddress(map.substr(11, map.find(',') - 11));
  AddressSpace memory(snap);
  uint64_t leaf = 0, bits = 0;
  REQUIRE(memory.readU64(root + 8 * (address >> 30), leaf));
  REQUIRE(memory.readU64(leaf + 8 * ((address >> 12) & 0x3ffff), bits));
  return bits & 0x0000ffffffffff80ull;
}

/// Overwrites the u64 at `address` of the core file behind `snap`.
void patchCore(const Snapshot &snap, const std::string &path, uint64_t address, uint64_t value) {
  const MemoryRange *r = AddressSpace(snap).rangeContaining(address);
  REQUIRE(r != nullptr);
  const auto offset = r->bytes.data() + (address - r->start) -
                      reinterpret_cast<const uint8_t *>(snap.file->getBufferStart());
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(offset);
  file.write(reinterpret_cast<const char *>(&value), 8);
  REQUIRE(file.good());
}

} // namespace

TEST_CASE("jemalloc walker finds every buffer of alloc_truth with libjemalloc preloaded",
          "[live]") {
  const std::string program = fixtureProgram("alloc_truth");
  if (!canRun(program))
    return;
  Dumped d = dumpProgram(program, true, "jemalloc_truth_preloaded");
  auto snap = openSnapshot(d.core);
  checkAgainstManifest(*snap, d.manifest, false);

  // glibc's walker, which also detects this process (libc is mapped), claims none of it.
  AddressSpace memory(*snap);
  if (walkerNamed("glibc").detect(memory)) {
    WalkedHeap glibc = walkHeap(*snap, "glibc");
    CHECK(glibc.allocations.empty());
  }

  // Damage one slab (an impossible size class) and one large extent (too small for its class)
  // in the core: each is a warning, and everything else is still found.
  const WalkedHeap before = walkHeap(*snap, "jemalloc");
  uint64_t small = 0, large = 0;
  for (const auto &[address, m] : lastRecordByAddress(d.manifest))
    if (m.at("state") == "used" && m.at("how") == "class") {
      uint64_t usable = m.at("usable_size").get<uint64_t>();
      if (usable == 1024 && !small)
        small = address;
      if (usable == 131072 && !large)
        large = address;
    }
  REQUIRE(small != 0);
  REQUIRE(large != 0);
  const uint64_t slab_edata = descriptorOf(*snap, before, small),
                 large_edata = descriptorOf(*snap, before, large);
  uint64_t bits = 0;
  REQUIRE(AddressSpace(*snap).readU64(slab_edata, bits));
  patchCore(*snap, d.core, slab_edata, (bits & ~(0xffull << 20)) | (250ull << 20));
  patchCore(*snap, d.core, large_edata + 0x10, 0x2000);
  snap = openSnapshot(d.core);
  WalkedHeap after = walkHeap(*snap, "jemalloc");
  REQUIRE(after.error.empty());
  CHECK(after.warned("has size class 250"));
  CHECK(after.warned("its last page is not mapped to it")); // the size no longer ends there
  CHECK(after.at(small) == nullptr);
  CHECK(after.at(large) == nullptr);
  unsigned still_found = 0;
  for (const Allocation &a : before.allocations)
    if (a.chunk_address != (small & ~uint64_t(4095)) || a.size != 1024)
      still_found += after.at(a.address) != nullptr;
  CHECK(still_found + 4 >= before.allocations.size() - 1); // the slab's 4 regions and the extent
  CHECK(after.seconds < kHangGuardSeconds);                // a hang guard
  snap.reset();
  std::filesystem::remove(d.core); // 150 MB (a failed REQUIRE leaves it for a look)
}

TEST_CASE("jemalloc walker finds every buffer of alloc_truth with jemalloc linked in statically",
          "[live]") {
  const std::string program = fixtureProgram("alloc_truth_jemalloc_static");
  if (!canRun(program))
    return;
  Dumped d = dumpProgram(program, false, "jemalloc_truth_static");
  auto snap = openSnapshot(d.core);
  checkAgainstManifest(*snap, d.manifest, true);
  std::filesystem::remove(d.core);
}
