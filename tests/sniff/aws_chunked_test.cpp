// aws-chunked bodies built here from a real JPEG, following the AWS SigV4 streaming formats:
//   <hex size>;chunk-signature=<64 hex>\r\n<data>\r\n ... 0;chunk-signature=<64 hex>\r\n\r\n
// plus the unsigned (<hex>\r\n) and trailer (x-amz-checksum-*, x-amz-trailer-signature) variants.
#include "dumpsift/sniff/framing.h"
#include "sniff_test_util.h"

#include <cstdio>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// A lowercase hex "signature" of `chars` characters, different per seed (not a real HMAC: the
/// sniffer cannot check signatures without the key).
std::string signature(unsigned seed, size_t chars = 64) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < chars; ++i) {
    x = x * 1103515245u + 12345u;
    s.push_back(kHex[(x >> 16) & 15]);
  }
  return s;
}

std::string hex(size_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%zx", v);
  return buf;
}

struct BodyOptions {
  bool is_signed = true;
  bool trailer = false;
  size_t chunk = 8192;
};

/// An aws-chunked body carrying `payload`, per the format.
ByteVec awsBody(const ByteVec &payload, BodyOptions o = {}) {
  ByteVec out;
  unsigned seed = 1;
  auto header = [&](size_t size) {
    append(out, hex(size));
    if (o.is_signed)
      append(out, ";chunk-signature=" + signature(seed++));
    append(out, "\r\n");
  };
  for (size_t off = 0; off < payload.size(); off += o.chunk) {
    const size_t n = std::min(o.chunk, payload.size() - off);
    header(n);
    out.insert(out.end(), payload.begin() + static_cast<std::ptrdiff_t>(off),
               payload.begin() + static_cast<std::ptrdiff_t>(off + n));
    append(out, "\r\n");
  }
  header(0);
  if (o.trailer) {
    append(out, "x-amz-checksum-crc32:sOO8/Q==\r\n");
    if (o.is_signed)
      append(out, "x-amz-trailer-signature:" + signature(99) + "\r\n");
  }
  append(out, "\r\n");
  return out;
}

ByteVec joined(const std::vector<llvm::ArrayRef<uint8_t>> &pieces) {
  ByteVec out;
  for (auto p : pieces)
    append(out, p);
  return out;
}

} // namespace

TEST_CASE("aws-chunked: signed body carrying a JPEG") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  REQUIRE(jpeg.size() == 15098); // the chunk sizes below depend on it
  const ByteVec body = awsBody(jpeg);
  ByteVec buffer = body;
  buffer.resize(body.size() + 1000, 0);
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "aws-chunked");
  CHECK(r.offset == 0);
  CHECK(r.length == body.size());
  CHECK_FALSE(r.length_estimated);
  CHECK(str(r, "variant") == "signed");
  CHECK(flag(r, "signed"));
  CHECK(str(r, "signature") == "hmac-sha256");
  CHECK(u64(r, "chunk_count") == 3);
  CHECK(detail<std::vector<uint64_t>>(r, "chunk_sizes") == std::vector<uint64_t>{8192, 6906, 0});
  CHECK(flag(r, "final_chunk"));
  CHECK(flag(r, "complete"));
  CHECK(u64(r, "payload_bytes") == 15098);
  CHECK(str(r, "payload_kind") == "jpeg");

  const auto pieces = awsChunkedPayload(view(buffer));
  REQUIRE(pieces.size() == 2);
  CHECK(joined(pieces) == jpeg);
  // Zero-copy: the pieces point into the buffer.
  CHECK(pieces[0].data() == buffer.data() + 87);

  const auto layout = parseAwsChunked(view(buffer));
  REQUIRE(layout);
  CHECK(layout->chunks[1].header_offset == 87 + 8192 + 2);
  CHECK(layout->length == body.size());
}

TEST_CASE("aws-chunked: the final chunk written over stale data") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  ByteVec buffer;
  append(buffer, "0;chunk-signature=" + signature(7) + "\r\n\r\n");
  REQUIRE(buffer.size() == 86);
  buffer.insert(buffer.end(), jpeg.begin() + 3000, jpeg.begin() + 11000); // an earlier chunk
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "aws-chunked");
  CHECK(r.length == 86);
  CHECK(u64(r, "chunk_count") == 1);
  CHECK(detail<std::vector<uint64_t>>(r, "chunk_sizes") == std::vector<uint64_t>{0});
  CHECK(flag(r, "final_chunk"));
  CHECK(flag(r, "complete"));
  CHECK(u64(r, "payload_bytes") == 0);
  CHECK_FALSE(has(r, "payload_kind"));
  CHECK(awsChunkedPayload(view(buffer)).empty());
}

TEST_CASE("aws-chunked: unsigned and trailer variants") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");

  const ByteVec unsigned_trailer = awsBody(jpeg, {false, true, 8192});
  SniffResult r = sniff(view(unsigned_trailer));
  REQUIRE(kindOf(r) == "aws-chunked");
  CHECK(str(r, "variant") == "unsigned-trailer");
  CHECK_FALSE(flag(r, "signed"));
  CHECK(str(r, "trailers") == "x-amz-checksum-crc32");
  CHECK(u64(r, "chunk_count") == 3);
  CHECK(flag(r, "complete"));
  CHECK(r.length == unsigned_trailer.size());
  CHECK(str(r, "payload_kind") == "jpeg");
  CHECK(joined(awsChunkedPayload(view(unsigned_trailer))) == jpeg);

  const ByteVec signed_trailer = awsBody(jpeg, {true, true, 4096});
  r = sniff(view(signed_trailer));
  REQUIRE(kindOf(r) == "aws-chunked");
  CHECK(str(r, "variant") == "signed-trailer");
  CHECK(str(r, "trailers") == "x-amz-checksum-crc32,x-amz-trailer-signature");
  CHECK(u64(r, "chunk_count") == 5); // 4096 x 3 + 2810, then 0
  CHECK(detail<std::vector<uint64_t>>(r, "chunk_sizes") ==
        std::vector<uint64_t>{4096, 4096, 4096, 2810, 0});
  CHECK(r.length == signed_trailer.size());

  const ByteVec plain = awsBody(jpeg, {false, false, 10000});
  r = sniff(view(plain));
  REQUIRE(kindOf(r) == "aws-chunked");
  CHECK(str(r, "variant") == "unsigned");
  CHECK(detail<std::vector<uint64_t>>(r, "chunk_sizes") == std::vector<uint64_t>{10000, 5098, 0});
}

TEST_CASE("aws-chunked: SigV4a signatures padded with '*' to 144 characters") {
  const ByteVec jpeg = contentFixture("photo_gray.jpg");
  ByteVec body;
  append(body, hex(jpeg.size()) + ";chunk-signature=" + signature(3, 140) + "****\r\n");
  append(body, jpeg);
  append(body, "\r\n0;chunk-signature=" + signature(4, 142) + "**\r\n\r\n");
  const SniffResult r = sniff(view(body));
  REQUIRE(kindOf(r) == "aws-chunked");
  CHECK(str(r, "signature") == "ecdsa-p256");
  CHECK(u64(r, "chunk_count") == 2);
  CHECK(r.length == body.size());
}

TEST_CASE("aws-chunked: a body cut inside a chunk") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  ByteVec body = awsBody(jpeg);
  body.resize(87 + 8192 + 2 + 87 + 1000); // 1000 bytes into the second chunk
  const SniffResult r = sniff(view(body));
  REQUIRE(kindOf(r) == "aws-chunked");
  CHECK_FALSE(flag(r, "complete"));
  CHECK_FALSE(flag(r, "final_chunk"));
  CHECK(u64(r, "chunk_count") == 2);
  CHECK(u64(r, "payload_bytes") == 8192 + 1000);
  CHECK(r.length == body.size());
  CHECK(r.length_estimated);
  const auto pieces = awsChunkedPayload(view(body));
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[1].size() == 1000);
}

TEST_CASE("aws-chunked: embedded after a header") {
  const ByteVec body = awsBody(contentFixture("photo_baseline.jpg"));
  ByteVec buffer = binaryHeader(40);
  append(buffer, body);
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "aws-chunked");
  CHECK(r.offset == 40);
  CHECK(r.length == body.size());
}

TEST_CASE("aws-chunked: near misses are not aws-chunked") {
  const ByteVec data = randomBytes(300, 5);
  auto build = [&](const std::string &line) {
    ByteVec b = bytesOf(line);
    append(b, data);
    append(b, "\r\n0;chunk-signature=" + signature(2) + "\r\n\r\n");
    return b;
  };
  const std::string good_sig = signature(1);
  // The well-formed one is accepted, to show that the near misses fail for their one defect.
  REQUIRE(kindOf(sniff(view(build("12c;chunk-signature=" + good_sig + "\r\n")))) == "aws-chunked");

  const std::vector<std::string> misses = {
      "12c;chunk-signature=" + good_sig.substr(0, 63) + "\r\n", // short signature
      "12c;chunk-signature=" + good_sig + "0\r\n",              // long signature
      "12g;chunk-signature=" + good_sig + "\r\n",               // non-hex size
      "12c;chunk-signatur=" + good_sig + "\r\n",                // misspelt key
      "12c chunk-signature=" + good_sig + "\r\n",               // no ';'
      "12c;chunk-signature=" + good_sig + "\n",                 // bare LF
      "12d;chunk-signature=" + good_sig + "\r\n",               // size misses the CRLF
      "12c;chunk-signature=" + std::string(64, 'A') + "\r\n",   // uppercase signature
      ";chunk-signature=" + good_sig + "\r\n",                  // no size
  };
  for (const std::string &line : misses) {
    INFO(line);
    const SniffResult r = sniff(view(build(line)));
    // The final chunk further on is a valid (stale) final chunk: only offset 0 must not match.
    CHECK_FALSE((r.kind == ContentKind::AwsChunked && r.offset == 0));
    CHECK_FALSE(parseAwsChunked(view(build(line))));
  }
  // A lone unsigned chunk is plain text, not aws-chunked.
  CHECK(kindOf(sniff(view(bytesOf("5\r\nhello\r\nand then some ordinary text follows here.")))) !=
        "aws-chunked");
}
