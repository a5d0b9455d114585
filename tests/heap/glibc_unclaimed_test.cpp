// unclaimedRanges: captured heap/anonymous bytes that no walker's area covers.
#include "dumpsift/heap/unclaimed.h"

#include <catch2/catch.hpp>

using namespace dumpsift;

namespace {

/// Adds a region [start, start+size) of class `cls` whose first `captured` bytes are in `bytes`.
void addRegion(Snapshot &snap, std::vector<uint8_t> &bytes, uint64_t start, uint64_t size,
               RegionClass cls, uint64_t captured) {
  Region r;
  r.start = start;
  r.size = size;
  r.cls = cls;
  r.perms.read = r.perms.write = true;
  r.captured = captured;
  snap.regions.push_back(r);
  if (captured)
    snap.memory.push_back({start, llvm::ArrayRef<uint8_t>(bytes.data(), captured)});
}

} // namespace

TEST_CASE("unclaimed ranges are captured heap/anonymous bytes outside every area") {
  std::vector<uint8_t> bytes(0x10000);
  Snapshot snap;
  addRegion(snap, bytes, 0x10000, 0x4000, RegionClass::Heap, 0x4000);
  addRegion(snap, bytes, 0x14000, 0x2000, RegionClass::Anonymous, 0x1000); // half captured
  addRegion(snap, bytes, 0x20000, 0x1000, RegionClass::Stack, 0x1000);
  addRegion(snap, bytes, 0x30000, 0x3000, RegionClass::Anonymous, 0x3000);
  addRegion(snap, bytes, 0x40000, 0x1000, RegionClass::Image, 0x1000);

  SECTION("nothing claimed: every heap/anonymous captured byte, classes kept apart") {
    auto out = unclaimedRanges(snap, {});
    REQUIRE(out.size() == 3);
    CHECK(out[0].start == 0x10000);
    CHECK(out[0].size == 0x4000);
    CHECK(out[0].cls == RegionClass::Heap);
    CHECK(out[1].start == 0x14000);
    CHECK(out[1].size == 0x1000); // only what is captured
    CHECK(out[1].cls == RegionClass::Anonymous);
    CHECK(out[2].start == 0x30000);
    CHECK(out[2].size == 0x3000);
  }
  SECTION("areas from several walkers, unsorted and overlapping, are subtracted") {
    std::vector<HeapArea> areas = {
        {"mmapped", 0x31000, 0x800, 0},      {"main-heap", 0x10000, 0x3000, 1},
        {"thread-heap", 0x2f000, 0x2000, 2}, // starts before the region
        {"loh", 0x12000, 0x3000, 3},         // overlaps main-heap, runs into the next region
        {"mmapped", 0x31400, 0x1000, 0},     // overlaps the other mmapped area
    };
    auto out = unclaimedRanges(snap, areas);
    REQUIRE(out.size() == 1);
    CHECK(out[0].start == 0x32400);
    CHECK(out[0].size == 0xc00);
  }
  SECTION("an area spanning stack, anonymous and image regions claims the anonymous bytes") {
    std::vector<HeapArea> areas = {{"x", 0x20000, 0x30000, 0}};
    auto out = unclaimedRanges(snap, areas);
    REQUIRE(out.size() == 2);
    CHECK(out[0].start == 0x10000);
    CHECK(out[1].start == 0x14000);
  }
}
