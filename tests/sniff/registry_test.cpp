// The registry and sniff(): one sniffer per signature kind, priority, the 4 KiB embedded window,
// the cost of the common reject path (time and heap allocations). kinds_test.cpp checks the kinds
// table against the schema, the docs and the sniffers.
#include "sniff_test_util.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <new>
#include <set>

using namespace dumpsift;
using namespace dumpsift::test;

// Counts heap allocations made through operator new on this thread. The whole test binary uses
// this replacement (every non-aligned form, so that new and delete always match); it only counts,
// then defers to malloc/free.
namespace {
thread_local size_t g_allocations = 0;

/// malloc that counts; nullptr when out of memory.
void *countedAlloc(std::size_t n) noexcept {
  ++g_allocations;
  return std::malloc(n ? n : 1);
}
} // namespace
void *operator new(std::size_t n) {
  if (void *p = countedAlloc(n))
    return p;
  throw std::bad_alloc();
}
void *operator new[](std::size_t n) {
  return operator new(n);
}
void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
  return countedAlloc(n);
}
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept {
  return countedAlloc(n);
}
void operator delete(void *p) noexcept {
  std::free(p);
}
void operator delete[](void *p) noexcept {
  std::free(p);
}
void operator delete(void *p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void *p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void *p, const std::nothrow_t &) noexcept {
  std::free(p);
}
void operator delete[](void *p, const std::nothrow_t &) noexcept {
  std::free(p);
}

namespace {

/// An array of small little-endian counters: binary, low entropy, nothing recognisable.
ByteVec structuredBinary(size_t n) {
  ByteVec v(n);
  for (size_t i = 0; i < n; ++i)
    if (i % 4 == 0)
      v[i] = static_cast<uint8_t>(i / 4 * 7);
    else if (i % 4 == 1)
      v[i] = static_cast<uint8_t>(i >> 10);
  return v;
}

/// This thread's CPU time (the machine running the tests is shared: wall time is noisy).
std::chrono::nanoseconds threadCpuTime() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

/// CPU microseconds per sniff() of `buffer`, over `rounds` calls.
double microsPerSniff(const ByteVec &buffer, int rounds) {
  const auto start = threadCpuTime();
  uint64_t sink = 0;
  for (int i = 0; i < rounds; ++i)
    sink += sniff(view(buffer)).length;
  const double us = std::chrono::duration<double, std::micro>(threadCpuTime() - start).count();
  REQUIRE(sink == sniff(view(buffer)).length * uint64_t(rounds)); // keeps the calls alive
  return us / rounds;
}

} // namespace

TEST_CASE("registry: one sniffer per signature kind") {
  std::set<ContentKind> kinds;
  for (const auto &s : sniffers())
    CHECK(kinds.insert(s->kind()).second);
  for (ContentKind k : allKinds()) {
    const bool statistical = k == ContentKind::Text || k == ContentKind::Utf16 ||
                             k == ContentKind::Zero || k == ContentKind::Random ||
                             k == ContentKind::Unknown;
    INFO(kindName(k).str());
    CHECK(kinds.count(k) == (statistical ? 0u : 1u));
  }
  // quickCheck never needs more than the head, and copes with an empty one.
  for (const auto &s : sniffers())
    CHECK_FALSE(s->quickCheck({}));
}

TEST_CASE("sniff: embedded content must start within the first 4 KiB") {
  const ByteVec png = contentFixture("image.png");
  for (size_t offset : {size_t(1), size_t(4095), size_t(4096)}) {
    ByteVec buffer = structuredBinary(offset);
    append(buffer, png);
    const SniffResult r = sniff(view(buffer));
    INFO("offset " << offset);
    if (offset < Sniffer::kEmbeddedWindow) {
      CHECK(kindOf(r) == "png");
      CHECK(r.offset == offset);
      CHECK(r.length == png.size());
    } else {
      CHECK(kindOf(r) != "png");
    }
  }
}

TEST_CASE("sniff: the earliest embedded signature wins") {
  ByteVec buffer = structuredBinary(100);
  append(buffer, contentFixture("text.gz"));
  const size_t jpeg_at = 100 + 3000; // inside the gzip data: found first (jpeg has priority)
  ByteVec jpeg = contentFixture("photo_gray.jpg");
  std::copy(jpeg.begin(), jpeg.begin() + 1000,
            buffer.begin() + static_cast<std::ptrdiff_t>(jpeg_at));
  const SniffResult r = sniff(view(buffer));
  CHECK(kindOf(r) == "gzip");
  CHECK(r.offset == 100);
}

TEST_CASE("sniff: the common reject path does not allocate") {
  const ByteVec binary = structuredBinary(128 * 1024);
  const ByteVec zeros(128 * 1024, 0);
  ByteVec fake_jpeg = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10};
  append(fake_jpeg, structuredBinary(64 * 1024));
  ByteVec fake_amqp = {0x01, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x3c, 0x00, 0x28};
  append(fake_amqp, structuredBinary(4096));
  const ByteVec *buffers[] = {&binary, &zeros, &fake_jpeg, &fake_amqp};
  for (const ByteVec *buffer : buffers) {
    (void)sniff(view(*buffer)); // first use builds the registry and thread-local state
    const size_t before = g_allocations;
    const SniffResult r = sniff(view(*buffer));
    CHECK(g_allocations == before);
    CHECK((r.kind == ContentKind::Unknown || r.kind == ContentKind::Zero));
  }
}

TEST_CASE("sniff: a 128 KiB buffer costs microseconds when nothing validates") {
  std::string text;
  while (text.size() < 128 * 1024)
    text += "an ordinary line of log text, nothing to see here\n";
  const ByteVec buffers[] = {randomBytes(128 * 1024), ByteVec(128 * 1024, 0),
                             structuredBinary(128 * 1024), bytesOf(text)};
  for (const ByteVec &b : buffers) {
    const double us = microsPerSniff(b, 50);
    INFO(kindOf(sniff(view(b))) << ": " << us << " us per 128 KiB sniff");
    CHECK(us < 2000); // generous: sanitizers and a shared machine; see the [.perf] test
  }
}

TEST_CASE("sniff throughput (prints timings)", "[.perf]") {
  std::string text;
  while (text.size() < 128 * 1024)
    text += "an ordinary line of log text, nothing to see here\n";
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  ByteVec jpeg_buffer = jpeg;
  jpeg_buffer.resize(128 * 1024, 0);
  ByteVec gz_buffer = contentFixture("text.gz");
  gz_buffer.resize(128 * 1024, 0);
  ByteVec progressive_buffer = contentFixture("photo_progressive.jpg");
  progressive_buffer.resize(128 * 1024, 0);
  const std::pair<const char *, ByteVec> cases[] = {
      {"random 128 KiB", randomBytes(128 * 1024)},
      {"zero 128 KiB", ByteVec(128 * 1024, 0)},
      {"structured binary 128 KiB", structuredBinary(128 * 1024)},
      {"text 128 KiB", bytesOf(text)},
      {"jpeg baseline 320x240 (15 KB) in 128 KiB", jpeg_buffer},
      {"jpeg progressive 320x240 (22 KB) in 128 KiB", progressive_buffer},
      {"gzip 6 KB -> 169 KiB in 128 KiB", gz_buffer},
  };
  for (const auto &[name, buffer] : cases) {
    const double us = microsPerSniff(buffer, 200);
    WARN(name << " -> " << kindOf(sniff(view(buffer))) << ": " << us << " us CPU ("
              << (double(buffer.size()) / (1 << 30)) / (us / 1e6) << " GiB/s of buffer)");
  }
}
