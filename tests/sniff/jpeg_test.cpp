// JPEG sniffing on files made by cjpeg (fixtures/content, see fixtures/make_content.sh).
#include "sniff_test_util.h"

#include <chrono>
#include <thread>
#include <turbojpeg.h>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The offset of the last SOS marker in a single-scan baseline file (test-side byte search).
size_t lastSos(const ByteVec &jpeg) {
  size_t pos = std::string::npos;
  for (size_t p = findBytes(jpeg, "\xff\xda"); p != std::string::npos;
       p = findBytes(jpeg, "\xff\xda", p + 1))
    pos = p;
  REQUIRE(pos != std::string::npos);
  return pos;
}

/// A noisy 1024x1024 photo encoded by libjpeg-turbo at quality 95: about 1 MiB, larger than the
/// sniffer's decode budget.
ByteVec largePhoto() {
  const int width = 1024, height = 1024;
  ByteVec pixels(size_t(width) * height * 3);
  uint32_t state = 12345;
  for (size_t i = 0; i < pixels.size(); ++i) {
    state = state * 1664525u + 1013904223u;
    pixels[i] = static_cast<uint8_t>((i / 3 % width) / 4 + (state >> 27));
  }
  tjhandle tj = tjInitCompress();
  REQUIRE(tj != nullptr);
  unsigned char *jpeg = nullptr;
  unsigned long size = 0;
  const int rc =
      tjCompress2(tj, pixels.data(), width, 0, height, TJPF_RGB, &jpeg, &size, TJSAMP_420, 95, 0);
  tjDestroy(tj);
  REQUIRE(rc == 0);
  ByteVec out(jpeg, jpeg + size);
  tjFree(jpeg);
  return out;
}

} // namespace

TEST_CASE("jpeg: a photo larger than the decode budget is decode-checked on its first 256 KiB") {
  const ByteVec photo = largePhoto();
  REQUIRE(photo.size() > 512 * 1024);
  const size_t sos = lastSos(photo);
  REQUIRE(sos < 4096);

  const SniffResult whole = sniff(view(photo));
  REQUIRE(kindOf(whole) == "jpeg");
  CHECK(whole.length == photo.size());
  CHECK(str(whole, "status") == "complete");
  CHECK(flag(whole, "decoded"));
  CHECK_FALSE(has(whole, "warning")); // the check stopping at its budget is not a finding

  // Past the budget only the marker walk looks: damage that adds no marker goes unseen there
  // (files up to 256 KiB are decoded whole; see "damaged entropy-coded data is corrupt").
  ByteVec late = photo;
  const size_t at = photo.size() - 64 * 1024;
  for (size_t i = at; i < at + 256; ++i)
    late[i] = static_cast<uint8_t>((0x5a ^ i) & 0x7f); // never FF: the structure stays intact
  const SniffResult l = sniff(view(late));
  REQUIRE(kindOf(l) == "jpeg");
  CHECK(l.length == photo.size());
  CHECK(str(l, "status") == "complete");
}

TEST_CASE("jpeg: baseline 4:2:0 file from cjpeg") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  const SniffResult r = sniff(view(jpeg));
  REQUIRE(kindOf(r) == "jpeg");
  CHECK(r.offset == 0);
  CHECK(r.length == jpeg.size());
  CHECK_FALSE(r.length_estimated);
  CHECK(u64(r, "width") == 320);
  CHECK(u64(r, "height") == 240);
  CHECK(u64(r, "components") == 3);
  CHECK(u64(r, "precision") == 8);
  CHECK_FALSE(flag(r, "progressive"));
  CHECK(str(r, "subsampling") == "4:2:0");
  CHECK(flag(r, "complete"));
  CHECK_FALSE(flag(r, "truncated"));
  CHECK(str(r, "status") == "complete");
  CHECK(u64(r, "length") == jpeg.size());
  CHECK(flag(r, "decoded"));
  CHECK_FALSE(has(r, "warning"));
}

TEST_CASE("jpeg: progressive 4:4:4 and grayscale files") {
  const ByteVec prog = contentFixture("photo_progressive.jpg");
  const SniffResult r = sniff(view(prog));
  REQUIRE(kindOf(r) == "jpeg");
  CHECK(r.length == prog.size());
  CHECK(flag(r, "progressive"));
  CHECK(str(r, "subsampling") == "4:4:4");
  CHECK(u64(r, "width") == 320);
  CHECK(u64(r, "height") == 240);
  CHECK(str(r, "status") == "complete");
  CHECK(flag(r, "decoded"));

  const ByteVec gray = contentFixture("photo_gray.jpg");
  const SniffResult g = sniff(view(gray));
  REQUIRE(kindOf(g) == "jpeg");
  CHECK(g.length == gray.size());
  CHECK(u64(g, "components") == 1);
  CHECK(str(g, "subsampling") == "gray");
  CHECK(str(g, "status") == "complete");
}

TEST_CASE("jpeg: heap slack after EOI is not part of the length") {
  ByteVec buffer = contentFixture("photo_progressive.jpg");
  const size_t size = buffer.size();
  buffer.resize(128 * 1024, 0); // a 128 KiB heap buffer: the file, then zeros
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "jpeg");
  CHECK(r.length == size);
  CHECK(flag(r, "complete"));
}

TEST_CASE("jpeg: a file cut in half is truncated") {
  for (const char *name : {"photo_baseline.jpg", "photo_progressive.jpg"}) {
    INFO(name);
    ByteVec jpeg = contentFixture(name);
    jpeg.resize(jpeg.size() / 2);
    const SniffResult r = sniff(view(jpeg));
    REQUIRE(kindOf(r) == "jpeg");
    CHECK(r.length == jpeg.size());
    CHECK(r.length_estimated);
    CHECK(str(r, "status") == "truncated");
    CHECK(flag(r, "truncated"));
    CHECK_FALSE(flag(r, "complete"));
    CHECK(u64(r, "width") == 320);
    CHECK(flag(r, "decoded"));
    CHECK(str(r, "warning").find("Premature end of JPEG file") != std::string::npos);
  }
}

TEST_CASE("jpeg: a file cut inside its headers is still a (truncated) jpeg") {
  ByteVec jpeg = contentFixture("photo_baseline.jpg");
  jpeg.resize(40); // inside the quantisation tables, after the JFIF APP0
  const SniffResult r = sniff(view(jpeg));
  REQUIRE(kindOf(r) == "jpeg");
  CHECK(str(r, "status") == "truncated");
  CHECK_FALSE(has(r, "width"));
}

TEST_CASE("jpeg: damaged entropy-coded data is corrupt (libjpeg warns)") {
  ByteVec jpeg = contentFixture("photo_baseline.jpg");
  const size_t sos = lastSos(jpeg);
  const size_t at = sos + (jpeg.size() - sos) / 2;
  for (size_t i = at; i < at + 256; ++i)
    jpeg[i] = static_cast<uint8_t>((0x5a ^ i) & 0x7f); // never FF: the structure stays intact
  const SniffResult r = sniff(view(jpeg));
  REQUIRE(kindOf(r) == "jpeg");
  CHECK(r.length == jpeg.size()); // the structure still ends at EOI
  CHECK(str(r, "status") == "corrupt");
  CHECK_FALSE(flag(r, "complete"));
  CHECK(flag(r, "decoded"));
  INFO("warning: " << str(r, "warning"));
  CHECK(str(r, "warning").find("Corrupt JPEG data") != std::string::npos);
}

TEST_CASE("jpeg: an invalid marker inside the scan is corrupt at that offset") {
  ByteVec jpeg = contentFixture("photo_baseline.jpg");
  const size_t sos = lastSos(jpeg);
  size_t at = sos + 1000;
  while (jpeg[at - 1] == 0xFF)
    ++at;
  jpeg[at] = 0xFF;
  jpeg[at + 1] = 0x37; // a reserved marker: cannot appear in a real file
  const SniffResult r = sniff(view(jpeg));
  REQUIRE(kindOf(r) == "jpeg");
  CHECK(str(r, "status") == "corrupt");
  CHECK(r.length == at);
  CHECK(r.length_estimated);
}

TEST_CASE("jpeg: magic followed by garbage is not a jpeg") {
  for (uint8_t marker : {uint8_t(0xE0), uint8_t(0xE1), uint8_t(0xDB), uint8_t(0xC0)}) {
    ByteVec buffer = {0xFF, 0xD8, 0xFF, marker};
    append(buffer, randomBytes(8192, marker));
    const SniffResult r = sniff(view(buffer));
    INFO("marker " << int(marker) << " -> " << kindOf(r));
    CHECK(r.kind != ContentKind::Jpeg);
  }
  // A well-formed APP0 whose next segment is garbage.
  ByteVec buffer = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10};
  append(buffer, std::string_view("JFIF\0\1\1\0\0\1\0\1\0\0", 14));
  append(buffer, randomBytes(4096, 99));
  buffer[20] = 0x12; // not a marker prefix
  CHECK(sniff(view(buffer)).kind != ContentKind::Jpeg);
}

TEST_CASE("jpeg: a header claiming 65535x65535 reports header facts and costs nothing") {
  ByteVec jpeg = contentFixture("photo_baseline.jpg");
  const size_t sof = findBytes(jpeg, "\xff\xc0");
  REQUIRE(sof != std::string::npos);
  // SOF0: FF C0, length(2), precision(1), height(2), width(2).
  for (size_t i = sof + 5; i < sof + 9; ++i)
    jpeg[i] = 0xFF;
  const auto start = std::chrono::steady_clock::now();
  SniffResult r;
  for (int i = 0; i < 20; ++i)
    r = sniff(view(jpeg));
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count() /
                  20;
  REQUIRE(kindOf(r) == "jpeg");
  CHECK(u64(r, "width") == 65535);
  CHECK(u64(r, "height") == 65535);
  CHECK_FALSE(flag(r, "decoded"));
  CHECK(str(r, "decode_skipped") == "too many pixels");
  CHECK(r.length == jpeg.size());
  INFO("microseconds per sniff: " << us);
  CHECK(us < 5000);
}

TEST_CASE("jpeg: embedded after a runtime header is reported with its offset") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  ByteVec buffer = binaryHeader(24);
  append(buffer, jpeg);
  buffer.resize(buffer.size() + 100, 0);
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "jpeg");
  CHECK(r.offset == 24);
  CHECK(r.length == jpeg.size());
  CHECK(str(r, "status") == "complete");
}

TEST_CASE("jpeg: sniffing from several threads") {
  const ByteVec a = contentFixture("photo_baseline.jpg");
  const ByteVec b = contentFixture("photo_progressive.jpg");
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const ByteVec &j = (i + t) % 2 ? a : b;
        const SniffResult r = sniff(view(j));
        const DetailValue *status = r.details.get("status");
        ok[t] += r.kind == ContentKind::Jpeg && r.length == j.size() && status &&
                 std::get<std::string>(*status) == "complete";
      }
    });
  for (auto &t : threads)
    t.join();
  for (int t = 0; t < 4; ++t)
    CHECK(ok[t] == 10);
}
