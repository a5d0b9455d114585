// The final chunk of a SigV4 upload written over a reused frame buffer: the stale rest of the
// earlier frame is reported (stale_bytes, stale_kind), and nothing is reported behind a body that
// is followed by zeros only.
#include "sniff_test_util.h"

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

const std::string kFinalChunk = "0;chunk-signature=" + std::string(64, 'a') + "\r\n\r\n";

/// `frame` with the final chunk written over its start, then `slack` zeros.
ByteVec finalChunkOver(ByteVec frame, size_t slack) {
  std::copy(kFinalChunk.begin(), kFinalChunk.end(), frame.begin());
  frame.resize(frame.size() + slack, 0);
  return frame;
}

} // namespace

TEST_CASE("aws-chunked stale tail: the rest of a frame that carried the middle of a JPEG") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  const ByteVec middle(jpeg.begin() + 1000, jpeg.begin() + 9000); // entropy-coded data only
  const ByteVec frame = awsSignedChunk(middle);
  const ByteVec buffer = finalChunkOver(frame, 40);
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "aws-chunked");
  CHECK(r.length == kFinalChunk.size());
  CHECK(flag(r, "final_chunk"));
  CHECK(u64(r, "stale_bytes") == frame.size() - kFinalChunk.size());
  CHECK(str(r, "stale_kind") == "jpeg");
}

TEST_CASE("aws-chunked stale tail: random data behind, and none behind a clean buffer") {
  const ByteVec frame = awsSignedChunk(randomBytes(8192, 3));
  const SniffResult stale = sniff(view(finalChunkOver(frame, 0)));
  REQUIRE(kindOf(stale) == "aws-chunked");
  CHECK(u64(stale, "stale_bytes") == frame.size() - kFinalChunk.size());
  CHECK(str(stale, "stale_kind") == "random");

  ByteVec clean = bytesOf(kFinalChunk);
  clean.resize(4096, 0);
  const SniffResult r = sniff(view(clean));
  REQUIRE(kindOf(r) == "aws-chunked");
  CHECK_FALSE(has(r, "stale_bytes"));
  CHECK_FALSE(has(r, "stale_kind"));
}
