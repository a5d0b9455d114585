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

namespace dumpsift {

namespace detail {
/// The worker index workerIndex() returns on this thread.
inline thread_local unsigned current_worker = 0;
} // namespace detail

/// The threads that `threads` stands for: itself, or one per core for 0.
inline unsigned resolveThreads(unsigned threads) {
  return threads ? threads : std::max(1u, std::thread::hardware_concurrency());
}

/// The index of the calling thread among the workers of the parallelFor whose work it runs: 0 ...
/// threads - 1 (0 when parallelFor runs the work on the calling thread itself), and 0 outside of
/// any parallelFor. Work that gathers results per thread without locks keeps them in slot
/// workerIndex() of an array of resolveThreads(threads) slots.
inline unsigned workerIndex() {
  return detail::current_worker;
}

/// Makes the calling thread worker `index` (see workerIndex) while the object lives.
class WorkerIndexScope {
public:
  explicit WorkerIndexScope(unsigned index) : outer_(detail::current_worker) {
    detail::current_worker = index;
  }
  WorkerIndexScope(const WorkerIndexScope &) = delete;
  WorkerIndexScope &operator=(const WorkerIndexScope &) = delete;
  ~WorkerIndexScope() { detail::current_worker = outer_; }

private:
  unsigned outer_;
};

/// Runs work(i) for every i in [0, n) on up to `threads` threads (0: one per core), which take the
/// indices in order from a shared counter (so work on a sorted list goes front to back, and one
/// long call does not hold up a slice behind it). Meanwhile the calling thread calls waiting()
/// about ten times a second, or after each call when it does the work itself (one thread, or
/// n <= 1). Returns when every call is done.
template <typename Work, typename Waiting>
void parallelFor(size_t n, unsigned threads, Work work, Waiting waiting) {
  threads = static_cast<unsigned>(std::min<size_t>(resolveThreads(threads), n));
  if (threads <= 1) {
    const WorkerIndexScope worker(0);
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
    pool.async([&, t] {
      detail::current_worker = t;
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

} // namespace dumpsift
