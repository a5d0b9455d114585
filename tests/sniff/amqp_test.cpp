// AMQP 0-9-1 frames built here per the specification: a basic.publish method frame, a content
// header frame and body frames carrying a real JPEG.
#include "dumpsift/sniff/framing.h"
#include "sniff_test_util.h"

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

ByteVec joined(const std::vector<llvm::ArrayRef<uint8_t>> &pieces) {
  ByteVec out;
  for (auto p : pieces)
    append(out, p);
  return out;
}

} // namespace

TEST_CASE("amqp: basic.publish carrying a JPEG") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  const ByteVec frames = amqpImagePublish(jpeg); // 15098 = 3 x 4088 + 2834: 4 body frames
  ByteVec buffer = frames;
  buffer.resize(frames.size() + 512, 0);
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "amqp");
  CHECK(r.offset == 0);
  CHECK(r.length == frames.size());
  CHECK(u64(r, "frame_count") == 6);
  CHECK(str(r, "method") == "basic.publish");
  CHECK(str(r, "method_id") == "60/40");
  CHECK(u64(r, "method_frames") == 1);
  CHECK(u64(r, "channel") == 1);
  CHECK(u64(r, "body_size") == 15098);
  CHECK(u64(r, "body_bytes") == 15098);
  CHECK(flag(r, "complete"));
  CHECK(str(r, "content_type") == "image/jpeg");
  CHECK(str(r, "payload_kind") == "jpeg");
  CHECK_FALSE(flag(r, "protocol_header"));

  const auto bodies = amqpBodies(view(buffer));
  REQUIRE(bodies.size() == 4);
  CHECK(bodies[3].size() == 2834);
  CHECK(joined(bodies) == jpeg);
}

TEST_CASE("amqp: protocol header, then frames") {
  ByteVec buffer = bytesOf(std::string_view("AMQP\0\0\x09\x01", 8));
  const ByteVec frames = amqpImagePublish(contentFixture("photo_gray.jpg"), 7, 131072);
  append(buffer, frames);
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "amqp");
  CHECK(flag(r, "protocol_header"));
  CHECK(u64(r, "frame_count") == 3);
  CHECK(u64(r, "channel") == 7);
  CHECK(r.length == buffer.size());
}

TEST_CASE("amqp: cut inside a body frame") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  ByteVec frames = amqpImagePublish(jpeg);
  const size_t method_and_header = findBytes(frames, std::string_view("\x03\x00\x01", 3));
  REQUIRE(method_and_header != std::string::npos);
  frames.resize(method_and_header + 4096 + 1000); // one body frame, then 1000 bytes of the next
  const SniffResult r = sniff(view(frames));
  REQUIRE(kindOf(r) == "amqp");
  CHECK(u64(r, "frame_count") == 3);
  CHECK(flag(r, "truncated"));
  CHECK_FALSE(flag(r, "complete"));
  CHECK(u64(r, "body_bytes") == 4088);
  CHECK(r.length == method_and_header + 4096);
  const auto bodies = amqpBodies(view(frames));
  REQUIRE(bodies.size() == 2);
  CHECK(bodies[1].size() == 1000 - 7);
}

TEST_CASE("amqp: embedded after a header, and a lone heartbeat") {
  const ByteVec frames = amqpImagePublish(contentFixture("photo_gray.jpg"));
  ByteVec buffer = binaryHeader(40);
  append(buffer, frames);
  const SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "amqp");
  CHECK(r.offset == 40);
  CHECK(r.length == frames.size());

  const ByteVec heartbeat = {8, 0, 0, 0, 0, 0, 0, 0xCE};
  const SniffResult h = sniff(view(heartbeat));
  REQUIRE(kindOf(h) == "amqp");
  CHECK(u64(h, "frame_count") == 1);
  CHECK(h.length == 8);
}

TEST_CASE("amqp: near misses are not amqp") {
  const ByteVec frames = amqpImagePublish(contentFixture("photo_gray.jpg"));
  const size_t method_size = 7 + 4 + 2 + 8 + 12 + 1; // header, ids, ticket, 2 shortstrs, bits
  {
    ByteVec bad = frames;
    bad[method_size] = 0xCF; // frame-end byte of the method frame
    const SniffResult r = sniff(view(bad));
    CHECK_FALSE((r.kind == ContentKind::Amqp && r.offset == 0));
  }
  {
    ByteVec bad = frames;
    bad[7 + 1] = 61; // class 61 does not exist
    const SniffResult r = sniff(view(bad));
    CHECK_FALSE((r.kind == ContentKind::Amqp && r.offset == 0));
    CHECK_FALSE(parseAmqp(view(bad)));
  }
  {
    ByteVec bad = frames;
    bad[0] = 4; // no frame type 4
    CHECK_FALSE(parseAmqp(view(bad)));
  }
  // A body frame first, with neither a frame after it nor the end of its buffer near its end.
  ByteVec lone = amqpFrame(3, 1, bytesOf("just some bytes"));
  lone.resize(lone.size() + 8192, 0);
  CHECK(kindOf(sniff(view(lone))) != "amqp");
}

TEST_CASE("amqp: a buffer of one body frame, as clients write them") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  const ByteVec frame = amqpFrame(3, 5, jpeg);
  // glibc's rounding of the request (usable size 15112 for 15106 bytes), then a page-rounded
  // mmapped chunk's tail.
  for (const size_t slack : {size_t(6), size_t(4000)}) {
    INFO("slack " << slack);
    ByteVec buffer = frame;
    buffer.resize(frame.size() + slack, 0);
    const SniffResult r = sniff(view(buffer));
    REQUIRE(kindOf(r) == "amqp");
    CHECK(r.offset == 0);
    CHECK(r.length == frame.size());
    CHECK(str(r, "first_frame") == "body");
    CHECK(u64(r, "frame_count") == 1);
    CHECK(u64(r, "channel") == 5);
    CHECK(u64(r, "body_bytes") == jpeg.size());
    CHECK(str(r, "payload_kind") == "jpeg");
    CHECK_FALSE(flag(r, "truncated"));
    const auto bodies = amqpBodies(view(buffer));
    REQUIRE(bodies.size() == 1);
    CHECK(joined(bodies) == jpeg);
  }
  {
    ByteVec bad = frame;
    bad.back() = 0xCD; // the frame-end byte is not where the size says
    CHECK(kindOf(sniff(view(bad))) == "jpeg");
  }
  {
    ByteVec bad = frame;
    bad[1] = bad[2] = 0; // body frames are never on channel 0
    CHECK(kindOf(sniff(view(bad))) == "jpeg");
  }
  {
    ByteVec roomy = frame; // 24 KiB for 15106 bytes: more than an allocator's rounding
    roomy.resize(24 * 1024, 0);
    CHECK(kindOf(sniff(view(roomy))) == "jpeg");
  }
}

TEST_CASE("amqp: the frame type the buffer starts with") {
  const ByteVec frames = amqpImagePublish(contentFixture("photo_gray.jpg"));
  CHECK(str(sniff(view(frames)), "first_frame") == "method");
  const AmqpLayout layout = *parseAmqp(view(frames));
  REQUIRE(layout.frames.size() >= 3);
  // The content header frame alone, as a client that writes each frame separately holds it.
  const AmqpFrame &header = layout.frames[1];
  const ByteVec alone(frames.begin() + static_cast<std::ptrdiff_t>(header.offset),
                      frames.begin() +
                          static_cast<std::ptrdiff_t>(header.offset + 8 + header.size));
  const SniffResult r = sniff(view(alone));
  REQUIRE(kindOf(r) == "amqp");
  CHECK(str(r, "first_frame") == "header");
  CHECK(u64(r, "body_size") == 10188);
  CHECK(str(r, "content_type") == "image/jpeg");
}

TEST_CASE("amqp: a write-buffer pool of method and header frames, 8-byte aligned") {
  // node's Buffer.allocUnsafe slab as amqplib leaves it: each message's basic.publish and content
  // header frames (70 bytes here) at the next multiple of 8, stale bytes in between.
  const ByteVec frames = amqpImagePublish(contentFixture("photo_gray.jpg"));
  const AmqpLayout whole = *parseAmqp(view(frames));
  const size_t pair = whole.frames[2].offset; // the method and header frames
  const size_t stride = (pair + 7) / 8 * 8;
  REQUIRE(stride > pair);
  ByteVec slab(8192, 0xAA);
  size_t pairs = 0;
  for (size_t at = 0; at + pair <= slab.size(); at += stride, ++pairs)
    std::copy(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(pair),
              slab.begin() + static_cast<std::ptrdiff_t>(at));
  const SniffResult r = sniff(view(slab));
  REQUIRE(kindOf(r) == "amqp");
  CHECK(u64(r, "frame_count") == 2 * pairs);
  CHECK(u64(r, "padding_bytes") == (pairs - 1) * (stride - pair));
  CHECK(r.length == (pairs - 1) * stride + pair);

  // Padding is skipped only to the next multiple of 8.
  ByteVec apart(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(pair));
  apart.resize(stride + 8, 0xAA);
  append(apart, ByteVec(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(pair)));
  const SniffResult two = sniff(view(apart));
  CHECK(u64(two, "frame_count") == 2);
  CHECK(two.details.get("padding_bytes") == nullptr);
}

TEST_CASE("amqp: a pool slab that begins with a stale frame of another method") {
  // One CI run's node core had an amqplib write slab that began with the connection.start frame
  // read at connect time, then the messages' basic.publish and content header frames: the buffer
  // is named by the method most of its frames carry.
  ByteVec start_payload;
  putBe(start_payload, 10, 2);
  putBe(start_payload, 10, 2);
  start_payload.push_back(0); // version-major
  start_payload.push_back(9); // version-minor
  putBe(start_payload, 0, 4); // server-properties: an empty table
  putBe(start_payload, 5, 4);
  append(start_payload, ByteVec{'P', 'L', 'A', 'I', 'N'});
  putBe(start_payload, 5, 4);
  append(start_payload, ByteVec{'e', 'n', '_', 'U', 'S'});
  ByteVec slab = amqpFrame(1, 0, start_payload);
  const ByteVec frames = amqpImagePublish(contentFixture("photo_gray.jpg"));
  const size_t pair = parseAmqp(view(frames))->frames[2].offset;
  for (int i = 0; i < 3; ++i) {
    slab.resize((slab.size() + 7) / 8 * 8, 0xAA);
    append(slab, ByteVec(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(pair)));
  }
  const SniffResult r = sniff(view(slab));
  REQUIRE(kindOf(r) == "amqp");
  CHECK(u64(r, "frame_count") == 7);
  CHECK(str(r, "method") == "basic.publish");
  CHECK(u64(r, "method_frames") == 3);
  CHECK(u64(r, "channel") == 0); // of the first frame
  CHECK(str(r, "content_type") == "image/jpeg");

  // A tie goes to the method seen first.
  ByteVec tie = amqpFrame(1, 0, start_payload);
  tie.resize((tie.size() + 7) / 8 * 8, 0xAA);
  append(tie, ByteVec(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(pair)));
  CHECK(str(sniff(view(tie)), "method") == "connection.start");
}
