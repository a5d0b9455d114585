// mergeByAddress (src/analysis/kept_walk.h), the step that puts the rows of the walk's lanes in
// address order for the analysis and the heap listing: whatever runs the lanes hold, the result
// is the stable sort of the lanes' rows one lane after another.
#include "../../src/analysis/kept_walk.h"

#include <catch2/catch.hpp>
#include <random>

using namespace dumpsift;

namespace {

/// A row: an address and where it came from (lane, position), which a stable order keeps.
struct Row {
  uint64_t address;
  unsigned lane, position;
  bool operator==(const Row &o) const {
    return address == o.address && lane == o.lane && position == o.position;
  }
};

bool byAddress(const Row &a, const Row &b) {
  return a.address < b.address;
}

/// The expected result: the lanes' rows one lane after another, stably sorted.
std::vector<Row> stableSorted(const std::vector<std::vector<Row>> &lanes) {
  std::vector<Row> all;
  for (const std::vector<Row> &lane : lanes)
    all.insert(all.end(), lane.begin(), lane.end());
  std::stable_sort(all.begin(), all.end(), byAddress);
  return all;
}

} // namespace

TEST_CASE("mergeByAddress: lanes of interleaved runs, ties kept in lane order") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    // Up to 4 lanes, each a few runs of ascending addresses from a small range (ties are common).
    std::vector<std::vector<Row>> lanes(1 + rng() % 4);
    for (unsigned l = 0; l < lanes.size(); ++l) {
      const unsigned runs = static_cast<unsigned>(rng() % 5);
      for (unsigned r = 0; r < runs; ++r) {
        uint64_t address = rng() % 50;
        const unsigned rows = static_cast<unsigned>(rng() % 8);
        for (unsigned i = 0; i < rows; ++i) {
          address += rng() % 3; // 0: a tie within the run
          lanes[l].push_back({address, l, static_cast<unsigned>(lanes[l].size())});
        }
      }
    }
    const std::vector<Row> expected = stableSorted(lanes);
    const std::vector<Row> merged = detail::mergeByAddress(lanes, byAddress);
    INFO("trial " << trial);
    CHECK(merged == expected);
  }
}

TEST_CASE("mergeByAddress: one sorted lane is returned as it is; no lane gives nothing") {
  std::vector<std::vector<Row>> one = {{}, {{1, 1, 0}, {1, 1, 1}, {5, 1, 2}}, {}};
  CHECK(detail::mergeByAddress(one, byAddress) == one[1]);
  CHECK(detail::mergeByAddress(std::vector<std::vector<Row>>{{}, {}}, byAddress).empty());
  CHECK(detail::mergeByAddress(std::vector<std::vector<Row>>{}, byAddress).empty());
}
