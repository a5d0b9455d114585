// The extraction tests' synthetic dumps (shared by tests/extract and tests/report): buffers placed
// at known addresses and sniffed as analyze() would, aws-chunked and AMQP bodies built from the
// specifications (sharing no code with src/), and what was written checked with sha256sum.
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "sniff/sniff_test_util.h"
#include "support/byte_builder.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace dumpsift::test {

/// A snapshot whose memory is a set of byte vectors placed at chosen addresses (one Heap region
/// each, laid out with FakeMemory).
class SyntheticDump {
public:
  /// Places `bytes` at `address`; the region is `mapped` bytes long (>= bytes.size(): the rest is
  /// mapped but not captured).
  void place(uint64_t address, const ByteVec &bytes, uint64_t mapped = 0) {
    FakeRegion region;
    region.cls = RegionClass::Heap;
    region.captured = bytes.size();
    fake_.addRegion(address, std::max<uint64_t>(mapped, bytes.size()), region);
    fake_.putBytes(address, bytes);
  }
  /// The address space over everything placed (built on the first call: place() no more after).
  const AddressSpace &memory() {
    if (!memory_) {
      snapshot_ = fake_.snapshot();
      memory_ = std::make_unique<AddressSpace>(*snapshot_);
    }
    return *memory_;
  }

private:
  FakeMemory fake_;
  std::unique_ptr<Snapshot> snapshot_;
  std::unique_ptr<AddressSpace> memory_;
};

/// A used malloc-style buffer of `size` bytes at `address`, captured and sniffed as analyze() does.
inline Buffer bufferAt(const AddressSpace &memory, uint64_t address, uint64_t size) {
  Buffer b;
  b.allocation.address = address;
  b.allocation.size = size;
  b.allocation.chunk_address = address - 16;
  b.allocation.chunk_size = size + 16;
  b.allocation.state = AllocState::Used;
  llvm::ArrayRef<uint8_t> payload = capturedPayload(memory, b);
  b.captured = payload.size();
  b.content = sniff(payload);
  return b;
}

/// `bytes` followed by zeros up to `size`.
inline ByteVec padded(ByteVec bytes, size_t size) {
  bytes.resize(size, 0);
  return bytes;
}

/// A signed aws-chunked body: one chunk per element of `chunks`, then the final chunk.
inline ByteVec awsChunked(const std::vector<ByteVec> &chunks) {
  const std::string signature(64, 'a');
  char head[32];
  ByteVec out;
  for (const ByteVec &c : chunks) {
    snprintf(head, sizeof head, "%zx", c.size());
    append(out, std::string(head) + ";chunk-signature=" + signature + "\r\n");
    append(out, c);
    append(out, "\r\n");
  }
  append(out, "0;chunk-signature=" + signature + "\r\n\r\n");
  return out;
}

/// basic.publish + content header + the body in frames of the given sizes.
inline ByteVec amqpPublish(const ByteVec &body, const std::vector<size_t> &frame_sizes) {
  ByteVec method;
  putBe(method, 60, 2);
  putBe(method, 40, 2);
  putBe(method, 0, 2);
  method.push_back(7);
  append(method, "uploads");
  method.push_back(4);
  append(method, "json");
  method.push_back(0);
  ByteVec header;
  putBe(header, 60, 2);
  putBe(header, 0, 2);
  putBe(header, body.size(), 8);
  putBe(header, 0, 2); // no properties
  ByteVec out = amqpFrame(1, 1, method);
  append(out, amqpFrame(2, 1, header));
  size_t at = 0;
  for (size_t n : frame_sizes) {
    append(out, amqpFrame(3, 1, ByteVec(body.begin() + at, body.begin() + at + n)));
    at += n;
  }
  REQUIRE(at == body.size());
  return out;
}

/// JSON text of about `n` bytes.
inline ByteVec jsonText(size_t n, int seed) {
  std::string s = "[";
  for (int i = 0; s.size() < n; ++i)
    s += (i ? ", " : "") + std::string("{\"id\": ") + std::to_string(i * seed) + ", \"ok\": true}";
  s += "]";
  return bytesOf(s);
}

/// The file's bytes.
inline ByteVec fileBytes(const std::string &dir, const std::string &name) {
  return readFileBytes(dir + "/" + name);
}

/// The placed content used by several tests.
struct Story {
  ByteVec jpeg = contentFixture("photo_baseline.jpg");
  ByteVec png = contentFixture("image.png");
  ByteVec json1 = jsonText(9000, 3), json2 = jsonText(5000, 7);
  ByteVec aws, amqp;
  SyntheticDump dump;
  std::vector<Buffer> buffers;
  static constexpr uint64_t kJpeg = 0x100000, kHalfJpeg = 0x200000, kPng = 0x300000,
                            kAws = 0x400000, kAmqp = 0x500000;

  Story() {
    const size_t half = jpeg.size() / 2;
    aws = awsChunked(
        {ByteVec(jpeg.begin(), jpeg.begin() + half), ByteVec(jpeg.begin() + half, jpeg.end())});
    amqp = amqpPublish(json1, {4000, json1.size() - 4000});
    append(amqp, amqpPublish(json2, {json2.size()}));
    ByteVec png_at_64(64, 0);
    append(png_at_64, png);
    dump.place(kJpeg, padded(jpeg, jpeg.size() + 1000));
    dump.place(kHalfJpeg, ByteVec(jpeg.begin(), jpeg.begin() + half));
    dump.place(kPng, padded(png_at_64, png_at_64.size() + 300));
    dump.place(kAws, padded(aws, aws.size() + 500));
    dump.place(kAmqp, padded(amqp, amqp.size() + 700));
    const AddressSpace &memory = dump.memory();
    buffers.push_back(bufferAt(memory, kJpeg, jpeg.size() + 1000));
    buffers.push_back(bufferAt(memory, kHalfJpeg, half));
    buffers.push_back(bufferAt(memory, kPng, png_at_64.size() + 300));
    buffers.push_back(bufferAt(memory, kAws, aws.size() + 500));
    buffers.push_back(bufferAt(memory, kAmqp, amqp.size() + 700));
  }
  const AddressSpace &memory() { return dump.memory(); }
};

/// Copies for the dedupe tests: photo_gray.jpg at 0x10000, 0x20000 and 0x40000, and
/// photo_baseline.jpg at 0x30000, one buffer each.
struct DedupeStory {
  ByteVec gray = contentFixture("photo_gray.jpg");
  ByteVec baseline = contentFixture("photo_baseline.jpg");
  SyntheticDump dump;
  std::vector<Buffer> buffers;

  DedupeStory() {
    for (uint64_t at : {0x10000, 0x20000, 0x40000})
      dump.place(at, gray);
    dump.place(0x30000, baseline);
    for (uint64_t at : {0x10000, 0x20000, 0x30000, 0x40000})
      buffers.push_back(bufferAt(dump.memory(), at, at == 0x30000 ? baseline.size() : gray.size()));
  }
  const AddressSpace &memory() { return dump.memory(); }
};

} // namespace dumpsift::test
