// Helpers for the sniffer tests: fixture bytes, typed access to result details, byte builders.
// The builders here follow the format specifications directly and share no code with src/sniff,
// so a wrong offset in a sniffer is caught rather than copied.
#pragma once

#include "dumpsift/sniff/sniffer.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace dumpsift::test {

using ByteVec = std::vector<uint8_t>;

/// fixtures/content/<name> as bytes.
inline ByteVec contentFixture(const std::string &name) {
  return readFileBytes(sourceDir() + "/fixtures/content/" + name);
}

inline llvm::ArrayRef<uint8_t> view(const ByteVec &v) {
  return llvm::ArrayRef<uint8_t>(v);
}

inline ByteVec bytesOf(std::string_view s) {
  return ByteVec(s.begin(), s.end());
}

inline void append(ByteVec &out, std::string_view s) {
  out.insert(out.end(), s.begin(), s.end());
}
inline void append(ByteVec &out, const ByteVec &v) {
  out.insert(out.end(), v.begin(), v.end());
}
inline void append(ByteVec &out, llvm::ArrayRef<uint8_t> v) {
  out.insert(out.end(), v.begin(), v.end());
}

/// Deterministic pseudo-random bytes.
inline ByteVec randomBytes(size_t n, uint32_t seed = 1234) {
  std::mt19937 rng(seed);
  ByteVec v(n);
  for (auto &b : v)
    b = static_cast<uint8_t>(rng());
  return v;
}

/// The detail `key` of type T; fails the test when it is missing or of another type.
template <class T> T detail(const SniffResult &r, const std::string &key) {
  const DetailValue *v = r.details.get(key);
  INFO("detail " << key);
  REQUIRE(v != nullptr);
  REQUIRE(std::holds_alternative<T>(*v));
  return std::get<T>(*v);
}

inline uint64_t u64(const SniffResult &r, const std::string &key) {
  return detail<uint64_t>(r, key);
}
inline bool flag(const SniffResult &r, const std::string &key) {
  return detail<bool>(r, key);
}
inline std::string str(const SniffResult &r, const std::string &key) {
  return detail<std::string>(r, key);
}
inline bool has(const SniffResult &r, const std::string &key) {
  return r.details.get(key) != nullptr;
}

inline std::string kindOf(const SniffResult &r) {
  return kindName(r.kind).str();
}

/// Big-endian integer bytes appended to `out`.
inline void putBe(ByteVec &out, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

/// An AMQP 0-9-1 frame: type, channel, size (big-endian), payload, frame-end 0xCE.
inline ByteVec amqpFrame(uint8_t type, uint16_t channel, const ByteVec &payload) {
  ByteVec f;
  putBe(f, type, 1);
  putBe(f, channel, 2);
  putBe(f, payload.size(), 4);
  append(f, payload);
  f.push_back(0xCE);
  return f;
}

/// An AMQP short string: its length byte, then its bytes.
inline void shortstr(ByteVec &out, const std::string &s) {
  out.push_back(static_cast<uint8_t>(s.size()));
  append(out, s);
}

/// basic.publish (60/40) of an image (content-type image/jpeg, delivery-mode) + body frames of at
/// most frame_max - 8 bytes.
inline ByteVec amqpImagePublish(const ByteVec &body, uint16_t channel = 1,
                                size_t frame_max = 4096) {
  ByteVec method;
  putBe(method, 60, 2);
  putBe(method, 40, 2);
  putBe(method, 0, 2); // reserved-1 (ticket)
  shortstr(method, "uploads");
  shortstr(method, "images.jpeg");
  method.push_back(0); // mandatory, immediate
  ByteVec header;
  putBe(header, 60, 2);
  putBe(header, 0, 2); // weight
  putBe(header, body.size(), 8);
  putBe(header, 0x8000 | 0x1000, 2); // content-type, delivery-mode
  shortstr(header, "image/jpeg");
  header.push_back(2); // persistent
  ByteVec out = amqpFrame(1, channel, method);
  append(out, amqpFrame(2, channel, header));
  for (size_t off = 0; off < body.size(); off += frame_max - 8) {
    const size_t n = std::min(frame_max - 8, body.size() - off);
    append(out, amqpFrame(3, channel,
                          ByteVec(body.begin() + static_cast<std::ptrdiff_t>(off),
                                  body.begin() + static_cast<std::ptrdiff_t>(off + n))));
  }
  return out;
}

/// "<hex size>;chunk-signature=<64 x signature>\r\n<data>\r\n": one chunk of a SigV4 signed
/// upload.
inline ByteVec awsSignedChunk(const ByteVec &data, char signature = 'b') {
  char size[16];
  std::snprintf(size, sizeof size, "%zx", data.size());
  ByteVec chunk = bytesOf(size);
  append(chunk, ";chunk-signature=" + std::string(64, signature) + "\r\n");
  append(chunk, data);
  append(chunk, "\r\n");
  return chunk;
}

/// The first offset of `needle` in `hay` at or after `from` (test-side search), or npos.
inline size_t findBytes(const ByteVec &hay, std::string_view needle, size_t from = 0) {
  auto it =
      std::search(hay.begin() + static_cast<std::ptrdiff_t>(from), hay.end(), needle.begin(),
                  needle.end(), [](uint8_t a, char b) { return a == static_cast<uint8_t>(b); });
  return it == hay.end() ? std::string::npos : static_cast<size_t>(it - hay.begin());
}

/// A binary "runtime header" (pointer-like words, a length) of `n` bytes with NULs in it.
inline ByteVec binaryHeader(size_t n) {
  ByteVec h(n, 0);
  for (size_t i = 0; i + 8 <= n; i += 8) {
    h[i] = 0x90;
    h[i + 1] = 0x41;
    h[i + 2] = 0x5c;
    h[i + 3] = 0x7f;
  }
  return h;
}

} // namespace dumpsift::test
