// gzip (gzip -9), zlib (python3 zlib), zstd (zstd -19), zip (zip) and pdf (ghostscript) fixtures,
// and a decompression bomb: 1 GiB of zeros gzip'ed in a stream (fixtures/content).
#include "sniff_test_util.h"

#include <chrono>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The gzip trailer's ISIZE (uncompressed size mod 2^32), read by the test itself.
uint64_t gzipIsize(const ByteVec &gz) {
  const size_t n = gz.size();
  return uint64_t(gz[n - 4]) | uint64_t(gz[n - 3]) << 8 | uint64_t(gz[n - 2]) << 16 |
         uint64_t(gz[n - 1]) << 24;
}

} // namespace

TEST_CASE("gzip: member made by gzip -9 with a stored name") {
  ByteVec gz = contentFixture("text.gz");
  const size_t size = gz.size();
  gz.resize(size + 512, 0);
  const SniffResult r = sniff(view(gz));
  REQUIRE(kindOf(r) == "gzip");
  CHECK(r.length == size);
  CHECK_FALSE(r.length_estimated);
  CHECK(flag(r, "complete"));
  CHECK(u64(r, "compressed_length") == size);
  ByteVec exact(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(size));
  CHECK(u64(r, "uncompressed_bytes") == gzipIsize(exact));
  CHECK(str(r, "name") == "notes.txt");
  CHECK(u64(r, "os") == 3);
  CHECK(str(r, "payload_kind") == "text");
  CHECK_FALSE(flag(r, "budget_exhausted"));
}

TEST_CASE("gzip: truncated member") {
  ByteVec gz = contentFixture("text.gz");
  gz.resize(gz.size() / 2);
  const SniffResult r = sniff(view(gz));
  REQUIRE(kindOf(r) == "gzip");
  CHECK(str(r, "status") == "truncated");
  CHECK(r.length == gz.size());
  CHECK(r.length_estimated);
  CHECK_FALSE(has(r, "compressed_length"));
  CHECK(u64(r, "uncompressed_bytes") > 0);
}

TEST_CASE("gzip: a decompression bomb costs a bounded inflate") {
  const ByteVec bomb = readFileBytes(unpackedFixture("content/bomb_1gib_zeros.gz.xz"));
  REQUIRE(bomb.size() > 1000000);
  const auto start = std::chrono::steady_clock::now();
  const SniffResult r = sniff(view(bomb));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  REQUIRE(kindOf(r) == "gzip");
  CHECK(str(r, "status") == "budget");
  CHECK(flag(r, "budget_exhausted"));
  CHECK_FALSE(flag(r, "complete"));
  CHECK(u64(r, "uncompressed_bytes") >= (4u << 20));
  CHECK(u64(r, "uncompressed_bytes") <= (4u << 20) + 16384);
  CHECK(r.length == bomb.size());
  CHECK(r.length_estimated);
  CHECK(str(r, "payload_kind") == "zero");
  INFO("milliseconds: " << ms);
  CHECK(ms < 200);
}

TEST_CASE("zlib: stream made by python zlib") {
  const ByteVec z = contentFixture("text.zlib");
  const ByteVec gz = contentFixture("text.gz"); // same text
  ByteVec buffer = z;
  buffer.resize(z.size() + 64, 0xEE);
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "zlib");
  CHECK(r.length == z.size());
  CHECK(flag(r, "complete"));
  CHECK(u64(r, "compressed_length") == z.size());
  CHECK(u64(r, "uncompressed_bytes") == gzipIsize(gz));
  CHECK(str(r, "level") == "default");
  CHECK(str(r, "payload_kind") == "text");
}

TEST_CASE("zlib: text starting with a valid zlib header is not zlib") {
  const ByteVec text =
      bytesOf("x^2 + y^2 = r^2 describes a circle of radius r around the origin.\n");
  const SniffResult r = sniff(view(text));
  CHECK(kindOf(r) == "text");
}

TEST_CASE("zstd: frame made by zstd -19") {
  const ByteVec zst = contentFixture("text.zst");
  const ByteVec gz = contentFixture("text.gz");
  const SniffResult r = sniff(view(zst));
  REQUIRE(kindOf(r) == "zstd");
  CHECK(r.length == zst.size());
  CHECK(flag(r, "complete"));
  CHECK(u64(r, "content_size") == gzipIsize(gz));
  CHECK(flag(r, "has_checksum"));
  CHECK(u64(r, "block_count") >= 1);

  ByteVec cut(zst.begin(), zst.begin() + 100);
  const SniffResult t = sniff(view(cut));
  REQUIRE(kindOf(t) == "zstd");
  CHECK(flag(t, "truncated"));
  CHECK(t.length == 100);
}

TEST_CASE("zip: archive made by zip") {
  ByteVec zip = contentFixture("archive.zip");
  const size_t size = zip.size();
  zip.resize(size + 300, 0);
  const SniffResult r = sniff(view(zip));
  REQUIRE(kindOf(r) == "zip");
  CHECK(r.length == size);
  CHECK(str(r, "first_name") == "lorem.txt");
  CHECK(str(r, "method") == "deflate");
  CHECK(u64(r, "entry_count") == 2);
  CHECK(flag(r, "complete"));
}

TEST_CASE("pdf: file written by ghostscript") {
  ByteVec pdf = contentFixture("doc.pdf");
  const size_t size = pdf.size();
  pdf.resize(size + 200, 0);
  const SniffResult r = sniff(view(pdf));
  REQUIRE(kindOf(r) == "pdf");
  CHECK(r.length == size);
  CHECK(str(r, "version") == "1.7");
  CHECK(flag(r, "complete"));
  CHECK(u64(r, "eof_markers") == 1);

  pdf.resize(size / 2);
  const SniffResult t = sniff(view(pdf));
  REQUIRE(kindOf(t) == "pdf");
  CHECK_FALSE(flag(t, "complete"));
  CHECK(t.length_estimated);
}

TEST_CASE("compressed data embedded after a header is found with its offset") {
  for (const char *name : {"text.gz", "text.zst", "archive.zip", "doc.pdf"}) {
    INFO(name);
    const ByteVec file = contentFixture(name);
    ByteVec buffer = binaryHeader(32);
    append(buffer, file);
    const SniffResult r = sniff(view(buffer));
    CHECK(r.offset == 32);
    CHECK(r.length == file.size());
  }
}
