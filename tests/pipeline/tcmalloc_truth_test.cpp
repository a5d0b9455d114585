// The tcmalloc walker against ground truth from real processes: fixtures/programs/alloc_truth and
// free_lists print every buffer they hold and free (with malloc_usable_size as tcmalloc answers
// it); they run with Debian's gperftools 2.10 preloaded (libtcmalloc_minimal.so.4, and the full
// libtcmalloc.so.4 with and without sampling) or linked in (libtcmalloc_minimal.a), gcore dumps
// them, and the walker must find every live buffer at its exact address with that usable size,
// report no freed one as used, and share no memory with the other walkers.
//
// The tests need gcore and Debian's libtcmalloc-minimal4, libgoogle-perftools4 and
// libgoogle-perftools-dev (scripts/setup.sh --tests installs them). Without them they are skipped
// with a visible warning, except under CI (CI set), where they fail.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "support/heap_walk.h"
#include "support/test_support.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

constexpr const char *kMinimal = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";
constexpr const char *kFull = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4";
constexpr uint64_t kMaxSmall = 256 * 1024; // tcmalloc's kMaxSize: larger requests get whole pages

/// True when a test that needs `files` (and gcore) can run; otherwise the test is skipped, saying
/// what is missing (availableOrSkipped: a failure under CI).
bool canRun(std::initializer_list<std::string> files) {
  std::string why;
  if (!canRunGcore())
    why = "gcore is missing or ptrace is not allowed";
  for (const std::string &f : files)
    if (why.empty() && !std::filesystem::exists(f))
      why = f + " is missing (scripts/setup.sh --tests installs it)";
  return availableOrSkipped(why.empty(), "cannot run a tcmalloc process: " + why);
}

/// A live run of `program` with the environment settings `env` ("LD_PRELOAD=...") dumped by gcore.
struct Dumped {
  std::unique_ptr<LiveProcess> process;
  std::unique_ptr<Snapshot> snapshot;
  std::string core;
  ~Dumped() {
    snapshot.reset();
    std::filesystem::remove(core); // the cores are large (alloc_truth holds 56 MiB)
  }
};

std::unique_ptr<Dumped> dump(const std::string &name, const std::string &program,
                             const std::vector<std::string> &env) {
  auto d = std::make_unique<Dumped>();
  std::vector<std::string> args = env;
  args.push_back(program);
  d->process = std::make_unique<LiveProcess>("/usr/bin/env", args);
  d->core = scratchDir("tcmalloc_" + name) + "/core";
  d->process->gcore(d->core);
  auto snap = openDump(d->core);
  if (!snap)
    FAIL("cannot open " << d->core << ": " << llvm::toString(snap.takeError()));
  d->snapshot = std::move(*snap);
  return d;
}

uint64_t addressOf(const nlohmann::json &entry) {
  return *parseHexAddress(entry.at("address").get<std::string>());
}

/// The buffers as they are at the end: each line of the manifest (in the order the events
/// happened) replaces the lines before it whose bytes it overlaps. An address can be freed and
/// allocated again, and a freed buffer's pages can go back to the page heap and be cut into
/// buffers of another size.
std::map<uint64_t, nlohmann::json> finalStates(const std::vector<nlohmann::json> &manifest) {
  std::map<uint64_t, nlohmann::json> out;
  for (const nlohmann::json &m : manifest) {
    const uint64_t start = addressOf(m), end = start + m.at("usable_size").get<uint64_t>();
    auto it = out.lower_bound(start);
    if (it != out.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second.at("usable_size").get<uint64_t>() > start)
        it = prev;
    }
    while (it != out.end() && it->first < end)
      it = out.erase(it);
    out[start] = m;
  }
  return out;
}

/// The tcmalloc walker's walk of `snap`, which it must detect.
WalkedHeap walk(const Snapshot &snap) {
  const HeapWalker &walker = walkerNamed("tcmalloc");
  REQUIRE(walker.detect(AddressSpace(snap)));
  WalkedHeap w = walkHeap(walker, snap);
  if (!w.error.empty())
    FAIL(w.error);
  return w;
}

/// Every check of a manifest's final states against a walk of the process's core: each live
/// buffer found exactly (address, usable size, used, whole pages above kMaxSize), each freed one
/// inside a free allocation and inside no used one; allocations in order, inside the page heap;
/// and the other walkers (and, with `region_scan`, the region scan) claim none of tcmalloc's
/// memory. Returns the walk.
WalkedHeap checkTruth(const Snapshot &snap, const std::vector<nlohmann::json> &manifest,
                      bool region_scan = true) {
  WalkedHeap w = walk(snap);
  CHECK(w.warnings.empty());
  CHECK(w.result.size_classes);
  CHECK(w.seconds < kHangGuardSeconds);

  unsigned used = 0, freed = 0;
  for (const auto &[address, m] : finalStates(manifest)) {
    INFO("manifest entry " << m.dump());
    if (m.at("state") == "used") {
      const uint64_t usable = m.at("usable_size").get<uint64_t>();
      ++used;
      const Allocation *a = w.at(address);
      REQUIRE(a != nullptr);
      CHECK(a->size == usable);
      CHECK(a->state == AllocState::Used);
      CHECK(a->whole_pages == (usable > kMaxSmall));
      continue;
    }
    ++freed;
    const Allocation *a = w.holding(address);
    REQUIRE(a != nullptr);
    CHECK(a->state == AllocState::Free);
    // The same free object; or the buffer's span went back to the page heap, and its pages are a
    // free run or free objects of a span they were cut into since, whose objects may be of any
    // size and may start at the buffer's address too: so only the state says anything here.
  }
  CHECK(used > 50);
  CHECK(freed > 20);

  std::vector<std::pair<uint64_t, uint64_t>> page_heap;
  for (const HeapArea &area : w.result.areas)
    if (area.kind == "page-heap")
      page_heap.emplace_back(area.start, area.start + area.size);
  REQUIRE(!page_heap.empty());
  auto inPageHeap = [&](uint64_t lo, uint64_t hi) {
    for (const auto &[start, end] : page_heap)
      if (lo >= start && hi <= end)
        return true;
    return false;
  };
  for (size_t i = 0; i < w.allocations.size(); ++i) {
    const Allocation &a = w.allocations[i];
    CHECK(inPageHeap(a.chunk_address, a.chunk_address + a.chunk_size));
    if (i)
      CHECK(w.allocations[i - 1].chunk_address + w.allocations[i - 1].chunk_size <=
            a.chunk_address);
  }

  // The other walkers (glibc is always there) and the region scan keep out of tcmalloc's memory:
  // its areas and the brk heap, which tcmalloc takes with sbrk (glibc's malloc is never used in
  // these processes: tcmalloc replaces malloc before anything allocates).
  std::vector<std::pair<uint64_t, uint64_t>> tcmalloc_owned;
  for (const HeapArea &area : w.result.areas)
    tcmalloc_owned.emplace_back(area.start, area.start + area.size);
  for (const Region &r : snap.regions)
    if (r.cls == RegionClass::Heap)
      tcmalloc_owned.emplace_back(r.start, r.end());
  auto touchesTcmalloc = [&](uint64_t lo, uint64_t hi) {
    for (const auto &[start, end] : tcmalloc_owned)
      if (lo < end && start < hi)
        return true;
    return false;
  };
  AddressSpace memory(snap);
  Diagnostics diags;
  std::vector<std::pair<uint16_t, Allocation>> everyone;
  std::vector<HeapWalkResult> heaps = walkHeaps(
      memory, {},
      [&](unsigned, uint16_t heap, const Allocation &a) { everyone.emplace_back(heap, a); }, diags);
  unsigned tcmalloc_heaps = 0;
  for (const HeapWalkResult &h : heaps) {
    tcmalloc_heaps += h.walker == "tcmalloc";
    if (h.walker != "tcmalloc")
      for (const HeapArea &area : h.areas)
        CHECK_FALSE(touchesTcmalloc(area.start, area.start + area.size));
  }
  CHECK(tcmalloc_heaps == 1);
  for (const auto &[heap, a] : everyone)
    if (heaps[heap].walker != "tcmalloc")
      CHECK_FALSE(touchesTcmalloc(a.chunk_address, a.chunk_address + a.chunk_size));
  if (!region_scan)
    return w;
  Analysis analysis = analyze(memory, AnalyzeOptions{});
  for (const Buffer &b : analysis.buffers)
    if (bufferSource(analysis, b) != "tcmalloc")
      CHECK_FALSE(touchesTcmalloc(b.allocation.address,
                                  b.allocation.address + std::max<uint64_t>(b.allocation.size, 1)));
  return w;
}

} // namespace

TEST_CASE("tcmalloc walker: alloc_truth under Debian's libtcmalloc_minimal", "[live]") {
  if (!canRun({kMinimal}))
    return;
  auto d = dump("minimal", fixtureProgram("alloc_truth"), {std::string("LD_PRELOAD=") + kMinimal});
  const std::vector<nlohmann::json> &manifest = d->process->manifest();
  WalkedHeap w = checkTruth(*d->snapshot, manifest);
  std::set<std::string> hows;
  for (const nlohmann::json &m : manifest)
    hows.insert(m.at("how").get<std::string>());
  for (const char *how : {"class", "calloc", "aligned", "realloc", "large", "thread", "free-class",
                          "free-thread", "free-large"})
    CHECK(hows.count(how) == 1);
  CHECK(w.fact("globals_in").find("libtcmalloc_minimal.so.4") != std::string::npos);
  CHECK(w.count("thread_caches") >= 3); // main, t1, t2
  CHECK(w.count("free_in_thread_caches") > 0);
  CHECK(w.count("large_spans") > 0);
  CHECK(w.count("free_spans") > 0);
  CHECK(w.fact("sampled_spans") == "0"); // the minimal library never samples
}

TEST_CASE("tcmalloc walker: alloc_truth under Debian's full libtcmalloc", "[live]") {
  if (!canRun({kFull}))
    return;
  auto d = dump("full", fixtureProgram("alloc_truth"), {std::string("LD_PRELOAD=") + kFull});
  WalkedHeap w = checkTruth(*d->snapshot, d->process->manifest());
  CHECK(w.fact("globals_in").find("libtcmalloc.so.4") != std::string::npos);
}

TEST_CASE("tcmalloc walker: sampled allocations (full libtcmalloc, TCMALLOC_SAMPLE_PARAMETER)",
          "[live]") {
  if (!canRun({kFull}))
    return;
  // Sample about every 16 KiB allocated: dozens of alloc_truth's buffers get their own span, and
  // their usable size comes from the requested size their stack trace records.
  auto d = dump("sampled", fixtureProgram("alloc_truth"),
                {std::string("LD_PRELOAD=") + kFull, "TCMALLOC_SAMPLE_PARAMETER=16384"});
  WalkedHeap w = checkTruth(*d->snapshot, d->process->manifest());
  CHECK(w.count("sampled_spans") > 10);
}

TEST_CASE("tcmalloc walker: tcmalloc linked into the executable (libtcmalloc_minimal.a)",
          "[live]") {
  const std::string program = fixtureProgram("alloc_truth_tcmalloc_static");
  if (!canRun({program}))
    return;
  auto d = dump("static", program, {});
  for (const Module &m : d->snapshot->modules)
    CHECK_FALSE(llvm::StringRef(m.path).rsplit('/').second.startswith("libtcmalloc"));
  WalkedHeap w = checkTruth(*d->snapshot, d->process->manifest());
  CHECK(llvm::StringRef(w.fact("globals_in")).endswith("/alloc_truth_tcmalloc_static"));
}

TEST_CASE("tcmalloc walker: free_lists (remote frees, transfer slots, an exited thread)",
          "[live]") {
  if (!canRun({kMinimal}))
    return;
  auto d =
      dump("free_lists", fixtureProgram("free_lists"), {std::string("LD_PRELOAD=") + kMinimal});
  // The region scan is checked on alloc_truth's cores; over free_lists' 10 MiB of tcmalloc
  // metadata it would take most of this test's time under the sanitizers.
  WalkedHeap w = checkTruth(*d->snapshot, d->process->manifest(), /*region_scan=*/false);
  CHECK(w.count("free_in_thread_caches") >= 50);
  CHECK(w.count("free_in_transfer_slots") > 100);
  CHECK(w.count("thread_caches") >= 3); // producer, consumer, main; the leaver's is gone
}

TEST_CASE("tcmalloc walker: the story under libtcmalloc_minimal, planted buffers and size classes",
          "[live]") {
  if (!canRun({kMinimal}))
    return;
  auto d = dump("story", fixtureProgram("story"), {std::string("LD_PRELOAD=") + kMinimal});
  AddressSpace memory(*d->snapshot);
  Analysis analysis = analyze(memory, AnalyzeOptions{}); // the documented defaults: 64 KiB and up
  std::map<uint64_t, const Buffer *> buffers;
  for (const Buffer &b : analysis.buffers)
    buffers[b.allocation.address] = &b;

  std::map<std::string, std::set<uint64_t>> usable_by_name; // the sizes each kind was given
  std::map<uint64_t, unsigned> planted_per_size;
  for (const nlohmann::json &m : d->process->manifest()) {
    INFO(m.dump());
    const uint64_t usable = m.at("usable_size").get<uint64_t>();
    REQUIRE(buffers.count(addressOf(m)));
    const Buffer &b = *buffers.at(addressOf(m));
    CHECK(b.allocation.size == usable);
    CHECK(b.allocation.state == AllocState::Used);
    CHECK(bufferSource(analysis, b) == "tcmalloc");
    CHECK(kindName(b.content.kind) == m.at("kind").get<std::string>());
    if (m.contains("payload_kind")) {
      const DetailValue *payload = b.content.details.get("payload_kind");
      REQUIRE(payload != nullptr);
      CHECK(std::get<std::string>(*payload) == m.at("payload_kind").get<std::string>());
    }
    CHECK(b.allocation.whole_pages == (usable > kMaxSmall));
    usable_by_name[m.at("name").get<std::string>()].insert(usable);
    ++planted_per_size[usable];
  }
  // The story's two populations fall into two of tcmalloc's size classes: 131,072-byte JPEG
  // slices, and 131,162-byte aws-chunked frames one class up.
  REQUIRE(usable_by_name["jpeg-slice"].size() == 1);
  REQUIRE(usable_by_name["aws-chunk"].size() == 1);
  const uint64_t slice = *usable_by_name["jpeg-slice"].begin();
  const uint64_t frame = *usable_by_name["aws-chunk"].begin();
  CHECK(slice < frame);
  CHECK(usable_by_name["aws-final-chunk"] == std::set<uint64_t>{frame});
  for (const SizeGroup &g : analysis.groups)
    if (g.state == AllocState::Used && planted_per_size.count(g.size))
      CHECK(g.count == planted_per_size[g.size]); // nothing else holds a planted size

  std::string text_text;
  llvm::raw_string_ostream text(text_text);
  writeSummaryText(*d->snapshot, analysis, TextOptions{}, text);
  INFO(text.str());
  CHECK(text.str().find("tcmalloc size class " + groupedDigits(frame) + "  used       10") !=
        std::string::npos);
  CHECK(text.str().find("tcmalloc size class " + groupedDigits(slice)) != std::string::npos);
  // The PNG (360,106 bytes) is a large allocation: whole pages, not a size class.
  const uint64_t png = *usable_by_name["png"].begin();
  CHECK(png > kMaxSmall);
  CHECK(text.str().find("tcmalloc size class " + groupedDigits(png)) == std::string::npos);
}
