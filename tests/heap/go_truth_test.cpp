// The go walker against ground truth: fixtures/go/go_truth.go holds known []byte backing arrays
// (the story's buffers, copies, a zero-filled pool, a doubling chain, small arrays, dropped ones)
// and goroutines parked on deep stacks, and prints where each lies and what the runtime rounded
// it up to. Its three builds (with symbols, stripped, with cgo and glibc) are dumped with gcore
// and every array must be found inside a reported object of its size class, in the right state
// and, through the whole analysis, with the right kind.
//
// The programs need Debian's Go (scripts/setup.sh installs golang-go). Without it or without
// gcore the tests are skipped with a visible warning, except under CI (CI set), where they fail.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <variant>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The Go fixture `name` built into the build tree, or "" when it cannot run here (then the
/// caller returns; under CI that is a failure instead).
std::string goFixture(const std::string &name) {
  std::string path = fixtureProgram("go/" + name), why;
  if (!std::filesystem::exists(path))
    why = path + " was not built (no Go toolchain when CMake ran: run scripts/setup.sh)";
  else if (!canRunGcore())
    why = "gcore is missing or ptrace is not allowed";
  if (why.empty())
    return path;
  cannotRunHere("dump " + name, why);
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

/// Starts `program`, dumps it and checks the core; the core is deleted afterwards (700 MB: the
/// runtime's address space reservations, which gdb writes out as zeros).
void checkLive(const std::string &name, bool symbols,
               const std::function<void(const std::string &core)> &more = {}) {
  std::string program = goFixture(name);
  if (program.empty())
    return;
  LiveProcess proc(program);
  std::string core = scratchDir("go_truth_" + name) + "/core";
  proc.gcore(core);
  {
    auto snap = openDump(core);
    if (!snap)
      FAIL(llvm::toString(snap.takeError()));
    checkCore(**snap, proc.manifest(), symbols);
  }
  if (more)
    more(core);
  std::filesystem::remove(core);
}

} // namespace

TEST_CASE("go walker finds every planted array of a live Go program (symbol table)") {
  checkLive("go_truth", true, [](const std::string &core) {
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
  });
}

TEST_CASE("go walker finds every planted array of a stripped Go program (no symbols)") {
  checkLive("go_truth_stripped", false);
}

TEST_CASE("go walker beside glibc: a cgo Go program's heaps are walked by their own walkers") {
  checkLive("go_truth_cgo", true);
}
