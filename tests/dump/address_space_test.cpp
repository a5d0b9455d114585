#include "dumpsift/dump/address_space.h"

#include <catch2/catch.hpp>

using namespace dumpsift;

TEST_CASE("address space tells captured, not-captured and unmapped apart") {
  static const uint8_t bytes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  Snapshot snap;
  Region r;
  r.start = 0x1000;
  r.size = 0x1000;
  r.captured = 8;
  snap.regions.push_back(r);
  snap.memory.push_back({0x1000, llvm::ArrayRef<uint8_t>(bytes, 8)});
  snap.memory.push_back({0x1008, llvm::ArrayRef<uint8_t>(bytes + 8, 8)});
  AddressSpace as(snap);

  CHECK(as.classify(0x1000) == Fault::None);
  CHECK(as.classify(0x1010) == Fault::NotCaptured);
  CHECK(as.classify(0x3000) == Fault::Unmapped);
  CHECK(as.tryView(0x1004, 4) == bytes + 4);
  CHECK(as.tryView(0x1004, 8) == nullptr); // spans two memory ranges
  uint8_t out[8];
  REQUIRE_FALSE(static_cast<bool>(as.read(0x1004, out)));
  CHECK(out[0] == 5);
  CHECK(out[7] == 12);
  llvm::Error err = as.read(0x100c, out);
  REQUIRE(static_cast<bool>(err));
  CHECK(llvm::toString(std::move(err)).find("0x1010 is not captured") != std::string::npos);
  auto v = as.view(0x2ff0, 4);
  REQUIRE(!v);
  CHECK(llvm::toString(v.takeError()).find("unmapped") != std::string::npos);
  uint64_t word = 0;
  CHECK(as.tryReadU64(0x1000, word));
  CHECK(word == 0x0807060504030201ull);
}
