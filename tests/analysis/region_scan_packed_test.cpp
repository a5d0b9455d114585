// The region scan over packed memory that no walker understands (a Windows heap: one block right
// after another, each behind a small header): an extent the format does not give ends at the next
// hit, so every buffer is found at its own address; content inside what the format's structure
// accounts for (a thumbnail inside a photo's APP1 segment, a frame header inside a chunk's
// declared data) stays part of the hit it lies in.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <string>

using namespace dumpsift;

namespace {

// One aws-chunked data frame "<hex size>;chunk-signature=<64 hex>\r\n<data>\r\n" of `data_size`
// bytes of 'x' (not a complete body: its extent is an estimate).
std::string awsFrame(size_t data_size, char signature_digit) {
  char head[32];
  std::snprintf(head, sizeof head, "%zx", data_size);
  return std::string(head) + ";chunk-signature=" + std::string(64, signature_digit) + "\r\n" +
         std::string(data_size, 'x') + "\r\n";
}

// An anonymous region at `base` holding `bytes`, captured whole.
struct OneRegion {
  std::string bytes;
  Snapshot snapshot;
  OneRegion(uint64_t base, std::string content) : bytes(std::move(content)) {
    Region r;
    r.start = base;
    r.size = bytes.size();
    r.captured = bytes.size();
    r.perms.read = r.perms.write = true;
    r.cls = RegionClass::Anonymous;
    snapshot.regions.push_back(r);
    snapshot.memory.push_back(
        {base,
         llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size())});
  }
};

} // namespace

TEST_CASE("region scan: packed blocks are found one by one, each up to the next") {
  // Three 100,000-byte frames, each behind a 16-byte block header, then zeros.
  const std::string header(16, '\x07');
  const std::string frames[3] = {awsFrame(100000, 'a'), awsFrame(100000, 'b'),
                                 awsFrame(100000, 'c')};
  std::string bytes;
  uint64_t offsets[3];
  for (int i = 0; i < 3; ++i) {
    bytes += header;
    offsets[i] = bytes.size();
    bytes += frames[i];
  }
  bytes += std::string(4096, '\0');
  constexpr uint64_t kBase = 0x10000000;
  OneRegion region(kBase, bytes);
  AddressSpace memory(region.snapshot);
  Analysis analysis = analyze(memory, AnalyzeOptions{});

  REQUIRE(analysis.buffers.size() == 3);
  for (int i = 0; i < 3; ++i) {
    const Buffer &b = analysis.buffers[i];
    INFO("frame " << i);
    CHECK(b.allocation.address == kBase + offsets[i]);
    CHECK(kindName(b.content.kind) == "aws-chunked");
    CHECK(b.estimated);
    CHECK(bufferSource(analysis, b) == "region-scan");
    // Up to the next frame's start (its header included), or to the zeros after the last.
    uint64_t expected = i < 2 ? offsets[i + 1] - offsets[i] : frames[i].size();
    CHECK(b.allocation.size == expected);
  }
}

TEST_CASE("region scan: a hit inside an estimated hit's declared structure is part of it") {
  // A frame whose data holds, 1,000 bytes in, another frame's header: not a buffer of its own.
  std::string outer = awsFrame(100000, 'a');
  const std::string inner = awsFrame(70000, 'b').substr(0, 200);
  outer.replace(1000, inner.size(), inner);
  OneRegion region(0x20000000, outer + std::string(64, '\0'));
  AddressSpace memory(region.snapshot);
  Analysis analysis = analyze(memory, AnalyzeOptions{});
  REQUIRE(analysis.buffers.size() == 1);
  CHECK(analysis.buffers[0].allocation.address == 0x20000000);
  CHECK(analysis.buffers[0].allocation.size == outer.size());
}

TEST_CASE("region scan: content right after a cut photo's headers is a buffer of its own") {
  // The first half of a photo made by cjpeg (its estimate would run on through the next block),
  // a 16-byte block header, a whole PNG, then zeros: two buffers, the JPEG ending at the PNG.
  const std::vector<uint8_t> jpeg =
      test::readFileBytes(test::sourceDir() + "/fixtures/content/photo_baseline.jpg");
  const std::vector<uint8_t> png =
      test::readFileBytes(test::sourceDir() + "/fixtures/content/image.png");
  const std::string half(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(jpeg.size() / 2));
  const std::string block_header(16, '\x07');
  const std::string bytes =
      half + block_header + std::string(png.begin(), png.end()) + std::string(4096, '\0');
  constexpr uint64_t kBase = 0x30000000;
  OneRegion region(kBase, bytes);
  AddressSpace memory(region.snapshot);
  AnalyzeOptions options;
  options.min_size = 1024;
  Analysis analysis = analyze(memory, options);
  REQUIRE(analysis.buffers.size() == 2);
  const Buffer &photo = analysis.buffers[0], &image = analysis.buffers[1];
  CHECK(kindName(photo.content.kind) == "jpeg");
  CHECK(photo.allocation.address == kBase);
  CHECK(photo.estimated);
  CHECK(photo.allocation.size == half.size() + block_header.size());
  CHECK(kindName(image.content.kind) == "png");
  CHECK(image.allocation.address == kBase + half.size() + block_header.size());
  CHECK(image.allocation.size == png.size());
}

TEST_CASE("region scan: a final chunk written over a stale frame is the frame and what is behind") {
  // A reused frame buffer: "0;chunk-signature=...\r\n\r\n" (86 bytes) written at the start of an
  // earlier 100,000-byte frame, whose rest stays behind it; then a block header and another
  // frame. The final chunk alone is under the minimum; the buffer is the whole reused block.
  const std::string final_chunk = "0;chunk-signature=" + std::string(64, 'f') + "\r\n\r\n";
  REQUIRE(final_chunk.size() == 86);
  std::string reused = awsFrame(100000, 'a');
  reused.replace(0, final_chunk.size(), final_chunk);
  const std::string next = awsFrame(100000, 'b');
  const std::string header(16, '\x07');
  constexpr uint64_t kBase = 0x30000000;
  OneRegion region(kBase, reused + header + next + std::string(64, '\0'));
  AddressSpace memory(region.snapshot);
  Analysis analysis = analyze(memory, AnalyzeOptions{});

  REQUIRE(analysis.buffers.size() == 2);
  const Buffer &b = analysis.buffers[0];
  CHECK(b.allocation.address == kBase);
  CHECK(b.estimated);
  CHECK(b.content.length == final_chunk.size());
  // Up to the next frame, over its block header: the estimate cannot tell the header apart.
  CHECK(b.allocation.size == reused.size() + header.size());
  const DetailValue *stale = b.content.details.get("stale_bytes");
  REQUIRE(stale != nullptr);
  CHECK(std::get<uint64_t>(*stale) == reused.size() + header.size() - final_chunk.size());
  CHECK(analysis.buffers[1].allocation.address == kBase + reused.size() + header.size());
}

namespace {

// A Wine-like 8-byte block header: a size word and the "US" tag (no byte JSON puts before a value).
const std::string kBlockHeader("\x40\x0c\x00\x00\x00\x00US", 8);

// A compact JSON array of `count` objects: [{"id":0,"key":"photos/IMG_00000.jpg","ok":true},...].
std::string jsonObjects(int count) {
  std::string out = "[";
  for (int i = 0; i < count; ++i) {
    char item[96];
    std::snprintf(item, sizeof item, "%s{\"id\":%d,\"key\":\"photos/IMG_%05d.jpg\",\"ok\":true}",
                  i ? "," : "", i, i);
    out += item;
  }
  return out + "]";
}

// The hits of the scan of `bytes` at `base` with a 256-byte minimum, by offset from `base`.
std::map<uint64_t, Buffer> scanHits(uint64_t base, const std::string &bytes) {
  OneRegion region(base, bytes);
  AddressSpace memory(region.snapshot);
  AnalyzeOptions options;
  options.min_size = 256;
  Analysis analysis = analyze(memory, options);
  std::map<uint64_t, Buffer> hits;
  for (Buffer &b : analysis.buffers) {
    CHECK(bufferSource(analysis, b) == "region-scan");
    hits[b.allocation.address - base] = std::move(b);
  }
  return hits;
}

} // namespace

TEST_CASE("region scan: JSON text between packed blocks is found with its own extent") {
  // Compact, pretty-printed and numeric JSON, each behind a block header or zeros.
  const std::string compact = jsonObjects(60);
  std::string pretty = "{\n  \"bucket\": \"photos\",\n  \"sizes\": [\n";
  for (int i = 0; i < 80; ++i)
    pretty += "    " + std::to_string(1000 + i * 37) + (i < 79 ? ",\n" : "\n");
  pretty += "  ],\n  \"escaped\": \"a \\\"quoted\\\" \\u00e9 word\"\n}";
  std::string numbers = "[";
  for (int i = 0; i < 100; ++i)
    numbers += (i ? ", " : "") + std::to_string(i * 1.5) + "e2";
  numbers += "]";
  const std::string texts[3] = {compact, pretty, numbers};
  std::string bytes;
  uint64_t offsets[3];
  for (int i = 0; i < 3; ++i) {
    bytes += i == 1 ? std::string(8, '\0') : kBlockHeader;
    offsets[i] = bytes.size();
    bytes += texts[i];
  }
  bytes += kBlockHeader + std::string(4096, '\0');
  const std::map<uint64_t, Buffer> hits = scanHits(0x40000000, bytes);
  REQUIRE(hits.size() == 3);
  for (int i = 0; i < 3; ++i) {
    INFO("text " << i << ": " << texts[i].substr(0, 40));
    REQUIRE(hits.count(offsets[i]));
    const Buffer &b = hits.at(offsets[i]);
    CHECK(kindName(b.content.kind) == "json");
    CHECK(b.allocation.size == texts[i].size());
    CHECK_FALSE(b.estimated);
    const DetailValue *complete = b.content.details.get("complete");
    REQUIRE(complete != nullptr);
    CHECK(std::get<bool>(*complete));
  }
}

TEST_CASE("region scan: JSON that does not close, short fragments and nested values are not "
          "believed") {
  // A long array broken in its middle (its nested objects must not be reported one by one), one
  // cut by zeros, a 40-byte object, an array of numbers then bare words, and JSON inside a
  // string of other text.
  std::string broken = jsonObjects(60);
  broken[broken.size() / 2] = '#';
  std::string cut = jsonObjects(60);
  cut.resize(cut.size() - 10);
  const std::string bytes = kBlockHeader + broken + kBlockHeader + cut + std::string(16, '\0') +
                            kBlockHeader + "{\"id\":1,\"key\":\"photos/IMG_00001.jpg\"}" +
                            kBlockHeader + "[ 1, 2, 3, " + std::string(300, 'x') + "]" +
                            kBlockHeader + "log line: got \"[{\\\"id\\\":1}]\" from peer " +
                            std::string(4096, '\0');
  const std::map<uint64_t, Buffer> hits = scanHits(0x50000000, bytes);
  std::string listed;
  for (const auto &[offset, b] : hits)
    listed += " +" + std::to_string(offset) + " " + kindName(b.content.kind).str() + " " +
              std::to_string(b.allocation.size);
  INFO("hits:" << listed);
  CHECK(hits.empty());
}
