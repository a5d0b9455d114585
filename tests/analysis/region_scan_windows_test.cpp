// The region scan on a Windows dump (src/analysis/region_scan.cpp), where it stands in for the NT
// heap walker that does not exist: whole private allocations, and runs of zeros or random bytes
// between heap blocks. tests/windows/wine_story_test.cpp checks it on a real MiniDumpWriteDump
// dump; this hand-laid memory checks the edges that dump does not show (a run at a range's end, a
// run under a page, a range whose content starts after zeros, the same memory on Linux).
#include "../../src/analysis/region_scan.h"
#include "support/byte_builder.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// `n` bytes from a xorshift generator: high entropy, no eight zero bytes in a row.
std::vector<uint8_t> randomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  for (uint8_t &b : out) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    b = static_cast<uint8_t>(seed >> 24);
    b = b ? b : 1; // never zero
  }
  return out;
}

constexpr uint64_t kAlloc = 0x10000, kZeroAlloc = 0x40000, kGapAlloc = 0x80000, kHeap = 0x100000;
constexpr uint64_t kRandomBlock = kHeap + 0x48, kZeroBlock = kRandomBlock + 0x10000 + 0x10,
                   kSmallBlock = kZeroBlock + 0x10000 + 0x10, kHeapEnd = kHeap + 0x80000;

/// A Windows process's private memory: a VirtualAlloc'd block of random bytes with a zero tail, an
/// all-zero one, one whose content starts after a gap of zeros, and a heap of packed blocks (each
/// behind an 8-byte header) with a free tail.
struct WindowsMemory {
  FakeMemory fake;
  std::unique_ptr<Snapshot> snap;
  WindowsMemory() {
    fake.addRegion(kAlloc, 0x20000);
    fake.putBytes(kAlloc, randomBytes(0x18000, 1));
    fake.put8(kAlloc + 0x1ffff, 0);
    fake.addRegion(kZeroAlloc, 0x20000);
    fake.put8(kZeroAlloc + 0x1ffff, 0);
    fake.addRegion(kGapAlloc, 0x20000);
    fake.putBytes(kGapAlloc + 0x1000, randomBytes(0x1f000, 2));
    fake.addRegion(kHeap, 0x80000);
    fake.putBytes(kHeap + 0x10, randomBytes(0x30, 3)); // the heap's own header
    for (uint64_t header : {kRandomBlock - 8, kZeroBlock - 8, kSmallBlock - 8, kSmallBlock + 0x800})
      fake.put64(header, 0x5355002f080030e5ULL); // a block header ("US"), never zero
    fake.putBytes(kRandomBlock, randomBytes(0x10000, 4));
    fake.putBytes(kSmallBlock, randomBytes(0x800, 5)); // random, but under a page
    fake.put8(kHeapEnd - 1, 0);                        // the free tail, captured
    snap = fake.snapshot();
    snap->system.os = Os::Windows;
  }
};

std::vector<Buffer> scan(const Snapshot &snap, bool native_heap_unwalked) {
  AddressSpace memory(snap);
  std::vector<Buffer> found;
  AnalyzeOptions options;
  options.min_size = 1024;
  SniffBudget budget(options.inflate_budget);
  Diagnostics diags;
  scanUnclaimed(
      memory, unclaimedRanges(snap, {}), options, native_heap_unwalked, budget, diags,
      [](llvm::StringRef, uint64_t, uint64_t) {}, [&](Buffer b) { found.push_back(std::move(b)); });
  return found;
}

} // namespace

TEST_CASE("region scan on Windows: whole private allocations and runs between heap blocks") {
  WindowsMemory w;
  std::vector<Buffer> found = scan(*w.snap, true);
  REQUIRE(found.size() == 5);

  // The whole allocation, its kind left to sniffing (Unknown here, not estimated).
  CHECK(found[0].allocation.address == kAlloc);
  CHECK(found[0].allocation.size == 0x20000);
  CHECK(found[0].allocation.whole_pages);
  CHECK_FALSE(found[0].estimated);
  CHECK(found[0].content.kind == ContentKind::Unknown);
  CHECK(found[1].allocation.address == kZeroAlloc);
  CHECK(found[1].allocation.size == 0x20000);
  CHECK(found[1].allocation.whole_pages);

  // The allocation whose content starts after 4 KiB of zeros is not one allocation's content
  // from its first byte: its random run is reported with an estimated extent, and the zeros
  // before it, at the range's start, are not.
  CHECK(found[2].allocation.address == kGapAlloc + 0x1000);
  CHECK(found[2].allocation.size == 0x1f000);
  CHECK(found[2].content.kind == ContentKind::Random);
  CHECK(found[2].estimated);
  CHECK_FALSE(found[2].allocation.whole_pages);

  // In the heap: the random block from the end of the heap's own header on (nothing parts
  // them: a header holds no eight zero bytes in a row), and the zero block from its first byte to
  // the next header, over the padding. The random block under a page, the free tail (it reaches
  // the range's end) and the zeros before the heap's header are not reported.
  CHECK(found[3].allocation.address == kHeap + 0x10);
  CHECK(found[3].allocation.size == 0x10000 + 0x38);
  CHECK(found[3].content.kind == ContentKind::Random);
  CHECK(found[3].estimated);
  CHECK(found[4].allocation.address == kZeroBlock);
  CHECK(found[4].allocation.size == 0x10000 + 8);
  CHECK(found[4].content.kind == ContentKind::Zero);
  CHECK(found[4].estimated);
}

TEST_CASE("region scan off Windows: the same memory gives no whole allocations and no runs") {
  WindowsMemory w;
  w.snap->system.os = Os::Linux;
  CHECK(scan(*w.snap, false).empty());
}
