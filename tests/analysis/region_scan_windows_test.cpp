// The region scan on a Windows dump (src/analysis/region_scan.cpp), where it stands in for the NT
// heap walker that does not exist: whole private allocations, runs of zeros, random bytes or text
// between heap blocks, and large blocks filled in part. tests/windows/wine_story_test.cpp checks it
// on a real MiniDumpWriteDump dump; this hand-laid memory checks the edges that dump does not show
// (a run at a range's end, a run under a page, a range whose content starts after zeros, the same
// memory on Linux).
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

TEST_CASE("region scan on Windows: a large block filled in part, and UTF-16 text between heap "
          "blocks") {
  FakeMemory fake;
  // A heap's large block as Wine makes it: a page-aligned range of its own, a 64-byte header
  // (with 16 zero bytes in it, as a header's size fields have), then a 1 MiB buffer that holds
  // one AMQP basic.publish method frame (type 1, channel 1, size, class 60, method 40, a
  // reserved u16, exchange and routing key as short strings, flags, frame end 0xCE) and zeros.
  constexpr uint64_t kLarge = 0x200000, kLargeSize = 0x110000, kFrame = kLarge + 0x40;
  fake.addRegion(kLarge, kLargeSize);
  fake.put64(kLarge, 0x1122334455667788ULL);
  fake.put64(kLarge + 0x18, 0x0000000000100000ULL);
  fake.put64(kLarge + 0x20, 0x00000000000fffc0ULL);
  fake.put64(kLarge + 0x30, 0x5355002f080030e5ULL);
  const std::vector<uint8_t> payload = {0x00, 0x3c, 0x00, 0x28, 0x00, 0x00, 0x07, 'u', 'p',
                                        'l',  'o',  'a',  'd',  's',  0x0b, 'i',  'm', 'a',
                                        'g',  'e',  's',  '.',  'j',  'p',  'e',  'g', 0x00};
  std::vector<uint8_t> frame = {
      0x01, 0x00, 0x01, 0x00, 0x00, 0x00, static_cast<uint8_t>(payload.size())};
  frame.insert(frame.end(), payload.begin(), payload.end());
  frame.push_back(0xCE);
  fake.putBytes(kFrame, frame);
  fake.put8(kLarge + kLargeSize - 1, 0);
  // A heap of packed blocks: a header, 64 KiB of UTF-16LE text, zeros, a header and a small
  // block, then the free tail.
  constexpr uint64_t kTextHeap = 0x400000, kText = kTextHeap + 0x10, kTextBytes = 0x10000;
  fake.addRegion(kTextHeap, 0x20000);
  fake.put64(kText - 8, 0x5355002f080030e5ULL);
  const std::string line = "The quick brown fox jumps over the lazy dog; ";
  for (uint64_t i = 0; i < kTextBytes / 2; ++i)
    fake.put16(kText + 2 * i, static_cast<uint8_t>(line[i % line.size()]));
  fake.put64(kText + kTextBytes + 0x20, 0x5355002f080030e5ULL);
  fake.putBytes(kText + kTextBytes + 0x28, randomBytes(0x100, 6));
  fake.put8(kTextHeap + 0x20000 - 1, 0);
  std::unique_ptr<Snapshot> snap = fake.snapshot();
  snap->system.os = Os::Windows;

  const std::vector<Buffer> found = scan(*snap, true);
  REQUIRE(found.size() == 2);
  // The buffer from the frame to the block's end: the frame's kind, the extent an estimate.
  CHECK(found[0].allocation.address == kFrame);
  CHECK(found[0].allocation.size == kLarge + kLargeSize - kFrame);
  CHECK(found[0].content.kind == ContentKind::Amqp);
  CHECK(found[0].estimated);
  // The text, from its first character or the header before it, to its last code unit.
  CHECK(found[1].content.kind == ContentKind::Utf16);
  CHECK(found[1].allocation.address >= kText - 8);
  CHECK(found[1].allocation.address <= kText);
  CHECK(found[1].allocation.address + found[1].allocation.size == kText + kTextBytes);
  CHECK(found[1].estimated);

  // Off Windows neither is reported: the frame is under the threshold, and text without a
  // signature is not looked for.
  snap->system.os = Os::Linux;
  CHECK(scan(*snap, false).empty());
}

TEST_CASE("region scan on Windows: a short string at the start of a run of other bytes is not a "
          "run of text") {
  // Seen in a Wine process (issue 23's story, on a CI runner): a heap block holding a module's
  // name in UTF-16, then, with no eight zero bytes between, that module's symbol string table
  // (8-bit names, one NUL between each). The UTF-16 sniff of the run is the name's 9 code units;
  // the run is 64 KiB of other bytes, so it is not reported as text. The same run with text that
  // fills it is.
  FakeMemory fake;
  constexpr uint64_t kHeap = 0x400000, kBlock = kHeap + 0x10, kHeapSize = 0x20000;
  fake.addRegion(kHeap, kHeapSize);
  fake.put64(kBlock - 8, 0x5355002f080030e5ULL);
  const std::string name = "[vdso].so";
  for (size_t i = 0; i < name.size(); ++i)
    fake.put16(kBlock + 2 * i, static_cast<uint8_t>(name[i]));
  uint64_t table_end = kBlock + 2 * name.size() + 2; // past the name's U+0000
  for (unsigned symbol = 0; table_end < kBlock + 0x10000; ++symbol) {
    const std::string s = "__imp_GetSystemTimeAsFileTime_" + std::to_string(symbol);
    fake.putBytes(table_end, s);
    table_end += s.size() + 1;
  }
  table_end += table_end % 2; // a whole number of code units for the text below
  // Another block after zeros, so that the range is a heap, not one allocation.
  fake.put64(table_end + 0x100, 0x5355002f080030e5ULL);
  fake.putBytes(table_end + 0x108, randomBytes(0x100, 7));
  fake.put8(kHeap + kHeapSize - 1, 0);
  std::unique_ptr<Snapshot> snap = fake.snapshot();
  snap->system.os = Os::Windows;
  for (const Buffer &b : scan(*snap, true)) {
    INFO(b.allocation.size << " " << kindName(b.content.kind).str());
    CHECK(b.content.kind != ContentKind::Utf16);
  }

  // The name's code units go on over the whole run: it is text, to the run's end.
  for (uint64_t i = 0; kBlock + 2 * i + 2 <= table_end; ++i)
    fake.put16(kBlock + 2 * i, static_cast<uint8_t>(name[i % name.size()]));
  snap = fake.snapshot();
  snap->system.os = Os::Windows;
  const std::vector<Buffer> found = scan(*snap, true);
  REQUIRE(found.size() == 1);
  CHECK(found[0].content.kind == ContentKind::Utf16);
  CHECK(found[0].allocation.address >= kBlock - 8);
  CHECK(found[0].allocation.address <= kBlock);
  CHECK(found[0].allocation.address + found[0].allocation.size >= table_end - 2);
  CHECK(found[0].allocation.address + found[0].allocation.size <= table_end + 2);
}
