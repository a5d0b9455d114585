// Work spread over threads: the analysis's sniffing and findings, the heap walks, the heap
// listing's rows.
#pragma once

#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <type_traits>

namespace dumpsift {

/// The threads that `threads` stands for: itself, or one per core for 0.
inline unsigned resolveThreads(unsigned threads) {
  return threads ? threads : std::max(1u, std::thread::hardware_concurrency());
}

namespace detail {
/// Calls work(i, worker) when `work` takes the worker's index, else work(i).
template <typename Work> void runWork(Work &work, size_t i, unsigned worker) {
  if constexpr (std::is_invocable_v<Work &, size_t, unsigned>)
    work(i, worker);
  else
    work(i);
}
} // namespace detail

/// Runs work(i) for every i in [0, n) on up to `threads` threads (0: one per core), which take the
/// indices in order from a shared counter (so work on a sorted list goes front to back, and one
/// long call does not hold up a slice behind it). Work that gathers results per thread without
/// locks takes the worker's index too, work(i, worker): 0 ... threads - 1 (0 when the calling
/// thread does the work itself), never two calls at once with the same one, to keep its results
/// in slot `worker` of resolveThreads(threads) slots. Meanwhile the calling thread calls waiting()
/// about ten times a second, or after each call when it does the work itself (one thread, or
/// n <= 1). Returns when every call is done.
template <typename Work, typename Waiting>
void parallelFor(size_t n, unsigned threads, Work work, Waiting waiting) {
  threads = static_cast<unsigned>(std::min<size_t>(resolveThreads(threads), n));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) {
      detail::runWork(work, i, 0);
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
    pool.async([&, t] {
      for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;)
        detail::runWork(work, i, t);
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

} // namespace dumpsift
