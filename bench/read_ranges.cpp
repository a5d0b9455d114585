// Reads file ranges as fast as this machine lets a program read them: the floor under any tool
// that must read those bytes (bench/needed_floor.sh times it against `cat` and dumpsift).
//
// Usage: read_ranges FILE SPANS [THREADS [mmap|pread]]
// SPANS holds one "offset length" line per range (bench/needed_reads.py prints them). THREADS
// threads (default 2) take the ranges in file order from a shared counter, as dumpsift's sniffing
// threads take buffers. mmap (the default) reads them through one read-only mapping of the file,
// as dumpsift does, and releases each range's whole pages behind it (MADV_DONTNEED); pread copies
// them into a 1 MiB buffer per thread, as cat does. Each byte is read once (OR-ed into a word,
// which the compiler vectorizes); the result is printed so the reads cannot be optimized away.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

struct Range {
  uint64_t offset, length;
};

/// The OR of every 8-byte word of [p, p + n) (a trailing partial word included).
uint64_t orWords(const uint8_t *p, uint64_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  uint64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, p + i, sizeof w);
    a |= w[0];
    b |= w[1];
    c |= w[2];
    d |= w[3];
  }
  for (; i < n; ++i)
    a |= p[i];
  return a | b | c | d;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: read_ranges FILE SPANS [THREADS [mmap|pread]]\n");
    return 2;
  }
  const unsigned threads = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 2;
  const bool use_pread = argc > 4 && std::strcmp(argv[4], "pread") == 0;
  const int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    std::perror(argv[1]);
    return 2;
  }
  std::vector<Range> ranges;
  FILE *spans = std::fopen(argv[2], "r");
  if (!spans) {
    std::perror(argv[2]);
    return 2;
  }
  unsigned long long offset, length;
  while (std::fscanf(spans, "%llu %llu", &offset, &length) == 2)
    if (offset + length <= static_cast<uint64_t>(st.st_size))
      ranges.push_back({offset, length});
  std::fclose(spans);

  const auto size = static_cast<size_t>(st.st_size);
  auto *base = use_pread
                   ? nullptr
                   : static_cast<uint8_t *>(mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0));
  if (base == MAP_FAILED) {
    std::perror("mmap");
    return 2;
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> result{0};
  auto work = [&] {
    uint64_t acc = 0;
    std::vector<uint8_t> buffer(use_pread ? 1u << 20 : 0);
    for (size_t i; (i = next.fetch_add(1)) < ranges.size();) {
      const Range r = ranges[i];
      if (use_pread) {
        for (uint64_t done = 0; done < r.length;) {
          const ssize_t got =
              pread(fd, buffer.data(), std::min<uint64_t>(buffer.size(), r.length - done),
                    static_cast<off_t>(r.offset + done));
          if (got <= 0)
            break;
          acc |= orWords(buffer.data(), static_cast<uint64_t>(got));
          done += static_cast<uint64_t>(got);
        }
        continue;
      }
      acc |= orWords(base + r.offset, r.length);
      const uint64_t first = (r.offset + page - 1) / page * page,
                     end = (r.offset + r.length) / page * page;
      if (end > first)
        madvise(base + first, end - first, MADV_DONTNEED);
    }
    result.fetch_or(acc);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  std::printf("%llx\n", static_cast<unsigned long long>(result.load()));
  return 0;
}
