// Work spread over the analysis's threads (internal to the analysis layer).
#pragma once

#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

namespace dumpsift::detail {

/// Runs work(i) for every i in [0, n) on up to `threads` threads (0: one per core), which take the
/// indices in order from a shared counter (so work on a sorted list goes front to back, and one
/// long call does not hold up a slice behind it). Meanwhile the calling thread calls waiting()
/// about ten times a second, or after each call when it does the work itself (one thread).
/// Returns when every call is done.
template <typename Work, typename Waiting>
void parallelFor(size_t n, unsigned threads, Work work, Waiting waiting) {
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, n));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) {
      work(i);
      waiting();
    }
    return;
  }
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::condition_variable all_done;
  unsigned running = threads;
  llvm::ThreadPool pool(llvm::hardware_concurrency(threads));
  for (unsigned t = 0; t < threads; ++t)
    pool.async([&] {
      for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;)
        work(i);
      std::lock_guard<std::mutex> lock(mutex);
      if (--running == 0)
        all_done.notify_one();
    });
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (!all_done.wait_for(lock, std::chrono::milliseconds(100), [&] { return running == 0; }))
      waiting();
  }
  pool.wait();
}

} // namespace dumpsift::detail
