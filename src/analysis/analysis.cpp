#include "dumpsift/analysis/analysis.h"

#include "dumpsift/support/hex.h"
#include "region_scan.h"

#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>

namespace dumpsift {

namespace {

bool passesSizeAndState(const AnalyzeOptions &options, const Allocation &a) {
  if (a.size < options.min_size || a.size > options.max_size)
    return false;
  return !options.state || *options.state == a.state;
}

bool passesKind(const AnalyzeOptions &options, const Buffer &b) {
  return options.kinds.empty() || std::find(options.kinds.begin(), options.kinds.end(),
                                            b.content.kind) != options.kinds.end();
}

unsigned threadCount(const AnalyzeOptions &options) {
  if (options.threads)
    return options.threads;
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

// Sniffs and hashes every buffer, in parallel over contiguous slices.
void sniffAll(const AddressSpace &memory, std::vector<Buffer> &buffers, unsigned threads,
              ProgressFn progress) {
  uint64_t total_bytes = 0;
  for (const Buffer &b : buffers)
    total_bytes += b.payloadSize();
  std::atomic<uint64_t> done_bytes{0};
  auto work = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      Buffer &b = buffers[i];
      llvm::ArrayRef<uint8_t> payload = capturedPayload(memory, b);
      b.captured = payload.size();
      b.hash = llvm::xxHash64(payload);
      if (!b.estimated || b.content.kind == ContentKind::Unknown)
        b.content = sniff(payload);
      done_bytes += b.payloadSize();
    }
  };
  if (threads <= 1 || buffers.size() < 2) {
    work(0, buffers.size());
    progress("sniffing", total_bytes, total_bytes);
    return;
  }
  llvm::ThreadPool pool(llvm::hardware_concurrency(threads));
  // Small slices keep the threads busy when buffer sizes vary a lot.
  size_t slice = std::max<size_t>(1, buffers.size() / (threads * 16));
  for (size_t begin = 0; begin < buffers.size(); begin += slice)
    pool.async(work, begin, std::min(buffers.size(), begin + slice));
  pool.wait();
  progress("sniffing", done_bytes.load(), total_bytes);
}

} // namespace

llvm::ArrayRef<uint8_t> capturedPayload(const AddressSpace &memory, const Buffer &buffer) {
  uint64_t start = buffer.payloadAddress();
  uint64_t run = std::min(memory.capturedRunFrom(start), buffer.payloadSize());
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
  for (const std::unique_ptr<HeapWalker> &walker : heapWalkers()) {
    if (!options.walkers.empty() && std::find(options.walkers.begin(), options.walkers.end(),
                                              walker->name()) == options.walkers.end())
      continue;
    if (!walker->detect(memory))
      continue;
    progress(("walking " + walker->name() + " heaps").str(), 0, 0);
    auto source = static_cast<uint16_t>(analysis.heaps.size());
    uint64_t seen = 0;
    auto result = walker->walk(
        memory,
        [&](const Allocation &a) {
          ++seen;
          if (passesSizeAndState(options, a)) {
            Buffer b;
            b.allocation = a;
            b.source = source;
            analysis.buffers.push_back(std::move(b));
          }
        },
        analysis.diagnostics);
    analysis.allocations_seen += seen;
    if (!result) {
      analysis.diagnostics.warn(walker->name().str(), llvm::toString(result.takeError()));
      continue;
    }
    analysis.heaps.push_back(std::move(*result));
  }

  // 2. Memory no walker claims: find content by signature.
  analysis.unclaimed = unclaimedMemory(memory, analysis.heaps);
  if (options.region_scan) {
    progress("scanning unclaimed memory", 0, 0);
    scanUnclaimed(memory, analysis.unclaimed, options, [&](Buffer b) {
      if (passesSizeAndState(options, b.allocation))
        analysis.buffers.push_back(std::move(b));
    });
  }

  // 3. Sniff and hash, then filter by kind.
  std::sort(analysis.buffers.begin(), analysis.buffers.end(), [](const Buffer &a, const Buffer &b) {
    return a.allocation.address < b.allocation.address;
  });
  sniffAll(memory, analysis.buffers, threadCount(options), progress);
  if (!options.kinds.empty())
    std::erase_if(analysis.buffers, [&](const Buffer &b) { return !passesKind(options, b); });

  // 4. Group.
  analysis.groups = groupBuffers(analysis);
  analysis.findings = computeFindings(memory, analysis);
  return analysis;
}

} // namespace dumpsift
