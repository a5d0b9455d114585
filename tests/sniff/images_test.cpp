// PNG, GIF, WebP and BMP sniffing on files written by ImageMagick (fixtures/content).
#include "sniff_test_util.h"

using namespace dumpsift;
using namespace dumpsift::test;

TEST_CASE("png: complete file") {
  ByteVec png = contentFixture("image.png");
  const size_t size = png.size();
  png.resize(size + 4096, 0xAB); // stale bytes after IEND
  const SniffResult r = sniff(view(png));
  REQUIRE(kindOf(r) == "png");
  CHECK(r.length == size);
  CHECK_FALSE(r.length_estimated);
  CHECK(u64(r, "width") == 200);
  CHECK(u64(r, "height") == 150);
  CHECK(u64(r, "bit_depth") == 8);
  CHECK(u64(r, "color_type") == 2);
  CHECK_FALSE(flag(r, "interlaced"));
  CHECK(flag(r, "complete"));
  CHECK(str(r, "status") == "complete");
  CHECK(u64(r, "chunk_count") >= 3); // IHDR, IDAT..., IEND
}

TEST_CASE("png: truncated file") {
  ByteVec png = contentFixture("image.png");
  png.resize(png.size() * 6 / 10);
  const SniffResult r = sniff(view(png));
  REQUIRE(kindOf(r) == "png");
  CHECK(r.length == png.size());
  CHECK(r.length_estimated);
  CHECK(flag(r, "truncated"));
  CHECK_FALSE(flag(r, "complete"));
  CHECK(u64(r, "width") == 200);
}

TEST_CASE("png: a damaged chunk header is corrupt, a damaged IHDR is not png") {
  ByteVec png = contentFixture("image.png");
  // The chunk after IHDR starts at 8 + 25 = 33; damage its type.
  ByteVec damaged = png;
  damaged[37] = 0;
  const SniffResult r = sniff(view(damaged));
  REQUIRE(kindOf(r) == "png");
  CHECK(str(r, "status") == "corrupt");
  CHECK(r.length == 33);

  ByteVec bad_ihdr = png;
  bad_ihdr[16 + 3] ^= 1; // width changes, IHDR CRC no longer matches
  CHECK(sniff(view(bad_ihdr)).kind != ContentKind::Png);
}

TEST_CASE("gif: complete and truncated") {
  const ByteVec gif = contentFixture("image.gif");
  const SniffResult r = sniff(view(gif));
  REQUIRE(kindOf(r) == "gif");
  CHECK(r.length == gif.size());
  CHECK(u64(r, "width") == 160);
  CHECK(u64(r, "height") == 120);
  CHECK(str(r, "version") == "89a");
  CHECK(u64(r, "frame_count") == 1);
  CHECK(flag(r, "complete"));

  ByteVec cut(gif.begin(), gif.begin() + static_cast<std::ptrdiff_t>(gif.size() / 2));
  const SniffResult t = sniff(view(cut));
  REQUIRE(kindOf(t) == "gif");
  CHECK(flag(t, "truncated"));
  CHECK(t.length == cut.size());
}

TEST_CASE("webp: lossy file") {
  ByteVec webp = contentFixture("image.webp");
  const size_t size = webp.size();
  webp.resize(size + 100, 0);
  const SniffResult r = sniff(view(webp));
  REQUIRE(kindOf(r) == "webp");
  CHECK(r.length == size);
  CHECK(u64(r, "width") == 160);
  CHECK(u64(r, "height") == 120);
  CHECK(str(r, "encoding") == "lossy");
  CHECK(u64(r, "riff_size") == size - 8);
  CHECK(flag(r, "complete"));
}

TEST_CASE("bmp: 24-bit file") {
  const ByteVec bmp = contentFixture("image.bmp");
  const SniffResult r = sniff(view(bmp));
  REQUIRE(kindOf(r) == "bmp");
  CHECK(r.length == bmp.size());
  CHECK(u64(r, "width") == 64);
  CHECK(u64(r, "height") == 48);
  CHECK(u64(r, "bits_per_pixel") == 24);
  CHECK(u64(r, "file_size") == bmp.size());
  CHECK(flag(r, "complete"));

  ByteVec bad = bmp;
  bad[26] = 2; // two planes
  CHECK(sniff(view(bad)).kind != ContentKind::Bmp);
}

TEST_CASE("images embedded after a header are found with their offsets") {
  for (const char *name : {"image.png", "image.gif", "image.webp"}) {
    INFO(name);
    const ByteVec file = contentFixture(name);
    ByteVec buffer = binaryHeader(16);
    append(buffer, file);
    const SniffResult r = sniff(view(buffer));
    CHECK(r.offset == 16);
    CHECK(r.length == file.size());
    CHECK(r.kind != ContentKind::Unknown);
  }
}
