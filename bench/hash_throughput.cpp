// Hashing throughput: bytes per second that llvm::xxHash64 (what the analysis hashes every kept
// buffer with, and what duplicates and growth-chain findings build on) gets through, on one
// core (per CPU-second), over buffers the size of large heap allocations. Also the memcmp rate that
// confirms a duplicate or a prefix. Built and run by bench/hash_throughput.sh.
//
// Usage: hash_throughput [total MiB, default 1024] [buffer KiB, default 1024]
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace {

/// Fills `buffer` with xorshift64 bytes so nothing is all zero or compressible.
void fillRandom(std::vector<uint8_t> &buffer) {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i + 8 <= buffer.size(); i += 8) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    std::memcpy(buffer.data() + i, &s, 8);
  }
}

/// CPU seconds this thread has used: the figure is per core-second, so a busy machine (other
/// builds, CI neighbours) does not lower it the way wall time would.
double now() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

/// Runs `work` over every buffer until `total` bytes are done; returns bytes per second (best of
/// three rounds, so a cold cache or a busy neighbour does not decide the figure).
template <typename Work>
double rate(const std::vector<std::vector<uint8_t>> &buffers, uint64_t total, Work work) {
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    uint64_t done = 0;
    double start = now();
    while (done < total)
      for (const std::vector<uint8_t> &b : buffers) {
        work(b);
        done += b.size();
      }
    best = std::max(best, static_cast<double>(done) / (now() - start));
  }
  return best;
}

} // namespace

/// Prints bytes hashed per second and bytes compared per second.
int main(int argc, char **argv) {
  uint64_t total_mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  uint64_t buffer_kib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1024;
  if (!total_mib || !buffer_kib) {
    std::fprintf(stderr, "usage: hash_throughput [total MiB] [buffer KiB]\n");
    return 2;
  }
  // 64 MiB of distinct buffers: larger than the caches, as a dump's buffers are.
  size_t count = std::max<uint64_t>(2, (64ull << 20) / (buffer_kib << 10));
  std::vector<std::vector<uint8_t>> buffers(count, std::vector<uint8_t>(buffer_kib << 10));
  for (std::vector<uint8_t> &b : buffers)
    fillRandom(b);
  std::vector<std::vector<uint8_t>> copies = buffers;
  uint64_t total = total_mib << 20;

  volatile uint64_t sink = 0;
  double hashed = rate(buffers, total, [&](const std::vector<uint8_t> &b) {
    sink = sink + llvm::xxHash64(llvm::ArrayRef<uint8_t>(b));
  });
  size_t next = 0;
  double compared = rate(buffers, total, [&](const std::vector<uint8_t> &b) {
    sink = sink + std::memcmp(b.data(), copies[next].data(), b.size());
    next = (next + 1) % copies.size();
  });
  std::printf("xxHash64: %.2f GiB/s (%.0f bytes per CPU-second) over %zu buffers of %llu KiB\n",
              hashed / (1 << 30), hashed, count, static_cast<unsigned long long>(buffer_kib));
  std::printf("memcmp of equal buffers: %.2f GiB/s\n", compared / (1 << 30));
  return sink == 42 ? 1 : 0;
}
