// The support layer's parsers and formatters: addresses and sizes as the command line takes them
// (dumpsift/support/hex.h, sizes.h) and as people read them, and interval merging (intervals.h).
// Expected values are the documented forms; the round trips check every parser against its
// formatter over values at the edges of each unit and of uint64_t.
#include "dumpsift/support/hex.h"
#include "dumpsift/support/intervals.h"
#include "dumpsift/support/sizes.h"

#include <catch2/catch.hpp>
#include <cstdint>

using namespace dumpsift;

TEST_CASE("support: addresses print as 0x lowercase hex and parse back") {
  CHECK(hexAddress(0) == "0x0");
  CHECK(hexAddress(0x7f12a4c01010) == "0x7f12a4c01010");
  CHECK(hexAddress(UINT64_MAX) == "0xffffffffffffffff");
  for (uint64_t v : {uint64_t(0), uint64_t(1), uint64_t(0xabcdef), uint64_t(1) << 63, UINT64_MAX})
    CHECK(parseHexAddress(hexAddress(v)) == v);
  CHECK(parseHexAddress("1F") == 0x1f);
  CHECK(parseHexAddress("0X1f") == 0x1f);
  CHECK_FALSE(parseHexAddress(""));
  CHECK_FALSE(parseHexAddress("0x"));
  CHECK_FALSE(parseHexAddress("0x1g"));
  CHECK_FALSE(parseHexAddress("-1"));
  CHECK_FALSE(parseHexAddress("0x10000000000000000")); // 17 digits: past uint64_t
}

TEST_CASE("support: sizes take K/M/G suffixes and 0x, and refuse overflow") {
  CHECK(parseSize("65536") == 65536);
  CHECK(parseSize("64K") == 65536);
  CHECK(parseSize("64k") == 65536);
  CHECK(parseSize("1M") == uint64_t(1) << 20);
  CHECK(parseSize("3G") == uint64_t(3) << 30);
  CHECK(parseSize("0x10000") == 65536);
  CHECK(parseSize("0") == 0);
  CHECK(parseSize("18446744073709551615") == UINT64_MAX);
  CHECK_FALSE(parseSize("18446744073709551616"));
  CHECK_FALSE(parseSize("17179869184G")); // 2^34 GiB = 2^64 bytes
  CHECK_FALSE(parseSize(""));
  CHECK_FALSE(parseSize("K"));
  CHECK_FALSE(parseSize("12Q"));
  CHECK_FALSE(parseSize("1.5M"));
  CHECK_FALSE(parseSize("-1"));
  CHECK_FALSE(parseSize(" 1"));
}

TEST_CASE("support: byte counts for people") {
  CHECK(humanBytes(0) == "0 B");
  CHECK(humanBytes(1023) == "1023 B");
  CHECK(humanBytes(1024) == "1.0 KiB");
  CHECK(humanBytes(131072) == "128.0 KiB");
  CHECK(humanBytes(uint64_t(3) << 30) == "3.0 GiB");
  CHECK(humanBytes(UINT64_MAX) == "16384.0 PiB"); // PiB is the largest unit
  CHECK(groupedDigits(0) == "0");
  CHECK(groupedDigits(999) == "999");
  CHECK(groupedDigits(1000) == "1,000");
  CHECK(groupedDigits(135152) == "135,152");
  CHECK(groupedDigits(1234567) == "1,234,567");
  CHECK(groupedDigits(UINT64_MAX) == "18,446,744,073,709,551,615");
}

TEST_CASE("support: intervals merge when they overlap or touch, in any order") {
  std::vector<Interval> intervals = {{50, 60}, {10, 20}, {20, 30}, {0, 5}, {55, 70}, {15, 18}};
  mergeIntervals(intervals);
  CHECK(intervals == std::vector<Interval>{{0, 5}, {10, 30}, {50, 70}});

  std::vector<Interval> none;
  mergeIntervals(none);
  CHECK(none.empty());

  std::vector<Interval> nested = {{0, UINT64_MAX}, {5, 6}, {UINT64_MAX - 1, UINT64_MAX}};
  mergeIntervals(nested);
  CHECK(nested == std::vector<Interval>{{0, UINT64_MAX}});
}
