// walkHeaps: each registered walker runs only on the processes its traits' platforms include
// (a real 32-bit core and hand-built snapshots of other systems), results carry their walker's
// name, and the registry finds a walker by name.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walk.h"
#include "dumpsift/heap/walker.h"
#include "support/byte_builder.h"
#include "support/dumps.h"
#include "support/heap_walk.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// What walkHeaps did with a snapshot: the results, the allocations it passed on, the warnings.
struct Walk {
  std::vector<HeapWalkResult> heaps;
  size_t allocations = 0;
  std::vector<Diagnostic> warnings;
};

Walk walkAll(const Snapshot &snapshot, const std::vector<std::string> &only = {}) {
  AddressSpace memory(snapshot);
  Diagnostics diags;
  Walk w;
  w.heaps = walkHeaps(
      memory, only, [&](unsigned, uint16_t, const Allocation &) { ++w.allocations; }, diags);
  w.warnings = diags.warnings();
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  return w;
}

/// A process with libc.so.6 mapped and a brk heap of one free (top) chunk: the glibc walker's
/// evidence and a heap to walk.
std::unique_ptr<Snapshot> libcProcess(FakeMemory &m, Os os, unsigned pointer_size,
                                      bool little_endian) {
  m.addRegion(0x7f0000000000, 0x1000,
              FakeRegion{false, "/lib/libc.so.6", RegionClass::Image, UINT64_MAX, false});
  m.addRegion(0x555555559000, 0x1000, FakeRegion{true, "", RegionClass::Heap, UINT64_MAX, false});
  m.put64(0x555555559008, 0x1001); // the top chunk's size word: the whole heap, PREV_INUSE
  auto snap = m.snapshot();
  snap->system.os = os;
  snap->system.arch = pointer_size == 8 ? "x86_64" : "x86";
  snap->system.pointer_size = pointer_size;
  snap->system.little_endian = little_endian;
  return snap;
}

} // namespace

TEST_CASE("walkHeaps: a real 32-bit Linux core's libc is refused with a reason, nothing walked") {
  // pyelftools' 32-bit core maps /lib/i386-linux-gnu/libc-2.27.so: glibc's heaps are there, in
  // words the glibc walker does not read.
  auto snap = mustOpenDump(sharedDumpsDir() + "/pyelftools_core_linux32.elf");
  REQUIRE(snap->system.pointer_size == 4);
  REQUIRE(snap->findModule([](llvm::StringRef name) { return name == "libc-2.27.so"; }));
  Walk w = walkAll(*snap);
  CHECK(w.heaps.empty());
  CHECK(w.allocations == 0);
  REQUIRE(w.warnings.size() == 1);
  CHECK(w.warnings[0].where == "glibc");
  CHECK(w.warnings[0].message == "glibc heap walker supports 64-bit little-endian processes only "
                                 "(this one is 32-bit little-endian, x86)");
}

TEST_CASE("walkHeaps: a walker is not asked about a process of another system") {
  FakeMemory m;
  SECTION("another operating system: not run; asked for by name, it says why") {
    auto snap = libcProcess(m, Os::Windows, 8, true);
    CHECK(walkerNamed("glibc").detect(AddressSpace(*snap))); // the evidence is there
    Walk w = walkAll(*snap, {"glibc"});
    CHECK(w.heaps.empty());
    REQUIRE(w.warnings.size() == 1);
    CHECK(w.warnings[0].where == "glibc");
    CHECK(w.warnings[0].message ==
          "asked for (--walker glibc) but did not apply: it reads no windows process");
    CHECK(walkAll(*snap, {"jemalloc"}).heaps.empty());
  }
  SECTION("big-endian words: refused, with the reason") {
    auto snap = libcProcess(m, Os::Linux, 8, false);
    Walk w = walkAll(*snap, {"glibc"});
    CHECK(w.heaps.empty());
    REQUIRE(w.warnings.size() == 1);
    CHECK(w.warnings[0].message == "glibc heap walker supports 64-bit little-endian processes "
                                   "only (this one is 64-bit big-endian, x86_64)");
  }
  SECTION("an OS the dump does not name: read as one of the walker's") {
    auto snap = libcProcess(m, Os::Unknown, 8, true);
    Walk w = walkAll(*snap, {"glibc"});
    REQUIRE(w.heaps.size() == 1);
    CHECK(w.heaps[0].walker == "glibc"); // named by walkHeaps, not by the walker
    CHECK(w.allocations == 1);
  }
}

TEST_CASE("walkHeaps: 32-bit words without a module the walker knows pass silently") {
  FakeMemory m;
  m.addRegion(0x10000000, 0x1000, FakeRegion{true, "", RegionClass::Heap, UINT64_MAX, false});
  auto snap = m.snapshot();
  snap->system.os = Os::Linux;
  snap->system.arch = "x86";
  snap->system.pointer_size = 4;
  // glibc's detect would say yes (a heap region), but there is no libc to name in a warning.
  Walk w = walkAll(*snap);
  CHECK(w.heaps.empty());
  CHECK(w.warnings.empty());
}

TEST_CASE("heap registry: every walker is found by its name and states its platforms") {
  for (const auto &walker : heapWalkers()) {
    INFO(walker->name().str());
    CHECK(findHeapWalker(walker->name()) == walker.get());
    const Platforms &platforms = walker->traits().platforms;
    CHECK_FALSE(platforms.pointer_sizes.empty());
    CHECK_FALSE(platforms.byte_orders.empty());
    CHECK_FALSE(platforms.wordsText().empty());
    for (const SizeThreshold &t : walker->traits().thresholds) {
      CHECK(t.bytes > 0);
      CHECK(t.meaning != nullptr);
    }
  }
  CHECK(findHeapWalker("no-such-walker") == nullptr);
  CHECK(walkerNamed("coreclr").traits().platforms.wordsText() == "32-bit or 64-bit little-endian");
  CHECK(walkerNamed("jemalloc").traits().platforms.wordsText() == "64-bit little-endian x86_64");
}

TEST_CASE("walkHeaps: a walker asked for that finds no heap says it did not apply") {
  FakeMemory m;
  auto snap = libcProcess(m, Os::Linux, 8, true);
  Walk w = walkAll(*snap, {"mono"});
  CHECK(w.heaps.empty());
  REQUIRE(w.warnings.size() == 1);
  CHECK(w.warnings[0].where == "mono");
  CHECK(w.warnings[0].message == "asked for (--walker mono) but did not apply: it found none of "
                                 "its heaps in this process");
}

TEST_CASE("walkHeaps: a runtime whose module is loaded but whose heap is not walked is named") {
  // A real Unity (Kerbal Space Program 1.11) crash dump from a public repository
  // (../shared/dumps/README.md): Unity's Mono with the Boehm collector, mono-2.0-bdwgc.dll, is
  // loaded; the dump holds 7,934 small ranges and no managed heap.
  auto snap = mustOpenDump(sharedDumpsDir() + "/win_unity_ksp_mono-2.0-bdwgc.dmp");
  REQUIRE(snap->findModule(walkerNamed("mono").traits().modules));
  for (const std::vector<std::string> &only :
       {std::vector<std::string>{}, std::vector<std::string>{"mono"}}) {
    Walk w = walkAll(*snap, only);
    CHECK(w.heaps.empty());
    CHECK(anyWarningHas(w.warnings, "mono: mono-2.0-bdwgc.dll is loaded, the mono walker's "
                                    "allocator or runtime, but the walk"));
  }
}
