// The heap listing's rows (writeHeapListingText and writeHeapListingJson): the hand-written hex and
// decimal formatting against hexAddress and std::to_string at the edges (0, one digit, every
// digit count, 2^64 - 1), a walker name longer than the short-name store, and the same bytes on
// 1, 2 and 4 threads over several pieces of rows.
#include "dumpsift/report/heap_listing.h"
#include "dumpsift/support/hex.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>
#include <string>

using namespace dumpsift;

namespace {

/// A listing of `n` rows by address whose sizes and arenas run through the edge values.
HeapListing edgeListing(size_t n) {
  HeapListing listing;
  listing.heaps.resize(2);
  listing.heaps[0].walker = "glibc";
  listing.heaps[1].walker = "a-walker-name-longer-than-thirty-two-bytes";
  const uint64_t edges[] = {0,
                            1,
                            9,
                            10,
                            15,
                            16,
                            99,
                            100,
                            255,
                            256,
                            4095,
                            65536,
                            999999999999ull,
                            1000000000000ull,
                            0x7fffffffffffull,
                            0x800000000000ull,
                            0x0fffffffffffffffull,
                            0x1000000000000000ull,
                            UINT64_MAX - 1,
                            UINT64_MAX};
  const size_t count = sizeof edges / sizeof edges[0];
  for (size_t i = 0; i < n; ++i) {
    ListedAllocation a{};
    a.address = i < count ? edges[i] : 0x10000000ull + 48 * i;
    a.size = edges[(i * 7) % count];
    a.chunk = edges[(i * 3) % count];
    a.arena = edges[(i * 5) % count];
    a.heap = static_cast<uint16_t>(i % 11 == 0);
    a.state = static_cast<AllocState>(i % 3);
    a.mmapped = i % 2;
    listing.allocations.push_back(a);
  }
  return listing;
}

std::string padRight(std::string s, size_t width) {
  return s.size() < width ? s + std::string(width - s.size(), ' ') : s;
}
std::string padLeft(std::string s, size_t width) {
  return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
}

/// The text rows and the JSON allocations as formatted here, by the library's slow helpers.
std::string expectedTextRows(const HeapListing &listing) {
  std::string rows;
  for (size_t i = 0; i < listing.allocations.size(); ++i) {
    const ListedAllocation &a = listing.allocations[i];
    rows += padRight(hexAddress(a.address), 18) + " " + padLeft(std::to_string(a.size), 12) + " " +
            padRight(stateName(a.state).str(), 7) + " " + padRight(a.mmapped ? "yes" : "no", 7) +
            " " + padRight(a.arena ? hexAddress(a.arena) : "-", 18) + " " +
            listing.heaps[a.heap].walker + "\n";
  }
  return rows;
}
std::string expectedJsonRows(const HeapListing &listing) {
  std::string rows;
  for (size_t i = 0; i < listing.allocations.size(); ++i) {
    const ListedAllocation &a = listing.allocations[i];
    rows += std::string(i ? ",\n" : "\n") + "    {\"address\": \"" + hexAddress(a.address) +
            "\", \"size\": " + std::to_string(a.size) + ", \"chunk\": \"" + hexAddress(a.chunk) +
            "\", \"state\": \"" + stateName(a.state).str() +
            "\", \"mmapped\": " + (a.mmapped ? "true" : "false") + ", \"arena\": \"" +
            hexAddress(a.arena) + "\", \"walker\": \"" + listing.heaps[a.heap].walker + "\"}";
  }
  return rows;
}

std::string written(const Snapshot &snapshot, const HeapListing &listing, bool json,
                    unsigned threads) {
  std::string out;
  llvm::raw_string_ostream stream(out);
  if (json)
    writeHeapListingJson(snapshot, listing, stream, threads);
  else
    writeHeapListingText(snapshot, listing, stream, threads);
  stream.flush();
  return out;
}

} // namespace

TEST_CASE("heap listing rows format every digit count as hexAddress and to_string do, the same "
          "on 1, 2 and 4 threads") {
  const size_t n = GENERATE(size_t(0), size_t(1), size_t(20), size_t(3 * 8192 + 5));
  INFO(n << " rows");
  const HeapListing listing = edgeListing(n);
  Snapshot snapshot;
  const std::string text = written(snapshot, listing, false, 1);
  const std::string json = written(snapshot, listing, true, 1);
  const std::string text_rows = expectedTextRows(listing);
  REQUIRE(text.size() >= text_rows.size());
  CHECK(text.substr(text.size() - text_rows.size()) == text_rows);
  const std::string json_rows = expectedJsonRows(listing);
  CHECK(json.find("\"allocations\": [" + json_rows + (n ? "\n  ]\n}\n" : "]\n}\n")) !=
        std::string::npos);
  for (unsigned threads : {2u, 4u}) {
    INFO(threads << " threads");
    CHECK(written(snapshot, listing, false, threads) == text);
    CHECK(written(snapshot, listing, true, threads) == json);
  }
}
