// The glibc walker: discovery (glibc_discover.cpp), free lists (glibc_freelists.cpp), then one
// chunk walk per heap and one allocation per mmapped chunk, on WalkOptions::threads threads in
// address order, merged in that order.
#include "glibc_walker.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/intervals.h"
#include "dumpsift/support/parallel.h"
#include "dumpsift/support/sizes.h"
#include "glibc_model.h"

#include <algorithm>

namespace dumpsift {

namespace {

using namespace glibc;

/// The glibc version a libc file name states ("libc-2.23.so" -> {2, 23}), or {0, 0}. Debian 12
/// and later name it libc.so.6, which states none.
std::pair<unsigned, unsigned> libcVersion(llvm::StringRef file_name) {
  if (!file_name.consume_front("libc-") || !file_name.consume_back(".so"))
    return {0, 0};
  auto [major_text, minor_text] = file_name.split('.');
  unsigned major = 0, minor = 0;
  if (major_text.getAsInteger(10, major) || minor_text.getAsInteger(10, minor))
    return {0, 0};
  return {major, minor};
}

/// The glibc version the name of the first libc file the process maps that states one says, or
/// {0, 0}.
std::pair<unsigned, unsigned> libcFileVersion(const Snapshot &snap) {
  std::optional<llvm::StringRef> libc =
      snap.findModule([](llvm::StringRef name) { return libcVersion(name).first != 0; });
  return libc ? libcVersion(fileName(*libc)) : std::pair<unsigned, unsigned>{0, 0};
}

/// glibc's default mmap threshold (DEFAULT_MMAP_THRESHOLD_MIN, where the dynamic threshold
/// starts): larger requests get an mmapped chunk of their own.
constexpr uint64_t kMmapThreshold = 128 * 1024;

/// The page an mmapped chunk's size is rounded up to (4 KiB on x86_64).
constexpr uint64_t kMmapPage = 4096;

/// The requests a chunk may have served: a heap chunk's usable size is the request rounded up to
/// 16 bytes, an mmapped chunk's to whole pages.
RequestRange requestsOf(const Allocation &chunk) {
  const uint64_t slack = chunk.mmapped ? kMmapPage - 1 : kAlignMask;
  return {chunk.size > slack ? chunk.size - slack : 0, chunk.size};
}

/// What mmapped chunks just over the mmap threshold mean.
std::string overMmapThreshold(const Allocation &chunk) {
  const uint64_t mapped = chunk.chunk_size ? chunk.chunk_size : chunk.size + kChunkHeader;
  return "just over glibc's 128 KiB mmap threshold, so each is its own mmap of " +
         groupedDigits(mapped) + " bytes, unmapped again on free";
}

class GlibcWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "glibc"; }

  /// Linux processes of 64-bit little-endian words that map libc.so.6 or libc-2.x.so; heap
  /// chunks round requests up to 16 bytes, mmapped chunks to pages; the mmap threshold.
  const WalkerTraits &traits() const override {
    static const WalkerTraits traits{
        .platforms = Platforms::littleEndian64({Os::Linux}),
        .modules = {std::begin(kLibcNames), std::end(kLibcNames)},
        .requests = requestsOf,
        .thresholds = {{.bytes = kMmapThreshold,
                        .concerns = [](const Allocation &a) { return a.mmapped; },
                        .measures_block = false,
                        .meaning = overMmapThreshold}}};
    return traits;
  }

  /// True when the process maps glibc's libc or has a Heap-class region.
  bool detect(const AddressSpace &memory) const override {
    const Snapshot &snap = memory.snapshot();
    if (snap.findModule(traits().modules))
      return true;
    return std::any_of(snap.regions.begin(), snap.regions.end(),
                       [](const Region &r) { return r.cls == RegionClass::Heap; });
  }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions &options) const override;
};

/// The stretches of [start, end) whose bytes the dump lacks (not captured, or not mapped in it),
/// in address order. At most one more than the snapshot has memory ranges.
std::vector<Interval> uncapturedSpans(const AddressSpace &memory, uint64_t start, uint64_t end) {
  std::vector<Interval> gaps;
  const std::vector<MemoryRange> &ranges = memory.snapshot().memory;
  auto it = std::upper_bound(ranges.begin(), ranges.end(), start,
                             [](uint64_t a, const MemoryRange &m) { return a < m.start; });
  if (it != ranges.begin() && std::prev(it)->end() > start)
    --it;
  uint64_t cur = start;
  for (; it != ranges.end() && cur < end && it->start < end; ++it) {
    if (it->start > cur)
      gaps.emplace_back(cur, it->start);
    cur = std::max(cur, it->end());
  }
  if (cur < end)
    gaps.emplace_back(cur, end);
  return gaps;
}

/// An uncaptured stretch of a heap and the chunk whose header holds its start, once walked.
struct HeapGap {
  Interval span;
  uint64_t chunk = 0; // 0 until the walk reaches the chunk holding span.first
  uint64_t chunk_size = 0;
  uint64_t chunks_through = 0; // chunks of the heap walked up to and including that chunk
};

/// Gaps of one heap reported one by one; the rest are counted in one warning.
constexpr size_t kGapsWarnedPerHeap = 16;

/// "0x1000-0x2000 (4096 bytes, not captured in the dump)", or "(..., no mapping in the dump)".
std::string describeGap(const AddressSpace &memory, const Interval &gap) {
  const Fault fault = memory.classify(gap.first);
  return hexAddress(gap.first) + "-" + hexAddress(gap.second) + " (" +
         std::to_string(gap.second - gap.first) + " bytes, " +
         (fault == Fault::Unmapped ? "no mapping in the dump" : faultName(fault).str()) + ")";
}

/// Bytes of heap spans whose pages pass 1 leaves mapped for pass 2 (see GlibcWalker::walk).
constexpr uint64_t kPass1KeepBytes = 2 * kReleaseBatchBytes;

/// One piece of work in address order: a span to walk or an mmapped chunk to report.
struct WorkItem {
  uint64_t start;
  bool is_span;
  size_t index;
};

/// What walking one work item found, merged into the result in work order (so that the result
/// and the warnings do not depend on which thread walked which item, or when).
struct ItemOutcome {
  HeapStats stats;
  uint64_t chunks = 0;
  bool cut_short = false; // the span's walk stopped before its end (heaps_cut_short)
  uint64_t heap_gaps = 0; // uncaptured stretches walked past
  HeapArea area;
  std::vector<Diagnostic> warnings; // in the order warned
  void warn(std::string where, std::string message) {
    warnings.push_back({std::move(where), std::move(message)});
  }
};

/// Reports the mmapped chunk `m`.
void walkMmapped(const MmappedChunk &m, AllocationSink sink, unsigned lane, ItemOutcome &out) {
  Allocation a;
  a.chunk_address = m.chunk;
  a.chunk_size = m.chunk_size;
  a.address = m.chunk + kChunkHeader;
  a.size = m.chunk_size - kChunkHeader; // no next chunk whose prev_size could be borrowed
  a.arena = 0;
  a.state = AllocState::Used; // a freed mmapped chunk is unmapped
  a.mmapped = true;
  sink(lane, a);
  out.stats.add(a);
  out.area = {"mmapped", m.map_start, m.map_end - m.map_start, 0};
  out.chunks = 1;
}

/// Walks `span` chunk by chunk and reports each chunk (in `lane`), its state from the chunk walk
/// and, for small chunks that look in use, from `lists`; warns about gaps and damage in `out`.
void walkSpan(const AddressSpace &memory, const Span &span, const FreeLists &lists,
              bool tcache_known, AllocationSink sink, unsigned lane, ItemOutcome &out) {
  CachedReader reader(memory);
  const bool small_known = span.arena_lists_known && tcache_known;
  const std::vector<uint64_t> &free_chunks = lists.chunks;
  size_t fi = std::lower_bound(free_chunks.begin(), free_chunks.end(), span.first_chunk) -
              free_chunks.begin();
  Allocation a; // reused: no per-chunk construction
  a.arena = span.arena;
  a.mmapped = false;
  std::vector<HeapGap> gaps;
  for (const Interval &g : uncapturedSpans(memory, span.first_chunk, span.end))
    gaps.push_back({g});
  size_t gi = 0;
  uint64_t span_chunks = 0;
  uint64_t stop = 0;
  std::string why;
  auto on_chunk = [&](uint64_t chunk, uint64_t csize, ChunkHint hint) {
    ++span_chunks;
    for (; gi < gaps.size() && gaps[gi].span.first < chunk + csize; ++gi)
      gaps[gi] = {gaps[gi].span, chunk, csize, span_chunks};
    AllocState state;
    switch (hint) {
    case ChunkHint::NextPrevInuseClear:
    case ChunkHint::Top:
      state = AllocState::Free;
      break;
    case ChunkHint::Unknown:
      state = AllocState::Unknown;
      break;
    case ChunkHint::NextPrevInuseSet:
    default:
      if (csize >= kSmallestCertainChunk) {
        state = AllocState::Used;
        break;
      }
      while (fi < free_chunks.size() && free_chunks[fi] < chunk)
        ++fi;
      if (fi < free_chunks.size() && free_chunks[fi] == chunk)
        state = AllocState::Free;
      else
        state = small_known ? AllocState::Used : AllocState::Unknown;
      break;
    }
    a.chunk_address = chunk;
    a.chunk_size = csize;
    a.address = chunk + kChunkHeader;
    a.size = csize - 8; // the next chunk's prev_size field is usable while in use
    a.state = state;
    sink(lane, a);
    out.stats.add(a);
  };
  // The walk, resumed after each uncaptured stretch that holds chunk headers at the first
  // header past it whose chain reaches top.
  const char *heap_name = span.kind == SpanKind::MainHeap ? "main heap" : "heap";
  Span segment = span;
  WalkEnd end = walkChunks(reader, segment, on_chunk, stop, why);
  struct Resumed {
    Interval gap;
    uint64_t lost_from, resumed_at, chunks_before;
  };
  std::vector<Resumed> resumed;
  while (end == WalkEnd::NotCaptured && resumed.size() < kResyncsPerHeap) {
    auto g = std::find_if(gaps.begin(), gaps.end(), [&](const HeapGap &x) {
      return x.span.first < stop + 16 && stop < x.span.second; // holds the header at `stop`
    });
    if (g == gaps.end() || stop == segment.first_chunk)
      break;
    const uint64_t resume = resyncAfter(reader, span, g->span.second);
    if (!resume)
      break;
    resumed.push_back({g->span, stop, resume, span_chunks});
    segment.first_chunk = resume;
    why.clear();
    end = walkChunks(reader, segment, on_chunk, stop, why);
  }
  out.chunks = span_chunks;
  for (const Resumed &r : resumed) {
    ++out.heap_gaps;
    out.warn(
        hexAddress(r.gap.first),
        std::string(heap_name) + " bytes " + describeGap(memory, r.gap) +
            " hold chunk headers: " + hexAddress(r.lost_from) + "-" + hexAddress(r.resumed_at) +
            " is not walked, and the walk resumes at the chunk at " + hexAddress(r.resumed_at) +
            ", the first after the gap whose headers chain to top: " +
            std::to_string(span_chunks - r.chunks_before) + " chunks walked after the gap");
  }
  // Gaps that a chunk's size carried the walk over: the walk went on behind them.
  size_t gaps_bridged = 0;
  for (const HeapGap &g : gaps) {
    if (!g.chunk || g.span.second > g.chunk + g.chunk_size)
      continue;
    ++out.heap_gaps;
    if (++gaps_bridged > kGapsWarnedPerHeap)
      continue;
    out.warn(hexAddress(g.span.first),
             std::string(heap_name) + " bytes " + describeGap(memory, g.span) +
                 " lie inside the chunk at " + hexAddress(g.chunk) + " (" +
                 std::to_string(g.chunk_size) + " bytes), whose size carries the walk over them: " +
                 std::to_string(span_chunks - g.chunks_through) + " chunks walked after the gap");
  }
  if (gaps_bridged > kGapsWarnedPerHeap)
    out.warn(hexAddress(span.area_start), std::to_string(gaps_bridged - kGapsWarnedPerHeap) +
                                              " more uncaptured gaps in the " + heap_name +
                                              " bridged by a chunk's size");
  if (end == WalkEnd::NotCaptured)
    for (const HeapGap &g : gaps)
      if (g.span.first < stop + 16 && stop < g.span.second) // the header at `stop`
        why += ": " + describeGap(memory, g.span);
  if (end == WalkEnd::Corrupt || end == WalkEnd::NotCaptured ||
      (end == WalkEnd::Fence && !why.empty())) {
    out.cut_short = true;
    out.warn(hexAddress(stop), why + " (" + heap_name + " at " + hexAddress(span.area_start) +
                                   "; the rest of this heap is not walked)");
  } else if (span.top && end != WalkEnd::Top) {
    out.warn(hexAddress(span.top), "heap walk from " + hexAddress(span.first_chunk) +
                                       " did not reach the arena's top chunk");
  }
  out.area = {span.kind == SpanKind::MainHeap ? "main-heap" : "thread-heap", span.area_start,
              span.area_end - span.area_start, span.arena};
}

llvm::Expected<HeapWalkResult> GlibcWalker::walk(const AddressSpace &memory, AllocationSink sink,
                                                 Diagnostics &diags,
                                                 const WalkOptions &options) const {
  const Snapshot &snap = memory.snapshot();
  auto [major, minor] = libcFileVersion(snap);
  if (major && (major != 2 || minor < 31 || minor > 40))
    diags.warn("glibc", "libc file names version " + std::to_string(major) + "." +
                            std::to_string(minor) +
                            ", outside the 2.31-2.40 this walker knows; expect misreadings");

  CachedReader reader(memory);
  Plan plan = discover(reader, snap, diags);
  if (plan.spans.empty() && plan.mmapped.empty() && plan.arenas.empty())
    return createError("no glibc heap found (no main_arena, no brk heap, no thread heap, no "
                       "mmapped chunk)");

  // The spans and the mmapped chunks are walked on options.threads threads, each taking the next
  // in address order (parallelFor), each span by one thread.
  std::vector<size_t> span_order(plan.spans.size());
  for (size_t i = 0; i < span_order.size(); ++i)
    span_order[i] = i;
  std::stable_sort(span_order.begin(), span_order.end(), [&](size_t x, size_t y) {
    return plan.spans[x].area_start < plan.spans[y].area_start;
  });

  // Pass 1: tcache_perthread_structs are in-use 0x290 chunks; collect them with a quiet walk of
  // each span, then list them span by span in the plan's order. The pages of the first
  // kPass1KeepBytes of the spans, in address order, stay mapped for pass 2, which starts there
  // (and releases them behind it): walking a span again costs its page faults again.
  std::vector<uint64_t> keep_below(plan.spans.size(), 0);
  uint64_t keep_left = kPass1KeepBytes;
  for (size_t i : span_order) {
    const Span &span = plan.spans[i];
    const uint64_t kept = std::min(keep_left, span.end - std::min(span.end, span.first_chunk));
    keep_below[i] = span.first_chunk + kept;
    keep_left -= kept;
  }
  std::vector<std::vector<uint64_t>> span_candidates(plan.spans.size());
  parallelFor(
      span_order.size(), options.threads,
      [&](size_t k) {
        const size_t i = span_order[k];
        CachedReader span_reader(memory);
        uint64_t stop = 0;
        std::string why;
        walkChunks(
            span_reader, plan.spans[i],
            [&](uint64_t chunk, uint64_t csize, ChunkHint hint) {
              if (csize == kTcacheChunk && hint == ChunkHint::NextPrevInuseSet)
                span_candidates[i].push_back(chunk);
            },
            stop, why, keep_below[i]);
      },
      options.waiting);
  std::vector<uint64_t> tcache_candidates;
  for (const std::vector<uint64_t> &c : span_candidates)
    tcache_candidates.insert(tcache_candidates.end(), c.begin(), c.end());
  FreeLists lists = collectFreeLists(reader, plan, tcache_candidates, diags);
  const bool tcache_known = lists.tcaches > 0;

  // Pass 2: walk and report, each span and mmapped chunk in address order.
  std::vector<WorkItem> work;
  for (size_t i = 0; i < plan.spans.size(); ++i)
    work.push_back({plan.spans[i].area_start, true, i});
  for (size_t i = 0; i < plan.mmapped.size(); ++i)
    work.push_back({plan.mmapped[i].map_start, false, i});
  std::sort(work.begin(), work.end(),
            [](const WorkItem &a, const WorkItem &b) { return a.start < b.start; });
  std::vector<ItemOutcome> outcomes(work.size());
  parallelFor(
      work.size(), options.threads,
      [&](size_t k, unsigned lane) {
        const WorkItem &item = work[k];
        if (item.is_span)
          walkSpan(memory, plan.spans[item.index], lists, tcache_known, sink, lane, outcomes[k]);
        else
          walkMmapped(plan.mmapped[item.index], sink, lane, outcomes[k]);
      },
      options.waiting);

  HeapWalkResult result;
  uint64_t chunks = 0, spans_corrupt = 0, heap_gaps = 0;
  for (ItemOutcome &out : outcomes) {
    result.stats.add(out.stats);
    chunks += out.chunks;
    spans_corrupt += out.cut_short;
    heap_gaps += out.heap_gaps;
    for (Diagnostic &d : out.warnings)
      diags.warn(std::move(d.where), std::move(d.message));
    result.areas.push_back(std::move(out.area));
  }
  std::stable_sort(result.areas.begin(), result.areas.end(),
                   [](const HeapArea &x, const HeapArea &y) { return x.start < y.start; });
  // Its own records: the arenas (the main one in libc's data; its bins point at free chunks'
  // headers, which lie in the tail of the chunk before), the heap_info headers, the tcaches.
  for (const ArenaRec &arena : plan.arenas)
    if (arena.addr)
      result.bookkeeping.push_back({"malloc_state", arena.addr, kArena.size, arena.addr});
  if (plan.layout)
    for (const Span &s : plan.spans)
      if (s.kind == SpanKind::ThreadHeap)
        result.bookkeeping.push_back(
            {"heap_info", s.area_start, plan.layout->heap_info_size, s.arena});
  for (uint64_t chunk : lists.tcache_chunks)
    result.bookkeeping.push_back(
        {"tcache_perthread_struct", chunk + kChunkHeader, kTcacheChunk - kChunkHeader, 0});
  std::stable_sort(result.bookkeeping.begin(), result.bookkeeping.end(),
                   [](const HeapArea &x, const HeapArea &y) { return x.start < y.start; });

  unsigned thread_heaps = 0;
  for (const Span &s : plan.spans)
    thread_heaps += s.kind == SpanKind::ThreadHeap;
  auto fact = [&](const char *key, std::string value) {
    result.facts.emplace_back(key, std::move(value));
  };
  fact("glibc_layout", plan.layout ? std::string(plan.layout->versions) + " (heap_info " +
                                         hexAddress(plan.layout->heap_info_size) + ")"
                                   : "unknown (no thread heap)");
  fact("safe_linking", lists.safe_linking < 0 ? "unknown" : lists.safe_linking ? "yes" : "no");
  fact("main_arena", plan.main_arena
                         ? hexAddress(plan.main_arena) + " (" + plan.main_arena_how + ")"
                         : "not found");
  fact("main_heap", plan.main_heap_how.empty() ? "not found" : plan.main_heap_how);
  fact("arenas", std::to_string(plan.arenas.size()));
  fact("thread_heaps", std::to_string(thread_heaps));
  fact("mmapped_chunks", std::to_string(plan.mmapped.size()));
  fact("tcaches", std::to_string(lists.tcaches));
  fact("small_chunk_state", tcache_known ? "tcache and fastbins read"
                                         : "unknown: no tcache found (chunks <= 0x410 that look "
                                           "in use are reported unknown)");
  fact("chunks", std::to_string(chunks));
  fact("page_size", std::to_string(plan.page_size));
  if (major)
    fact("libc_file_version", std::to_string(major) + "." + std::to_string(minor));
  if (spans_corrupt)
    fact("heaps_cut_short", std::to_string(spans_corrupt));
  if (heap_gaps)
    fact("heap_gaps_walked_past", std::to_string(heap_gaps));
  return result;
}

} // namespace

std::unique_ptr<HeapWalker> makeGlibcWalker() {
  return std::make_unique<GlibcWalker>();
}

} // namespace dumpsift

namespace dumpsift::glibc {

HeaderCheck checkHeaderSlow(const Span &span, uint64_t cur, uint64_t size_word, std::string &why) {
  const bool main = span.kind == SpanKind::MainHeap;
  uint64_t csize = size_word & ~kSizeBits;
  if (cur == span.top) {
    if (csize == span.end - cur && !(size_word & (8 | kIsMmapped)))
      return HeaderCheck::Ok;
    why = "top chunk does not end at the heap end";
    return HeaderCheck::Corrupt;
  }
  if (csize < kMinChunk) {
    // A heap its arena moved away from ends in fenceposts: a 0x10 header at end-0x20 and a
    // 0|PREV_INUSE header at end-0x10 (sysmalloc). In the main heap a double 0x10 fencepost
    // marks a break in brk.
    if (!main && csize == 0x10 && cur == span.end - 0x20)
      return HeaderCheck::Fence;
    if (main && csize == 0x10) {
      why = "fencepost: brk was not contiguous here (foreign sbrk?); the rest is not walked";
      return HeaderCheck::Fence;
    }
    why = "chunk size " + std::to_string(csize) + " is below the minimum";
    return HeaderCheck::Corrupt;
  }
  if (size_word & 8)
    why = "chunk size is not a multiple of 16";
  else if (size_word & kIsMmapped)
    why = "IS_MMAPPED set on a chunk inside a heap";
  else if (main && (size_word & kNonMainArena))
    why = "NON_MAIN_ARENA set on a chunk of the main heap";
  else if (csize > span.end - cur)
    why = "chunk runs past the heap end";
  else
    return HeaderCheck::Ok;
  return HeaderCheck::Corrupt;
}

} // namespace dumpsift::glibc
