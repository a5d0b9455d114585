// The mimalloc walker over hand-laid heaps (tests/support/synthetic_mimalloc.h): one of each kind
// of page and list read exactly, and damage (loops, foreign pointers, absurd counts, a cookie that
// disagrees, lists in memory the dump lacks) giving warnings and bounded work.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/heap_walk.h"
#include "support/synthetic_mimalloc.h"

#include <catch2/catch.hpp>
#include <map>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

constexpr uint64_t kCookie = MiExample::kCookie;
constexpr uint64_t kSeg = MiExample::kSegment;
constexpr uint64_t kHugeSeg = MiExample::kHugeSegment;
constexpr uint64_t kHeap = MiExample::kHeap;

/// Hand-laid regions as a snapshot: each region anonymous and mapped whole; its bytes captured up
/// to `captured` of them (all when it is 0), zeros past those written.
class MiProcess : public FakeMemory {
public:
  std::map<uint64_t, uint64_t> captured; // region start -> captured bytes, when not all

  const Snapshot &snapshot() {
    snap_ = Snapshot();
    for (auto &[start, block] : regions()) {
      auto cut = captured.find(start);
      block.bytes.resize(cut == captured.end() ? block.size : cut->second);
      Region r;
      r.start = start;
      r.size = block.size;
      r.captured = block.bytes.size();
      r.perms.read = r.perms.write = true;
      r.cls = RegionClass::Anonymous;
      snap_.regions.push_back(r);
      if (!block.bytes.empty())
        snap_.memory.push_back({start, llvm::ArrayRef<uint8_t>(block.bytes)});
    }
    return snap_;
  }

private:
  Snapshot snap_;
};

/// The registered mimalloc walker's walk of `snap`; state(address) is the state of the
/// allocation there, which must exist.
struct Walked : WalkedHeap {
  AllocState state(uint64_t address) const {
    const Allocation *a = at(address);
    REQUIRE(a != nullptr);
    return a->state;
  }
};

Walked walk(const Snapshot &snap) {
  return Walked{walkHeap(walkerNamed("mimalloc"), snap)};
}

/// The process of the example heap (synthetic_mimalloc.h).
struct Laid : MiExample {
  MiProcess process;
};

void lay(Laid &l) {
  static_cast<MiExample &>(l) = putMiExample(l.process);
}

} // namespace

TEST_CASE("mimalloc walker reads a hand-laid heap exactly") {
  Laid l;
  lay(l);
  Walked w = walk(l.process.snapshot());
  REQUIRE(w.error.empty());
  CHECK(w.detected);
  CHECK(w.warnings.empty());
  REQUIRE(w.allocations.size() == 10 + 3 + 1);
  for (uint64_t k = 0; k < 10; ++k) {
    INFO("small block " << k);
    const uint64_t address = miBlock(kSeg, l.small, k);
    const bool is_free = k == 2 || k == 5 || k == 7 || k == 8 || k == 9;
    CHECK(w.state(address) == (is_free ? AllocState::Free : AllocState::Used));
    CHECK(w.at(address)->size == 256);
    CHECK(w.at(address)->arena == kHeap);
    CHECK_FALSE(w.at(address)->mmapped);
  }
  CHECK(miBlock(kSeg, l.small, 0) == kSeg + kMiSlice + 384);
  CHECK(w.state(miBlock(kSeg, l.medium, 0)) == AllocState::Used);
  CHECK(w.state(miBlock(kSeg, l.medium, 1)) == AllocState::Free);
  CHECK(w.state(miBlock(kSeg, l.medium, 2)) == AllocState::Used);
  CHECK(miBlock(kSeg, l.medium, 0) == kSeg + 2 * kMiSlice);
  REQUIRE(w.at(kHugeSeg + kMiSlice) != nullptr);
  const Allocation &huge = *w.at(kHugeSeg + kMiSlice);
  CHECK(huge.size == 599 * kMiSlice);
  CHECK(huge.mmapped);
  CHECK(huge.state == AllocState::Used);
  for (size_t i = 1; i < w.allocations.size(); ++i)
    CHECK(w.allocations[i - 1].address + w.allocations[i - 1].size <= w.allocations[i].address);

  REQUIRE(w.result.areas.size() == 2);
  CHECK(w.result.areas[0].kind == "segment");
  CHECK(w.result.areas[0].start == kSeg);
  CHECK(w.result.areas[0].size == kMiSegment);
  CHECK(w.result.areas[1].kind == "huge-segment");
  CHECK(w.result.areas[1].size == 600 * kMiSlice);
  CHECK(w.result.size_classes);
  CHECK(w.fact("segments") == "2");
  CHECK(w.fact("huge_segments") == "1");
  CHECK(w.fact("heaps") == "1");
  CHECK(w.fact("main_heap") == hexAddress(kHeap));
  CHECK(w.fact("pages") == "3");
  CHECK(w.fact("delayed_frees") == "2");
  CHECK(w.fact("blocks") == "14");
}

TEST_CASE("mimalloc walker: damaged lists make the rest of their page unknown, with a warning") {
  Laid l;
  lay(l);
  MiProcess &m = l.process;
  SECTION("a free list that loops") {
    m.put64(miBlock(kSeg, l.small, 5), miBlock(kSeg, l.small, 2));
    Walked w = walk(m.snapshot());
    CHECK(w.warned(hexAddress(miBlock(kSeg, l.small, 2)) + " is on a list already (a loop)"));
    CHECK(w.state(miBlock(kSeg, l.small, 2)) == AllocState::Free);
    CHECK(w.state(miBlock(kSeg, l.small, 0)) == AllocState::Unknown);
    CHECK(w.state(miBlock(kSeg, l.medium, 0)) == AllocState::Used); // another page: unharmed
  }
  SECTION("a local-free list that leaves its page") {
    m.put64(miBlock(kSeg, l.small, 7), miBlock(kSeg, l.small, 3) + 8); // inside a block
    Walked w = walk(m.snapshot());
    CHECK(w.warned("local-free list: " + hexAddress(miBlock(kSeg, l.small, 3) + 8) +
                   " is not a block of this page"));
    CHECK(w.state(miBlock(kSeg, l.small, 3)) == AllocState::Unknown);
  }
  SECTION("a thread-free list into memory the dump does not hold") {
    m.put64(miBlock(kSeg, l.small, 8), 0xdead0000);
    Walked w = walk(m.snapshot());
    CHECK(w.warned("thread-free list: 0xdead0000 is not a block of this page"));
  }
  SECTION("a used count the lists disagree with") {
    l.small.used = 9;
    putMiPage(m, kSeg, l.small);
    Walked w = walk(m.snapshot());
    CHECK(w.warned("used count 9 disagrees with its lists"));
    CHECK(w.state(miBlock(kSeg, l.small, 0)) == AllocState::Unknown);
    CHECK(w.state(miBlock(kSeg, l.small, 2)) == AllocState::Free);
  }
  SECTION("a delayed-free list that loops") {
    m.put64(miBlock(kSeg, l.medium, 1), miBlock(kSeg, l.small, 9));
    Walked w = walk(m.snapshot());
    CHECK(w.warned("delayed-free list loops"));
    CHECK(w.state(miBlock(kSeg, l.medium, 1)) == AllocState::Free);
  }
  SECTION("a delayed-free list into another heap's page") {
    l.medium.heap = kHeap + 0x800;
    putMiPage(m, kSeg, l.medium);
    Walked w = walk(m.snapshot());
    CHECK(w.warned("is not a block of a page of this heap"));
    CHECK(w.state(miBlock(kSeg, l.medium, 1)) == AllocState::Used);
  }
  SECTION("free blocks whose links the dump does not hold") {
    // The segment captured up to the middle of the small page: its blocks' links are missing.
    m.captured[kSeg] = kMiSlice + 384 + 3 * 256;
    Walked w = walk(m.snapshot());
    CHECK(w.warned("holds a link that is not captured"));
    CHECK(w.state(miBlock(kSeg, l.small, 5)) == AllocState::Free); // block 2's link is captured
    CHECK(w.state(miBlock(kSeg, l.small, 0)) == AllocState::Unknown);
  }
}

TEST_CASE("mimalloc walker: absurd descriptors and headers are refused, with bounded work") {
  Laid l;
  lay(l);
  MiProcess &m = l.process;
  SECTION("a page whose capacity is above its reserved blocks") {
    l.small.capacity = 0xffff;
    putMiPage(m, kSeg, l.small);
    Walked w = walk(m.snapshot());
    CHECK(w.warned("capacity above the blocks reserved"));
    CHECK(w.by_address.count(miBlock(kSeg, l.small, 0)) == 0);
    CHECK(w.state(miBlock(kSeg, l.medium, 0)) == AllocState::Used); // the walk goes on
  }
  SECTION("a page whose blocks do not fit it") {
    l.medium.reserved = 7; // 7 * 81,920 > 512 KiB
    putMiPage(m, kSeg, l.medium);
    Walked w = walk(m.snapshot());
    CHECK(w.warned("reserved blocks do not fit the page"));
  }
  SECTION("a slice count past the segment's end") {
    l.medium.slice_count = 0xffffffff;
    putMiPage(m, kSeg, l.medium);
    Walked w = walk(m.snapshot());
    CHECK(w.warned("runs past the segment"));
    CHECK(w.fact("segments_cut_short") == "1");
    CHECK(w.state(miBlock(kSeg, l.small, 0)) == AllocState::Used); // before the damage
    CHECK(w.by_address.count(kHugeSeg + kMiSlice) == 1);           // another segment
  }
  SECTION("a slice that starts nothing") {
    m.put32(kSeg + kMiSlicesOffset + 10 * kMiPageSize, 0); // the free span's slice_count
    Walked w = walk(m.snapshot());
    CHECK(w.warned("slice 10 does not start a page or a free span"));
  }
  SECTION("a segment whose cookie disagrees") {
    m.put64(kHugeSeg + 0xd8, 0x1234);
    m.addRegion(kHugeSeg + kMiSegment * 2, kMiSegment); // a third segment breaks the tie
    putMiSegment(m, kHugeSeg + kMiSegment * 2, kCookie, false, 512, 0, 0);
    Walked w = walk(m.snapshot());
    CHECK(w.warned(hexAddress(kHugeSeg) + ": segment header whose cookie disagrees"));
    CHECK(w.fact("segments_not_walked") == "1");
    CHECK(w.fact("unused_segments") == "1");
    CHECK(w.by_address.count(kHugeSeg + kMiSlice) == 0);
  }
  SECTION("a huge segment larger than its mapping") {
    m.put64(kHugeSeg + 0xe0, 1ull << 24); // 1 TiB of slices in a 37.5 MiB mapping
    Walked w = walk(m.snapshot());
    CHECK(w.fact("segments") == "1");
    CHECK(w.by_address.count(kHugeSeg + kMiSlice) == 0);
  }
  SECTION("pages of 8-byte blocks, all of them on one long free list") {
    // 8,144 blocks after the page's first 384 bytes, every one free: the longest list a
    // small page can hold, walked once.
    MiPage &s = l.small;
    s.xblock_size = 8, s.reserved = s.capacity = (kMiSlice - 384) / 8, s.used = 0;
    s.local_free = s.thread_free = 0;
    s.free = miBlock(kSeg, s, 0);
    putMiPage(m, kSeg, s);
    for (uint64_t k = 0; k < s.capacity; ++k)
      m.put64(miBlock(kSeg, s, k), k + 1 < s.capacity ? miBlock(kSeg, s, k + 1) : 0);
    m.put64(kHeap + 0xb18, 0);
    Walked w = walk(m.snapshot());
    CHECK(w.warnings.empty());
    CHECK(w.state(miBlock(kSeg, s, s.capacity - 1)) == AllocState::Free);
    CHECK(w.seconds < 1);
  }
  SECTION("no segment at all") {
    m.put32(kSeg + 0xf0, 7);     // kind
    m.put32(kHugeSeg + 0xf0, 7); // kind
    Walked w = walk(m.snapshot());
    CHECK_FALSE(w.detected);
    CHECK(w.error.find("no mimalloc segment") != std::string::npos);
  }
}
