// JPEG header-only buffers: the first bytes of a file made by cjpeg (fixtures/content), copied
// into a buffer of their own as a doubling growth chain's first steps hold them, with the slack
// an allocator leaves behind (zeros, or the next chunk's size field).
#include "sniff_test_util.h"

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The first `n` bytes of `jpeg`, then `slack` (what the allocator left behind them).
ByteVec prefixWithSlack(const ByteVec &jpeg, size_t n, const ByteVec &slack) {
  ByteVec buffer(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(n));
  append(buffer, slack);
  return buffer;
}

/// Offset of the first `marker` segment (FF xx) of `jpeg`, by a test-side byte search.
size_t markerAt(const ByteVec &jpeg, uint8_t marker) {
  const char pattern[2] = {'\xff', static_cast<char>(marker)};
  const size_t at = findBytes(jpeg, std::string_view(pattern, 2));
  REQUIRE(at != std::string::npos);
  return at;
}

const ByteVec kZeroSlack(24, 0);
// A glibc chunk header behind a 256-byte chunk: the next chunk's size 0x111 (PREV_INUSE).
const ByteVec kChunkHeaderSlack = {0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x01, 0, 0, 0, 0, 0, 0};

} // namespace

TEST_CASE("jpeg headers: the first 256 bytes with heap slack are a truncated jpeg with its frame") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  for (const ByteVec &slack : {kZeroSlack, kChunkHeaderSlack}) {
    const ByteVec buffer = prefixWithSlack(jpeg, 256, slack);
    const SniffResult r = sniff(view(buffer));
    REQUIRE(kindOf(r) == "jpeg");
    CHECK(r.offset == 0);
    CHECK(r.length_estimated);
    CHECK(str(r, "status") == "truncated");
    CHECK(flag(r, "header_only"));
    CHECK(str(r, "container") == "jfif");
    CHECK(u64(r, "width") == 320); // the frame header lies in the first 256 bytes
    CHECK(u64(r, "height") == 240);
    CHECK(str(r, "decode_skipped") == "no scan data");
    CHECK(r.length >= 205); // the walk got past the frame header and the first DHT
    CHECK(r.length <= buffer.size());
  }
}

TEST_CASE("jpeg headers: APP0 and the quantisation tables, no frame header yet, are a jpeg") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  const size_t sof = markerAt(jpeg, 0xC0);
  const ByteVec buffer = prefixWithSlack(jpeg, sof, kZeroSlack);
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "jpeg");
  CHECK(r.length == sof); // the headers end where the slack starts
  CHECK(str(r, "status") == "truncated");
  CHECK(flag(r, "header_only"));
  CHECK(str(r, "container") == "jfif");
  CHECK_FALSE(has(r, "width"));
}

TEST_CASE("jpeg headers: without an APP segment, quantisation tables cut by the buffer's end") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  const size_t dqt = markerAt(jpeg, 0xDB);
  ByteVec buffer = {0xFF, 0xD8};
  buffer.insert(buffer.end(), jpeg.begin() + static_cast<ptrdiff_t>(dqt),
                jpeg.begin() + static_cast<ptrdiff_t>(dqt + 100)); // a DQT, and 31 of the next
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "jpeg");
  CHECK(flag(r, "header_only"));
  CHECK_FALSE(has(r, "container"));
}

TEST_CASE("jpeg headers: an Exif APP1 cut by the buffer's end still names its container") {
  ByteVec buffer = {0xFF, 0xD8, 0xFF, 0xE1, 0x40, 0x00}; // APP1 of 16 KiB, cut at 512 bytes
  append(buffer, std::string_view("Exif\0\0MM\0\x2a\0\0\0\x08", 14));
  append(buffer, randomBytes(512 - buffer.size(), 7));
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "jpeg");
  CHECK(str(r, "container") == "exif");
  CHECK(flag(r, "header_only"));
}

TEST_CASE("jpeg headers: one segment then junk, or a bad table, is not a jpeg") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  const size_t first_dqt = markerAt(jpeg, 0xDB);
  // SOI and APP0, then junk: one sane segment is not enough evidence.
  CHECK(sniff(view(prefixWithSlack(jpeg, first_dqt, randomBytes(4096, 5)))).kind !=
        ContentKind::Jpeg);
  // SOI, a DQT whose tables claim precision 5, then zeros.
  ByteVec bad = {0xFF, 0xD8, 0xFF, 0xDB, 0x00, 0x43, 0x50};
  append(bad, ByteVec(64, 1));
  append(bad, kZeroSlack);
  CHECK(sniff(view(bad)).kind != ContentKind::Jpeg);
}
