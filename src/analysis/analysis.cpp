#include "dumpsift/analysis/analysis.h"

#include "dumpsift/sniff/budget.h"
#include "dumpsift/support/bytes.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "kept_walk.h"
#include "parallel.h"
#include "region_scan.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>

namespace dumpsift {

namespace {

bool passesKind(const AnalyzeOptions &options, const Buffer &b) {
  return options.kinds.empty() || std::find(options.kinds.begin(), options.kinds.end(),
                                            b.content.kind) != options.kinds.end();
}

/// Releases the dump's pages behind the buffers sniffed so far (see AddressSpace::releasePages).
/// Buffers finish out of order on several threads, so memory below a buffer goes only when it
/// and every buffer before it are done; the pages go in batches of kReleaseBatchBytes or more.
/// Memory between buffers (small chunks, other regions) was walked already and goes with them.
class ReleaseFrontier {
public:
  ReleaseFrontier(const AddressSpace &memory, const std::vector<Buffer> &buffers)
      : memory_(memory), buffers_(buffers), done_(buffers.size(), false),
        released_to_(buffers.empty() ? 0 : buffers.front().payloadAddress()) {}

  /// Records that buffer `i` is sniffed; may release a batch. Safe to call from any thread.
  void finished(size_t i) {
    uint64_t from = 0, to = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_[i] = true;
      for (; frontier_ < buffers_.size() && done_[frontier_]; ++frontier_) {
        const Buffer &b = buffers_[frontier_];
        end_ = std::max(end_, b.payloadAddress() + b.payloadSize());
      }
      const uint64_t limit =
          frontier_ < buffers_.size() ? buffers_[frontier_].payloadAddress() : end_;
      if (limit <= released_to_ ||
          (limit - released_to_ < kReleaseBatchBytes && frontier_ < buffers_.size()))
        return;
      from = released_to_;
      to = released_to_ = limit;
    }
    memory_.releasePages(from, to - from);
  }

private:
  const AddressSpace &memory_;
  const std::vector<Buffer> &buffers_;
  std::mutex mutex_;
  std::vector<bool> done_;
  size_t frontier_ = 0;  // buffers [0, frontier_) are all done
  uint64_t end_ = 0;     // the highest payload end among them
  uint64_t released_to_; // memory below this address is released
};

/// The first buffer sniffed for each payload size and hash: identical buffers (copies, the same
/// data in several pools) are compared byte for byte with it once, here, while their bytes are in
/// the CPU's cache, and take its sniff results. Safe to use from any thread.
class SniffCache {
public:
  /// The map is sized for every buffer up front: no allocation per buffer while sniffing.
  SniffCache(const AddressSpace &memory, const std::vector<Buffer> &buffers)
      : memory_(memory), buffers_(buffers) {
    firsts_.reserve(static_cast<unsigned>(std::min<size_t>(buffers.size(), UINT32_MAX / 2)));
  }

  /// Sniffs buffers[i] and finds its content end (its payload is `payload`, already hashed into
  /// its hash): when a buffer with the same payload size and hash was sniffed before and its bytes
  /// equal `payload`, takes that buffer's results and sets identical_to; otherwise runs the
  /// sniffers. Zero buffers are sniffed again (the zero check samples, which is cheaper than a
  /// comparison). The earlier buffer's pages are released after a comparison: the release
  /// frontier may have passed it already (see ReleaseFrontier). The sniffers draw on a budget of
  /// kFirstPassInflate; returns whether it cut them short (for a copy: whether it cut the earlier
  /// buffer's), and sets `twins` to the earlier buffer's index for a copy.
  bool sniffInto(size_t i, Buffer &b, llvm::ArrayRef<uint8_t> payload, size_t &twins) {
    const std::pair<uint64_t, uint64_t> key{payload.size(), b.hash};
    std::optional<First> first;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = firsts_.find(key); it != firsts_.end())
        first = it->second;
    }
    if (first) {
      const Buffer &f = buffers_[first->index]; // done: nothing writes to it any more
      const bool compared = f.content.kind != ContentKind::Zero;
      const bool same = compared && first->bytes.equals(payload);
      if (compared)
        memory_.releasePages(f.payloadAddress(), first->bytes.size());
      if (same) {
        b.content = f.content;
        b.content_end = f.content_end;
        b.identical_to = f.payloadAddress();
        twins = first->index;
        return first->cut;
      }
    }
    SniffBudget budget(kFirstPassInflate);
    {
      const SniffBudget::Use use(budget);
      b.content = sniff(payload);
    }
    if (b.content.kind != ContentKind::Zero) // findings need no content end for zero buffers
      b.content_end = contentEnd(payload);
    const bool cut = budget.cutCandidates() != 0;
    if (!first) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto [it, inserted] = firsts_.try_emplace(key, First{i, payload, cut});
      // Another thread sniffed an identical buffer meanwhile and came first: this one is its copy
      // (the same bytes give the same results), so that the second pass sees them as one, as
      // with one thread, whatever the timing. (Zero buffers are never copies: see above.)
      if (!inserted && b.content.kind != ContentKind::Zero && it->second.bytes.equals(payload)) {
        b.identical_to = buffers_[it->second.index].payloadAddress();
        twins = it->second.index;
      }
    }
    return cut;
  }

private:
  struct First {
    size_t index;
    llvm::ArrayRef<uint8_t> bytes;
    bool cut; // kFirstPassInflate cut its sniffers short
  };
  const AddressSpace &memory_;
  const std::vector<Buffer> &buffers_;
  std::mutex mutex_;
  llvm::DenseMap<std::pair<uint64_t, uint64_t>, First> firsts_;
};

/// A buffer whose first sniff kFirstPassInflate cut short, to be sniffed again from the run's
/// budget. `twins` names its byte-identical buffers: the index of the one SniffCache sniffed (its
/// own index when it is that one), which buffers of the same bytes share whichever it was.
struct SecondPass {
  size_t index;
  size_t twins;
};

/// Fingerprints (see payloadFingerprint; every byte with `full_hash`), sniffs and finds the
/// content end of buffers[i] from its captured payload; see SniffCache for buffers identical to
/// one sniffed before. Returns whether the first pass's budget cut the sniffers short, and where
/// the results were copied from.
SecondPass sniffOne(const AddressSpace &memory, std::vector<Buffer> &buffers, size_t i,
                    SniffCache &cache, bool full_hash, bool &cut) {
  Buffer &b = buffers[i];
  llvm::ArrayRef<uint8_t> payload = capturedPayload(memory, b);
  b.captured = payload.size();
  b.hash = payloadFingerprint(payload, full_hash, b.hash_sampled);
  SecondPass again{i, i};
  cut = false;
  if (!b.estimated || b.content.kind == ContentKind::Unknown) {
    // The region scan sniffed its hits already, from the run's budget: where the first pass's
    // share is too small for one, the scan's results stand.
    std::optional<SniffResult> scanned;
    if (b.source == kRegionScan && b.content.kind != ContentKind::Unknown)
      scanned = b.content;
    cut = cache.sniffInto(i, b, payload, again.twins);
    if (cut && scanned) {
      b.content = std::move(*scanned);
      cut = false;
    }
  } else if (b.content.kind != ContentKind::Zero)
    b.content_end = contentEnd(payload);
  return again;
}

/// Sniffs again, in address order, the buffers the first pass cut short (`again`, in address
/// order), drawing on `run_budget` (of `budget_bytes` in all) while it lasts: the buffer whose
/// second sniff the budget cuts short keeps its first results, and so do the ones after it, with
/// a warning. Byte-identical buffers are sniffed once, at the first of them in address order (so
/// which one SniffCache chose does not matter), and the others take its results.
void sniffAgain(const AddressSpace &memory, std::vector<Buffer> &buffers,
                const std::vector<SecondPass> &again, SniffBudget &run_budget,
                uint64_t budget_bytes, Diagnostics &diags) {
  const SniffBudget::Use use(run_budget);
  std::unordered_map<size_t, size_t> sniffed_twins; // SecondPass::twins -> the buffer sniffed
  std::optional<size_t> ran_out;                    // the buffer where the budget ran out
  uint64_t left_as_they_were = 0;
  for (const SecondPass &p : again) {
    Buffer &b = buffers[p.index];
    if (auto twin = sniffed_twins.find(p.twins); twin != sniffed_twins.end()) {
      b.content = buffers[twin->second].content;
      continue;
    }
    if (ran_out) {
      ++left_as_they_were;
      continue;
    }
    const uint64_t cut_before = run_budget.cutCandidates();
    SniffResult second = sniff(capturedPayload(memory, b));
    if (run_budget.cutCandidates() != cut_before) {
      ran_out = p.index;
      continue;
    }
    b.content = std::move(second);
    sniffed_twins.emplace(p.twins, p.index);
  }
  if (!ran_out)
    return;
  diags.warn(hexAddress(buffers[*ran_out].payloadAddress()),
             "the run's inflate budget (" + humanBytes(budget_bytes) +
                 " of output) ran out at this buffer: it and " + std::to_string(left_as_they_were) +
                 " later buffers were inflated only in part (" + humanBytes(kFirstPassInflate) +
                 " each, status \"budget\")");
}

/// Sniffs and fingerprints every buffer on `threads` threads (0: one per core), in address order
/// (so the dump is read front to back), each with kFirstPassInflate to inflate; then sniffs the
/// ones that needed more again from `run_budget` (sniffAgain). Progress counts payload bytes.
void sniffAll(const AddressSpace &memory, std::vector<Buffer> &buffers, unsigned threads,
              bool full_hash, SniffBudget &run_budget, uint64_t budget_bytes, Diagnostics &diags,
              ProgressFn progress) {
  uint64_t total_bytes = 0;
  for (const Buffer &b : buffers)
    total_bytes += b.payloadSize();
  const char *phase = "sniffing and hashing buffers";
  progress(phase, 0, total_bytes);
  SniffCache cache(memory, buffers);
  ReleaseFrontier release(memory, buffers);
  std::atomic<uint64_t> done_bytes{0};
  std::vector<SecondPass> again; // in address order once sorted
  std::mutex again_mutex;
  detail::parallelFor(
      buffers.size(), threads,
      [&](size_t i) {
        bool cut = false;
        const SecondPass second = sniffOne(memory, buffers, i, cache, full_hash, cut);
        if (cut) {
          std::lock_guard<std::mutex> lock(again_mutex);
          again.push_back(second);
        }
        release.finished(i);
        done_bytes.fetch_add(buffers[i].payloadSize(), std::memory_order_relaxed);
      },
      [&] { progress(phase, done_bytes.load(std::memory_order_relaxed), total_bytes); });
  std::sort(again.begin(), again.end(),
            [](const SecondPass &a, const SecondPass &b) { return a.index < b.index; });
  sniffAgain(memory, buffers, again, run_budget, budget_bytes, diags);
  progress(phase, total_bytes, total_bytes);
}

} // namespace

uint64_t payloadFingerprint(llvm::ArrayRef<uint8_t> payload, bool full, bool &sampled) {
  sampled = !full && payload.size() > kFingerprintWindow * kFingerprintWindows;
  if (!sampled)
    return llvm::xxHash64(payload);
  uint64_t parts[kFingerprintWindows + 1];
  parts[0] = payload.size();
  const uint64_t stride = (payload.size() - kFingerprintWindow) / (kFingerprintWindows - 1);
  for (unsigned w = 0; w < kFingerprintWindows; ++w) {
    const uint64_t at =
        w + 1 == kFingerprintWindows ? payload.size() - kFingerprintWindow : uint64_t(w) * stride;
    parts[w + 1] = llvm::xxHash64(payload.slice(at, kFingerprintWindow));
  }
  return llvm::xxHash64(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(parts), sizeof parts));
}

llvm::ArrayRef<uint8_t> capturedPayload(const AddressSpace &memory, const Buffer &buffer) {
  uint64_t start = buffer.payloadAddress();
  uint64_t run = memory.capturedRunFrom(start, buffer.payloadSize());
  if (run == 0)
    return {};
  return llvm::ArrayRef<uint8_t>(memory.tryView(start, run), run);
}

llvm::StringRef bufferSource(const Analysis &analysis, const Buffer &buffer) {
  if (buffer.source == kRegionScan || buffer.source >= analysis.heaps.size())
    return "region-scan";
  return analysis.heaps[buffer.source].walker;
}

std::vector<SizeGroup> groupBuffers(const Analysis &analysis) {
  struct Key {
    uint64_t size;
    AllocState state;
    int kind; // -1 unless grouping by kind
    bool operator<(const Key &o) const {
      return std::tie(size, state, kind) < std::tie(o.size, o.state, o.kind);
    }
  };
  std::map<Key, SizeGroup> by_key;
  for (size_t i = 0; i < analysis.buffers.size(); ++i) {
    const Buffer &b = analysis.buffers[i];
    Key key{b.allocation.size, b.allocation.state,
            analysis.options.group_by == GroupBy::SizeKind ? static_cast<int>(b.content.kind) : -1};
    SizeGroup &g = by_key[key];
    if (g.count == 0) {
      g.size = key.size;
      g.state = key.state;
      if (key.kind >= 0)
        g.kind = b.content.kind;
      g.allocator = bufferSource(analysis, b).str();
    } else if (g.allocator != bufferSource(analysis, b)) {
      g.allocator = "mixed";
    }
    ++g.count;
    g.total_bytes += b.allocation.size;
    g.members.push_back(i);
    auto it = std::find_if(g.kinds.begin(), g.kinds.end(),
                           [&](const auto &kc) { return kc.first == b.content.kind; });
    if (it == g.kinds.end())
      g.kinds.emplace_back(b.content.kind, 1);
    else
      ++it->second;
  }
  std::vector<SizeGroup> groups;
  groups.reserve(by_key.size());
  for (auto &[key, g] : by_key) {
    std::sort(g.kinds.begin(), g.kinds.end(), [](const auto &a, const auto &b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    groups.push_back(std::move(g));
  }
  std::stable_sort(groups.begin(), groups.end(), [](const SizeGroup &a, const SizeGroup &b) {
    if (a.total_bytes != b.total_bytes)
      return a.total_bytes > b.total_bytes;
    return a.size > b.size;
  });
  return groups;
}

Analysis analyze(const AddressSpace &memory, const AnalyzeOptions &options, ProgressFn progress) {
  Analysis analysis;
  analysis.options = options;

  // 1. Walk every heap the walkers know; keep allocations that pass the size and state filters.
  // The walk runs on options.threads threads, each keeping its buffers in its own lane; the lanes
  // are then merged by address, whatever thread walked what.
  auto walk_order = [](const Buffer &x, const Buffer &y) {
    const Allocation &a = x.allocation, &b = y.allocation;
    return std::tie(a.address, x.source, a.chunk_address, a.size, a.chunk_size, a.arena,
                    a.data_offset, a.state,
                    a.mmapped) < std::tie(b.address, y.source, b.chunk_address, b.size,
                                          b.chunk_size, b.arena, b.data_offset, b.state, b.mmapped);
  };
  BlockDirectoryBuilder directory(resolveThreads(options.threads),
                                  options.holders == HoldersMode::Chains ? options.holder_budget
                                                                         : 0);
  auto kept = detail::keepWalked<std::vector<Buffer>>(
      memory, options, analysis.diagnostics, progress,
      [](uint16_t heap, const Allocation &a) {
        Buffer b;
        b.allocation = a;
        b.source = heap;
        return b;
      },
      walk_order, options.holders == HoldersMode::Chains ? &directory : nullptr);
  analysis.heaps = std::move(kept.heaps);
  analysis.buffers = std::move(kept.rows);
  analysis.allocations_seen = kept.seen;

  // Windows processes allocate natively from the NT heap or the segment heap. Private memory no
  // walker claims (VirtualAlloc'd blocks; heaps no walker read: segment heaps, Wine's, NT heaps
  // the dump does not hold whole) is scanned as docs/heap-windows.md says, and where no walker
  // of the native heap walked any, the report says that the region scan stood in for it.
  const bool windows = memory.snapshot().system.os == Os::Windows;
  const bool native_heap_walked =
      std::any_of(analysis.heaps.begin(), analysis.heaps.end(), [](const HeapWalkResult &h) {
        const HeapWalker *walker = findHeapWalker(h.walker);
        return walker && walker->traits().native_heap && !h.areas.empty();
      });
  if (windows && !native_heap_walked)
    analysis.diagnostics.warn(
        "windows native heaps",
        options.region_scan
            ? "no NT heap was walked (none found in the captured memory, or the segment heap, "
              "which no walker reads): HeapAlloc'd memory was covered only by the region scan "
              "of captured private memory, which finds content with a strong signature, whole "
              "private allocations (their size the committed pages') and runs of zeros or "
              "high-entropy bytes (their extents estimated)"
            : "no NT heap was walked (none found in the captured memory, or the segment heap, "
              "which no walker reads) and the region scan is off: HeapAlloc'd memory was not "
              "examined");

  // 2. Memory no walker claims: find content by signature.
  std::vector<HeapArea> claimed;
  for (const HeapWalkResult &h : analysis.heaps)
    claimed.insert(claimed.end(), h.areas.begin(), h.areas.end());
  analysis.unclaimed = unclaimedRanges(memory.snapshot(), claimed);
  // The sniffers' expensive work (inflating) draws on one budget for the run, in a fixed order:
  // the region scan's ranges in address order, then the buffers that need more than their first
  // sniff's share, in address order (sniffAll).
  SniffBudget run_budget(options.inflate_budget);
  if (options.region_scan) {
    memory.adviseAccess(AddressSpace::Access::Sequential); // every byte, front to back
    auto normal = llvm::make_scope_exit([&] { memory.adviseAccess(AddressSpace::Access::Normal); });
    scanUnclaimed(memory, analysis.unclaimed, options, windows, run_budget, analysis.diagnostics,
                  progress, [&](Buffer b) {
                    if (detail::passesSizeAndState(options, b.allocation))
                      analysis.buffers.push_back(std::move(b));
                  });
  }

  // 3. Sniff and fingerprint, then filter by kind.
  std::sort(analysis.buffers.begin(), analysis.buffers.end(), [](const Buffer &a, const Buffer &b) {
    return a.allocation.address < b.allocation.address;
  });
  sniffAll(memory, analysis.buffers, options.threads, options.full_hash, run_budget,
           options.inflate_budget, analysis.diagnostics, progress);
  // What large free blocks held before they were freed, found the way the region scan finds it.
  scanFreeBlocks(memory, analysis.buffers, options, run_budget);
  if (!options.kinds.empty())
    std::erase_if(analysis.buffers, [&](const Buffer &b) { return !passesKind(options, b); });

  // 4. Who holds each buffer: one pass over the captured writable memory.
  if (options.holders != HoldersMode::None) {
    std::vector<HolderTarget> targets;
    targets.reserve(analysis.buffers.size());
    for (const Buffer &b : analysis.buffers) {
      HolderTarget &t = targets.emplace_back(
          HolderTarget{b.allocation.address, b.allocation.size, b.allocation.state, b.source});
      // Content a format's walk vouched for holds no references: the pass need not read it. Nor
      // a block whose allocator says it holds none (a managed array of primitives, a Go object
      // of a noscan span), whatever its content.
      if (b.allocation.noscan) {
        t.opaque_start = b.allocation.address;
        t.opaque_length = b.allocation.size;
      } else {
        t.opaque_start = b.payloadAddress() + b.content.offset;
        t.opaque_length = b.captured > b.content.offset ? std::min(b.content.referenceFreeLength(),
                                                                   b.captured - b.content.offset)
                                                        : 0;
      }
    }
    HoldersOptions holder_options;
    holder_options.mode = options.holders;
    holder_options.threads = options.threads;
    holder_options.budget = options.holder_budget;
    holder_options.module_paths = options.module_paths;
    holder_options.module_files = options.module_files;
    analysis.holders = findHolders(memory, analysis.heaps, std::move(directory), targets,
                                   holder_options, analysis.diagnostics, progress);
  }

  // 5. Group.
  progress("grouping and finding waste", 0, 0);
  analysis.groups = groupBuffers(analysis);
  analysis.findings = computeFindings(memory, analysis);
  return analysis;
}

} // namespace dumpsift
