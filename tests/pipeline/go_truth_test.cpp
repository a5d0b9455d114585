// The go walker against ground truth: fixtures/go/go_truth.go holds known []byte backing arrays
// (the story's buffers, copies, a zero-filled pool, a doubling chain, small arrays, dropped ones)
// and goroutines parked on deep stacks, and prints where each lies and what the runtime rounded
// it up to. Its three builds (with symbols, stripped, with cgo and glibc) are dumped with gcore
// and every array must be found inside a reported object of its size class, in the right state
// and, through the whole analysis, with the right kind and the findings the story has on glibc.
// One more run is dumped before the last collection's spans are swept (-unswept), and one core is
// damaged in memory (copy-on-write) to see the walker skip what is broken and keep the rest.
//
// Only the first core is dumped as a user's gcore would be (0.7 GB, most of it the runtime's
// PROT_NONE reservations written as zeros); the others run with -trim, which leaves those out.
//
// The programs need Debian's Go (scripts/setup.sh --tests installs golang-go). Without it or
// without gcore the tests are skipped with a visible warning, except under CI (CI set), where they
// fail.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/finding_numbers.h"
#include "support/heap_walk.h"
#include "support/synthetic_heaps.h"
#include "support/test_support.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <map>
#include <sys/mman.h>
#include <unistd.h>
#include <variant>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The Go fixture `name` built into the build tree, or "" when it cannot run here (then the
/// caller returns; under CI that is a failure instead).
std::string goFixture(const std::string &name) {
  std::string path = fixtureProgram("go/" + name), why;
  if (!std::filesystem::exists(path))
    why = path + " was not built (no Go toolchain when CMake ran: run scripts/setup.sh --tests)";
  else if (!canRunGcore())
    why = "gcore is missing or ptrace is not allowed";
  if (why.empty())
    return path;
  availableOrSkipped(false, "cannot dump " + name + ": " + why);
  return "";
}

uint64_t addressOf(const nlohmann::json &entry) {
  return *parseHexAddress(entry.at("address").get<std::string>());
}

struct Walked {
  std::vector<Allocation> allocations;
  HeapWalkResult result;
  std::vector<Diagnostic> warnings;

  std::string fact(const std::string &key) const { return factOf(result, key); }
  /// The reported object whose bytes hold [address, address + size), or nullptr.
  const Allocation *holding(uint64_t address, uint64_t size) const {
    auto it = std::upper_bound(allocations.begin(), allocations.end(), address,
                               [](uint64_t a, const Allocation &x) { return a < x.address; });
    if (it == allocations.begin())
      return nullptr;
    --it;
    return address + size <= it->address + it->size ? &*it : nullptr;
  }
  bool inArea(const std::string &kind, uint64_t address) const {
    for (const HeapArea &a : result.areas)
      if (a.kind == kind && address >= a.start && address < a.start + a.size)
        return true;
    return false;
  }
};

/// The addresses of the planted arrays called `name`, in the order the program made them.
std::vector<uint64_t> plantedAt(const std::vector<nlohmann::json> &manifest,
                                const std::string &name) {
  std::vector<uint64_t> out;
  for (const nlohmann::json &m : manifest)
    if (m.at("name") == name)
      out.push_back(addressOf(m));
  return out;
}

std::vector<uint64_t> sorted(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

/// The one finding of `type` whose addresses include `address` (REQUIREs exactly one).
const Finding &findingWith(const std::vector<Finding> &all, const std::string &type,
                           uint64_t address) {
  std::vector<const Finding *> hits;
  for (const Finding &f : all)
    if (f.type == type &&
        std::find(f.addresses.begin(), f.addresses.end(), address) != f.addresses.end())
      hits.push_back(&f);
  INFO("findings of type " << type << " holding " << hexAddress(address));
  REQUIRE(hits.size() == 1);
  return *hits.front();
}

/// What the runtime's own structures say of the slot holding `address`, read here with the Go
/// 1.19 offsets of docs/heap-go.md (tests/support/synthetic_heaps.h), not through the walker:
/// its mspan (0 when the tables do not lead to one), the span's and mheap_'s sweep generations,
/// and whether the slot is allocated (below freeindex, or its allocBits bit).
struct Slot {
  uint64_t span = 0;
  uint32_t span_sweepgen = 0, heap_sweepgen = 0;
  bool allocated = false;
};

uint32_t read32(const AddressSpace &memory, uint64_t address) {
  const uint8_t *p = memory.tryView(address, 4);
  REQUIRE(p != nullptr);
  return llvm::support::endian::read32le(p);
}

Slot slotOf(const AddressSpace &memory, uint64_t mheap, uint64_t address) {
  const GoRuntimeLayout &l = kGo119;
  Slot out;
  uint64_t table = 0, heap_arena = 0, start = 0, elemsize = 0, freeindex = 0, bits = 0;
  const uint64_t page = (address % GoHeap::kArenaBytes) / GoHeap::kPage;
  if (!memory.readU64(mheap + l.mheap_arenas, table) ||
      !memory.readU64(table + 8 * GoHeap::arenaIndex(address), heap_arena) ||
      !memory.readU64(heap_arena + l.arena_spans + 8 * page, out.span) ||
      !memory.readU64(out.span + l.start_addr, start) ||
      !memory.readU64(out.span + l.elemsize, elemsize) || elemsize == 0 ||
      !memory.readU64(out.span + l.freeindex, freeindex) ||
      !memory.readU64(out.span + l.alloc_bits, bits)) {
    out.span = 0;
    return out;
  }
  const uint64_t index = (address - start) / elemsize;
  const uint8_t *byte = memory.tryView(bits + index / 8, 1);
  out.allocated = index < freeindex || (byte && (*byte >> (index % 8)) & 1);
  out.span_sweepgen = read32(memory, out.span + l.sweepgen);
  out.heap_sweepgen = read32(memory, mheap + l.mheap_sweepgen);
  return out;
}

/// mheap_'s address as the go_mheap fact states it ("0x... (symbol runtime.mheap_ in ...)").
uint64_t mheapOf(const std::string &fact) {
  std::optional<uint64_t> mheap = parseHexAddress(fact.substr(0, fact.find(' ')));
  REQUIRE(mheap.has_value());
  return *mheap;
}

Walked walkGo(const Snapshot &snap) {
  AddressSpace memory(snap);
  const HeapWalker &go = walkerNamed("go");
  REQUIRE(go.detect(memory));
  Walked w;
  Diagnostics diags;
  auto result = go.walk(
      memory, [&](const Allocation &a) { w.allocations.push_back(a); }, diags);
  if (!result)
    FAIL(llvm::toString(result.takeError()));
  w.result = std::move(*result);
  w.warnings = diags.warnings();
  return w;
}

/// Every check of one build's core against what the program printed.
void checkCore(const Snapshot &snap, const std::vector<nlohmann::json> &manifest, bool symbols) {
  Walked w = walkGo(snap);
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  CHECK(w.warnings.empty());
  CHECK(w.result.size_classes);
  CHECK(llvm::StringRef(w.fact("go_version")).startswith("go1.19"));
  CHECK(w.fact("go_layout") == "1.19-1.20");
  INFO("go_mheap: " << w.fact("go_mheap"));
  if (symbols)
    CHECK(w.fact("go_mheap").find("(symbol runtime.mheap_ in ") != std::string::npos);
  else
    CHECK(w.fact("go_mheap").find("(the shape of mheap_.allspans") != std::string::npos);

  // Objects come in address order and never overlap.
  for (size_t i = 1; i < w.allocations.size(); ++i)
    REQUIRE(w.allocations[i - 1].address + w.allocations[i - 1].size <= w.allocations[i].address);

  unsigned used = 0, freed = 0, stacks = 0;
  for (const nlohmann::json &m : manifest) {
    INFO(m.dump());
    const uint64_t address = addressOf(m);
    if (m.at("kind") == "stack") {
      ++stacks;
      CHECK(w.inArea("goroutine-stacks", address));
      CHECK(w.holding(address, 1) == nullptr);
      continue;
    }
    const uint64_t cap = m.at("cap"), class_size = m.at("class_size");
    const Allocation *a = w.holding(address, cap);
    if (m.at("name") == "dropped-large") { // its span went back to the page heap
      ++freed;
      CHECK((a == nullptr || a->state == AllocState::Free));
      continue;
    }
    REQUIRE(a != nullptr);
    CHECK(a->size == class_size);
    CHECK(a->noscan);
    CHECK(a->arena == (address & ~uint64_t(64 * 1024 * 1024 - 1)));
    if (class_size > 32768) {
      CHECK(a->size_class == 0);
      CHECK(a->address == address);
    } else {
      CHECK(a->size_class > 0);
    }
    CHECK(w.inArea("spans", address));
    if (m.at("state") == "used") {
      ++used;
      CHECK(a->state == AllocState::Used);
    } else {
      ++freed;
      CHECK(a->state == AllocState::Free);
    }
  }
  CHECK(used == 93);
  CHECK(freed == 36);
  CHECK(stacks == 4);

  // The whole analysis: every planted array of at least 64 KiB is a go buffer of its size class
  // with the kind the program put in it; nothing else claims the Go heap's objects.
  AddressSpace memory(snap);
  Analysis analysis = analyze(memory, AnalyzeOptions{});
  std::map<uint64_t, const Buffer *> by_address;
  for (const Buffer &b : analysis.buffers)
    by_address[b.allocation.address] = &b;
  for (const nlohmann::json &m : manifest) {
    if (m.at("kind") == "stack" || m.at("state") != "used" || m.at("class_size") < 65536)
      continue;
    INFO(m.dump());
    auto it = by_address.find(addressOf(m));
    REQUIRE(it != by_address.end());
    const Buffer &b = *it->second;
    CHECK(bufferSource(analysis, b) == "go");
    CHECK(b.allocation.size == m.at("class_size"));
    CHECK(kindName(b.content.kind) == m.at("kind").get<std::string>());
    if (m.contains("payload_kind")) {
      const DetailValue *payload = b.content.details.get("payload_kind");
      REQUIRE(payload != nullptr);
      REQUIRE(std::holds_alternative<std::string>(*payload));
      CHECK(std::get<std::string>(*payload) == m.at("payload_kind").get<std::string>());
    }
  }

  // The findings the story has on glibc, on Go's sizes: the S3 frames' size class, the pool's
  // zero-filled buffers and bucket, the copies, and the trail of the doubling buffer.
  const std::vector<Finding> &all = analysis.findings;
  std::vector<uint64_t> frames = plantedAt(manifest, "aws-chunk");
  frames.push_back(plantedAt(manifest, "aws-final-chunk").front());
  const Finding &s3 = findingWith(all, "size-class", frames.front());
  CHECK(s3.addresses == sorted(frames));
  CHECK(findingNumber(s3, "size") == 139264);
  CHECK(s3.explanation.find("131,162-byte S3 signed chunk frames") != std::string::npos);
  const std::vector<uint64_t> pool = sorted(plantedAt(manifest, "zero-pool"));
  const Finding &zeros = findingWith(all, "zero-filled", pool.front());
  CHECK(zeros.addresses == pool);
  CHECK(findingNumber(zeros, "count") == 12);
  CHECK(zeros.bytes == 12 * 1048576);
  const Finding &bucket = findingWith(all, "size-class", pool.front());
  CHECK(bucket.explanation.find("1,048,576 bytes is a power-of-two pool bucket") !=
        std::string::npos);
  for (uint64_t a : pool)
    CHECK(std::find(bucket.addresses.begin(), bucket.addresses.end(), a) != bucket.addresses.end());
  const std::vector<uint64_t> copies = sorted(plantedAt(manifest, "jpeg-copy"));
  const Finding &dup = findingWith(all, "duplicates", copies.front());
  CHECK(dup.addresses == copies);
  CHECK(dup.bytes == 2 * 196608);
  const std::vector<uint64_t> chain = plantedAt(manifest, "doubling");
  const Finding &growth = findingWith(all, "growth-chain", chain.front());
  REQUIRE(growth.addresses.size() == chain.size());
  for (size_t i = 0; i < chain.size(); ++i) { // the 128 KiB step may be a jpeg slice: same bytes
    INFO("step " << i << " at " << hexAddress(growth.addresses[i]));
    const uint64_t size = 65536 << i;
    const uint8_t *found = memory.tryView(growth.addresses[i], size);
    const uint8_t *planted = memory.tryView(chain[i], size);
    REQUIRE(found != nullptr);
    REQUIRE(planted != nullptr);
    CHECK(std::memcmp(found, planted, size) == 0);
  }
  CHECK(growth.addresses.front() == chain.front());
  CHECK(growth.addresses.back() == chain.back());
  CHECK(findingNumber(growth, "first_size") == 65536);
  CHECK(findingNumber(growth, "final_size") == 524288);
  CHECK(findingNumber(growth, "growth_percent") == 200);

  for (const Buffer &b : analysis.buffers)
    if (bufferSource(analysis, b) != "go") {
      INFO("a " << bufferSource(analysis, b).str() << " buffer at "
                << hexAddress(b.allocation.address));
      CHECK_FALSE(w.inArea("spans", b.allocation.address));
      CHECK_FALSE(w.inArea("goroutine-stacks", b.allocation.address));
    }
  for (const HeapWalkResult &h : analysis.heaps)
    if (h.walker != "go")
      for (const HeapArea &area : h.areas)
        for (const HeapArea &mine : w.result.areas)
          CHECK((area.start + area.size <= mine.start || mine.start + mine.size <= area.start));

  // The arena is anonymous memory, not a stack, though the Go threads' stack pointers are in it.
  for (const nlohmann::json &m : manifest)
    if (m.at("kind") != "stack") {
      const Region *r = memory.regionContaining(addressOf(m));
      REQUIRE(r != nullptr);
      CHECK(r->cls == RegionClass::Anonymous);
    }
}

/// Starts the Go fixture `name` with `args`, dumps it, checks the core, then runs `more` on it;
/// the core is deleted afterwards.
void checkLive(const std::string &name, const std::vector<std::string> &args, bool symbols,
               const std::function<void(const std::string &core, const LiveProcess &)> &more = {}) {
  std::string program = goFixture(name);
  if (program.empty())
    return;
  LiveProcess proc(program, args);
  std::string core = scratchDir("go_truth_" + name) + "/core";
  proc.gcore(core);
  {
    auto snap = openDump(core);
    if (!snap)
      FAIL(llvm::toString(snap.takeError()));
    checkCore(**snap, proc.manifest(), symbols);
  }
  if (more)
    more(core, proc);
  std::filesystem::remove(core);
}

/// A dump opened over a private, writable mapping of its file: writes through bytes() land in
/// this process's copy of the pages they touch, never in the file.
class DamageableDump {
public:
  explicit DamageableDump(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    size_ = std::filesystem::file_size(path);
    base_ = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    ::close(fd);
    REQUIRE(base_ != MAP_FAILED);
    auto snap = openDump(llvm::MemoryBuffer::getMemBuffer(
        llvm::StringRef(static_cast<const char *>(base_), size_), path, false));
    if (!snap)
      FAIL(llvm::toString(snap.takeError()));
    snap_ = std::move(*snap);
  }
  ~DamageableDump() {
    snap_.reset();
    ::munmap(base_, size_);
  }
  DamageableDump(const DamageableDump &) = delete;
  DamageableDump &operator=(const DamageableDump &) = delete;

  const Snapshot &snapshot() const { return *snap_; }
  /// Overwrites the u64 at `address` in the dumped memory.
  void put64(uint64_t address, uint64_t value) {
    for (const MemoryRange &m : snap_->memory)
      if (address >= m.start && address + 8 <= m.end()) {
        std::memcpy(const_cast<uint8_t *>(m.bytes.data()) + (address - m.start), &value, 8);
        return;
      }
    FAIL("the dump does not hold " << hexAddress(address));
  }

private:
  void *base_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<Snapshot> snap_;
};

/// Damages the heap of a Go 1.19 core in a private copy and walks it: a span of 1,152-byte
/// objects whose element size is wrong, a 1 MiB object's span with an absurd page count, a span
/// with an absurd free index, a free page whose span table entry points into unmapped memory and
/// another that points back at an earlier span. Each broken span is skipped with a warning (its
/// arrays are not reported), every other array is found as in the healthy core.
void checkDamagedCore(const std::string &core, const std::vector<nlohmann::json> &manifest,
                      const Walked &healthy) {
  DamageableDump dump(core);
  AddressSpace memory(dump.snapshot());
  const uint64_t mheap = mheapOf(healthy.fact("go_mheap"));
  const GoRuntimeLayout &l = kGo119;
  const uint64_t kept = plantedAt(manifest, "kept-1152").front();
  const uint64_t pooled = plantedAt(manifest, "zero-pool").front();
  const uint64_t small = plantedAt(manifest, "small").front(); // 100 bytes, class 112
  const Slot a = slotOf(memory, mheap, kept), b = slotOf(memory, mheap, pooled),
             c = slotOf(memory, mheap, small);
  REQUIRE(a.span != 0);
  REQUIRE(b.span != 0);
  REQUIRE(c.span != 0);
  uint64_t a_start = 0, c_start = 0;
  REQUIRE(memory.readU64(a.span + l.start_addr, a_start));
  REQUIRE(memory.readU64(c.span + l.start_addr, c_start));
  dump.put64(a.span + l.elemsize, 1000);
  dump.put64(b.span + l.npages, uint64_t(1) << 40);
  dump.put64(c.span + l.freeindex, uint64_t(1) << 40);
  // Two free pages at the end of the heap's first arena.
  uint64_t table = 0, heap_arena = 0;
  const uint64_t arena = kept & ~(GoHeap::kArenaBytes - 1);
  REQUIRE(memory.readU64(mheap + l.mheap_arenas, table));
  REQUIRE(memory.readU64(table + 8 * GoHeap::arenaIndex(arena), heap_arena));
  const uint64_t last_entry = heap_arena + l.arena_spans + 8 * (GoHeap::kPagesPerArena - 1);
  uint64_t entry = 1;
  REQUIRE(memory.readU64(last_entry, entry));
  REQUIRE(entry == 0); // the fixture's heap is far smaller than one arena
  dump.put64(last_entry, 0x10);
  dump.put64(last_entry - 8, a.span);

  Walked damaged = walkGo(dump.snapshot());
  for (const Diagnostic &d : damaged.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  CHECK(anyWarningHas(damaged.warnings, "size class 33 with 7 objects of 1000 bytes in 1 pages"));
  CHECK(anyWarningHas(damaged.warnings, "and 1099511627776 pages are no span; skipped"));
  CHECK(anyWarningHas(damaged.warnings, "free index 1099511627776 or count"));
  CHECK(
      anyWarningHas(damaged.warnings, "go span 0x10: the mspan of page " +
                                          hexAddress(arena + GoHeap::kArenaBytes - GoHeap::kPage) +
                                          " is not in the dump"));
  CHECK(damaged.warnings.size() == 4);
  auto broken = [&](uint64_t address) {
    const uint64_t in_a = address - a_start, in_c = address - c_start;
    return in_a < GoHeap::kPage || address == pooled || in_c < GoHeap::kPage;
  };
  unsigned found = 0;
  for (const nlohmann::json &m : manifest) {
    if (m.at("kind") == "stack" || m.at("name") == "dropped-large")
      continue;
    INFO(m.dump());
    const uint64_t address = addressOf(m);
    const Allocation *before = healthy.holding(address, m.at("cap"));
    const Allocation *after = damaged.holding(address, m.at("cap"));
    REQUIRE(before != nullptr);
    if (broken(address)) {
      CHECK(after == nullptr);
      continue;
    }
    REQUIRE(after != nullptr);
    CHECK(after->address == before->address);
    CHECK(after->size == before->size);
    CHECK(after->state == before->state);
    ++found;
  }
  CHECK(found > 100);
  CHECK(damaged.allocations.size() < healthy.allocations.size());
}

} // namespace

TEST_CASE("go walker finds every planted array of a live Go program (symbol table)", "[live]") {
  checkLive("go_truth", {}, true, [](const std::string &core, const LiveProcess &proc) {
    // --exe: a copy of the executable elsewhere is used (its build ID matches); another build of
    // the same program (stripped: other link flags, another Go build ID) is refused with a warning.
    std::string dir = scratchDir("go_truth_exe");
    std::filesystem::copy_file(fixtureProgram("go/go_truth"), dir + "/copy");
    CommandResult same = runCommand("'" + toolPath() + "' heap '" + core + "' --exe '" + dir +
                                    "/copy' --min-size 1G");
    CHECK(same.exit_code == 0);
    CHECK(same.out.find("(symbol runtime.mheap_ in " + dir + "/copy)") != std::string::npos);
    CommandResult other = runCommand("'" + toolPath() + "' heap '" + core + "' --exe '" +
                                     fixtureProgram("go/go_truth_stripped") + "' --min-size 1G");
    CHECK(other.exit_code == 0);
    CHECK(other.out.find("its build ID differs from the dumped program's") != std::string::npos);
    CHECK(other.out.find("(the shape of mheap_.allspans") != std::string::npos);

    auto snap = openDump(core);
    if (!snap)
      FAIL(llvm::toString(snap.takeError()));
    checkDamagedCore(core, proc.manifest(), walkGo(**snap));
  });
}

TEST_CASE("go walker finds every planted array of a stripped Go program (no symbols)", "[live]") {
  checkLive("go_truth_stripped", {"-trim"}, false);
}

TEST_CASE("go walker beside glibc: a cgo Go program's heaps are walked by their own walkers",
          "[live]") {
  checkLive("go_truth_cgo", {"-trim"}, true);
}

TEST_CASE("go walker: arrays dropped before a collection whose spans are not yet swept are free",
          "[live]") {
  checkLive("go_truth", {"-unswept", "-trim"}, true,
            [](const std::string &core, const LiveProcess &proc) {
              auto snap = openDump(core);
              if (!snap)
                FAIL(llvm::toString(snap.takeError()));
              AddressSpace memory(**snap);
              Walked w = walkGo(**snap);
              INFO("go_spans: " << w.fact("go_spans"));
              const std::string spans = w.fact("go_spans");
              const size_t open = spans.find('(');
              REQUIRE(open != std::string::npos);
              CHECK(std::stoull(spans.substr(open + 1)) > 0);
              // The runtime's own bits: dropped arrays that the allocation bits still call
              // allocated, in spans the sweeper has not reached. checkCore found them free.
              const uint64_t mheap = mheapOf(w.fact("go_mheap"));
              unsigned unswept_dropped = 0;
              for (uint64_t address : plantedAt(proc.manifest(), "dropped-1152")) {
                const Slot slot = slotOf(memory, mheap, address);
                REQUIRE(slot.span != 0);
                if (slot.span_sweepgen == slot.heap_sweepgen - 2 && slot.allocated)
                  ++unswept_dropped;
              }
              CHECK(unswept_dropped >= 16);
            });
}
