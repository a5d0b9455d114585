// The go walker: arena by arena through heapArena.spans, span by span, object by object.
#include "go_walker.h"

#include "dumpsift/support/hex.h"
#include "go_heap.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <vector>

namespace dumpsift {

namespace {

using namespace golang;

/// Warnings kept per kind of damage; the rest are counted in one last warning.
constexpr unsigned kWarningsPerKind = 8;

/// Area kinds: spans of heap objects, goroutine stacks (manual spans the stack allocator sized),
/// and the runtime's other manual spans (GC work buffers, 1.19's GC program bitmaps).
constexpr const char *kObjectSpans = "spans";
constexpr const char *kGoroutineStacks = "goroutine-stacks";
constexpr const char *kRuntimeSpans = "runtime-spans";
constexpr const char *kFreePages = "free-pages";
/// mspan records read from mheap_.allspans at most (a terabyte heap of 8 KiB spans has 2^27).
constexpr uint64_t kMaxSpanRecords = uint64_t(1) << 27;

/// What a span's sweep generation says about its bits (mheap.go, the mspan comment): swept (or
/// swept and cached), not yet swept (its marks are the last cycle's verdict), or being swept now.
enum class Sweep { Swept, Unswept, Sweeping };

Sweep sweepState(uint32_t span, uint32_t heap) {
  if (span == heap - 2 || span == heap + 1)
    return Sweep::Unswept;
  if (span == heap - 1)
    return Sweep::Sweeping;
  return Sweep::Swept;
}

/// Bit i of a gcBits bitmap (bytes, low bit first), or false past its end.
inline bool bit(const uint8_t *bits, uint64_t i) {
  return (bits[i / 8] >> (i % 8)) & 1;
}

/// Counts one kind of damage and warns about the first few.
class WarningBudget {
public:
  WarningBudget(Diagnostics &diags, std::string what) : diags_(diags), what_(std::move(what)) {}
  void warn(const std::string &where, const std::string &message) {
    if (++count_ <= kWarningsPerKind)
      diags_.warn(where, message);
  }
  void finish() {
    if (count_ > kWarningsPerKind)
      diags_.warn("go",
                  std::to_string(count_ - kWarningsPerKind) + " more " + what_ + " not shown");
  }

private:
  Diagnostics &diags_;
  std::string what_;
  uint64_t count_ = 0;
};

/// One walk over the arenas of one heap.
class HeapWalk {
public:
  HeapWalk(const AddressSpace &memory, const HeapRoots &roots, AllocationSink sink,
           HeapWalkResult &result, Diagnostics &diags)
      : memory_(memory), roots_(roots), layout_(*roots.layout), sink_(sink), result_(result),
        bad_spans_(diags, "damaged spans"), uncaptured_(diags, "spans not in the dump"),
        page_budget_(memory.snapshot().capturedBytes() / 8) {}

  /// Walks every arena allArenas names, in address order.
  void run(Diagnostics &diags) {
    std::vector<uint64_t> arenas = arenaIndices(diags);
    for (uint64_t index : arenas)
      if (!walkArena(index, diags))
        break;
    flushArea();
    bad_spans_.finish();
    uncaptured_.finish();
    spanRecords();
    std::vector<HeapArea> &records = result_.bookkeeping;
    std::sort(records.begin(), records.end(),
              [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
    records.erase(
        std::unique(records.begin(), records.end(),
                    [](const HeapArea &a, const HeapArea &b) { return a.start == b.start; }),
        records.end());
  }

  uint64_t arenasWalked() const { return arenas_walked_; }
  uint64_t spansInUse() const { return spans_in_use_; }
  uint64_t stackSpans() const { return stack_spans_; }
  uint64_t runtimeSpans() const { return runtime_spans_; }
  uint64_t unsweptSpans() const { return unswept_spans_; }
  /// The in-use spans of heap objects walked, by start (for the object finder).
  std::vector<ObjectSpan> takeObjectSpans() {
    std::sort(object_spans_.begin(), object_spans_.end(),
              [](const ObjectSpan &a, const ObjectSpan &b) { return a.start < b.start; });
    return std::move(object_spans_);
  }

private:
  /// mheap_.allArenas, sorted and without repeats; indices outside the table are warned about.
  std::vector<uint64_t> arenaIndices(Diagnostics &diags) const {
    std::vector<uint64_t> out;
    const uint8_t *head = memory_.tryView(roots_.all_arenas, 24);
    if (!head)
      return out;
    uint64_t ptr = read64le(head), len = std::min(read64le(head + 8), kArenaL2Entries);
    const uint8_t *list = memory_.tryView(ptr, len * 8);
    if (!list) {
      diags.warn("go", "mheap_.allArenas at " + hexAddress(ptr) + " is not in the dump");
      return out;
    }
    out.reserve(len);
    for (uint64_t i = 0; i < len; ++i) {
      uint64_t index = read64le(list + 8 * i);
      if (index < kArenaL2Entries)
        out.push_back(index);
      else
        diags.warn("go", "mheap_.allArenas[" + std::to_string(i) + "] = " + std::to_string(index) +
                             " is no arena index");
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  /// Walks one arena's span table; false when the walk must stop (the page budget is spent).
  bool walkArena(uint64_t index, Diagnostics &diags) {
    const uint64_t base = arenaBase(index);
    uint64_t arena = 0;
    if (!memory_.readU64(roots_.arenas_l2 + 8 * index, arena) || arena == 0) {
      diags.warn("go arena " + hexAddress(base), "no heapArena in mheap_.arenas");
      return true;
    }
    const uint8_t *spans = memory_.tryView(arena + roots_.arena_spans, kPagesPerArena * 8);
    if (!spans) {
      diags.warn("go arena " + hexAddress(base), "its span table at " +
                                                     hexAddress(arena + roots_.arena_spans) +
                                                     " is not in the dump");
      return true;
    }
    // Each arena's span table is 64 KiB of its own in a real dump, so the page slots read never
    // outnumber the dump's words; a hostile arena list naming one table many times stops here.
    if (page_budget_ < kPagesPerArena) {
      diags.warn("go arena " + hexAddress(base),
                 "more span tables than the dump can hold; the rest of the arenas not walked");
      return false;
    }
    page_budget_ -= kPagesPerArena;
    ++arenas_walked_;
    uint64_t previous = 0;
    bool last_page_free = false;
    for (uint64_t page = 0; page < kPagesPerArena;) {
      uint64_t pointer = read64le(spans + 8 * page);
      // A span's pages all name it; only its first page starts it. Free pages may keep stale
      // pointers to span structs since reused: the start address decides.
      const uint64_t page_address = base + page * kPageSize;
      // A page is free when its slot names no span, a span that does not start it (stale), a
      // span no longer in use, or the span of the free page before it.
      auto freePage = [&] {
        addArea(kFreePages, page_address, kPageSize, base);
        last_page_free = true;
        ++page;
      };
      if (pointer == 0 || (pointer == previous && last_page_free)) {
        freePage();
        continue;
      }
      if (pointer == previous) {
        ++page;
        continue;
      }
      previous = pointer;
      last_page_free = false;
      Span s;
      if (!readSpan(memory_, layout_.span, pointer, s)) {
        uncaptured_.warn("go span " + hexAddress(pointer),
                         "the mspan of page " + hexAddress(page_address) + " is not in the dump");
        ++page;
        continue;
      }
      if (s.start != page_address || (s.state != kSpanInUse && s.state != kSpanManual)) {
        freePage();
        continue;
      }
      // A damaged span is skipped page by page: its page count is not believed either.
      std::string problem = s.state == kSpanInUse ? inUseSpanProblem(s, layout_.inline_mark_bits)
                            : s.npages == 0 || s.npages > kMaxSpanPages
                                ? "has " + std::to_string(s.npages) + " pages"
                                : "";
      if (!problem.empty()) {
        bad_spans_.warn("go span " + hexAddress(pointer) + " at " + hexAddress(s.start),
                        problem + "; skipped");
        ++page;
        continue;
      }
      if (s.start < covered_end_) { // a span of an earlier arena claims this page too
        bad_spans_.warn("go span " + hexAddress(pointer) + " at " + hexAddress(s.start),
                        "overlaps the span before it, which ends at " + hexAddress(covered_end_) +
                            "; skipped");
        ++page;
        continue;
      }
      covered_end_ = s.bytes() > ~s.start ? ~uint64_t(0) : s.start + s.bytes();
      if (s.state == kSpanInUse)
        walkSpan(s, base);
      else
        manualSpan(s, base);
      page += std::min(s.npages, kPagesPerArena - page);
    }
    return true;
  }

  /// A manual span: goroutine stacks when the stack allocator gave it an element size. Any other
  /// manual span holds the runtime's own records (the collector's work buffers, with stale
  /// addresses of the objects it marked): bookkeeping.
  void manualSpan(const Span &s, uint64_t arena_base) {
    bool stacks = s.elemsize != 0;
    ++(stacks ? stack_spans_ : runtime_spans_);
    addArea(stacks ? kGoroutineStacks : kRuntimeSpans, s.start, s.bytes(), arena_base);
    if (!stacks)
      result_.bookkeeping.push_back({kRuntimeSpans, s.start, s.bytes(), arena_base});
  }

  /// The record of every mspan the heap ever made (mheap_.allspans, dead ones too), up to its
  /// limit: startAddr and limit hold the addresses of the span's first object and of its end (the
  /// next span's first object), stale in a dead span. Bookkeeping. The limit follows elemsize in
  /// every version's layout.
  void spanRecords() {
    const uint8_t *head = memory_.tryView(roots_.allspans, 16);
    if (!head)
      return;
    const uint64_t list = read64le(head), count = read64le(head + 8);
    const uint8_t *spans = count <= kMaxSpanRecords ? memory_.tryView(list, count * 8) : nullptr;
    if (!spans)
      return;
    for (uint64_t i = 0; i < count; ++i)
      if (const uint64_t span = read64le(spans + 8 * i))
        result_.bookkeeping.push_back({"mspan", span, layout_.span.elemsize + 16, 0});
  }

  /// Reports every object of an in-use span (one that keeps its size class's rules).
  void walkSpan(const Span &s, uint64_t arena_base) {
    ++spans_in_use_;
    addArea(kObjectSpans, s.start, s.bytes(), arena_base);

    const uint64_t bitmap_bytes = (s.nelems + 7) / 8;
    const uint8_t *alloc = memory_.tryView(s.alloc_bits, bitmap_bytes);
    const Sweep sweep = sweepState(s.sweepgen, roots_.sweepgen);
    const uint8_t *marks = nullptr;
    if (sweep == Sweep::Unswept) {
      ++unswept_spans_;
      bool inline_marks = layout_.inline_mark_bits && s.elemsize >= kInlineMarksMinSize &&
                          s.elemsize <= kInlineMarksMaxSize;
      marks = inline_marks
                  ? memory_.tryView(s.start + kPageSize - kInlineMarksFromPageEnd, bitmap_bytes)
                  : memory_.tryView(s.gcmark_bits, bitmap_bytes);
    }
    if (!alloc || (sweep == Sweep::Unswept && !marks))
      uncaptured_.warn("go span " + hexAddress(s.address) + " at " + hexAddress(s.start),
                       "its allocation or mark bits are not in the dump; objects past the free "
                       "index are of unknown state");

    Allocation a;
    a.arena = arena_base;
    a.size = a.chunk_size = s.elemsize;
    a.size_class = static_cast<int32_t>(s.sizeClass());
    a.noscan = s.noscan();
    a.data_offset =
        layout_.malloc_headers && !s.noscan() && s.sizeClass() != 0 && s.elemsize > 512 ? 8 : 0;
    if (s.elemsize)
      object_spans_.push_back({s.start, s.elemsize, s.nelems, a.data_offset, s.noscan()});
    for (uint64_t i = 0; i < s.nelems; ++i) {
      a.address = a.chunk_address = s.start + i * s.elemsize;
      const bool allocated = i < s.freeindex || (alloc && bit(alloc, i));
      if (!allocated && !alloc)
        a.state = AllocState::Unknown;
      else if (!allocated)
        a.state = AllocState::Free;
      else if (sweep == Sweep::Swept)
        a.state = AllocState::Used;
      else if (sweep == Sweep::Sweeping || !marks)
        a.state = AllocState::Unknown;
      else // not yet swept: what the last collection did not mark is garbage
        a.state = bit(marks, i) ? AllocState::Used : AllocState::Free;
      result_.stats.add(a);
      sink_(0, a); // one thread: lane 0
    }
  }

  /// Extends the current area when `start` continues it with the same kind, else starts one.
  void addArea(const char *kind, uint64_t start, uint64_t size, uint64_t arena_base) {
    if (area_.size && area_.kind == kind && area_.arena == arena_base &&
        area_.start + area_.size == start) {
      area_.size += size;
      return;
    }
    flushArea();
    area_ = HeapArea{kind, start, size, arena_base};
  }
  void flushArea() {
    if (area_.size)
      result_.areas.push_back(area_);
    area_ = HeapArea{};
  }

  const AddressSpace &memory_;
  const HeapRoots &roots_;
  const Layout &layout_;
  AllocationSink sink_;
  HeapWalkResult &result_;
  WarningBudget bad_spans_, uncaptured_;
  HeapArea area_;
  uint64_t page_budget_;     // span table slots the walk may still read
  uint64_t covered_end_ = 0; // where the last span walked ends: spans are walked in address order
  uint64_t arenas_walked_ = 0, spans_in_use_ = 0, stack_spans_ = 0, runtime_spans_ = 0,
           unswept_spans_ = 0;
  std::vector<ObjectSpan> object_spans_;
};

/// Appends the frames of one goroutine's live stack [sp, hi) to `frames`, from the pc, stack
/// pointer and frame pointer it saved: on amd64 each Go function keeps its caller's frame pointer
/// at its own (the return address above it), so its frame is [sp, bp + 16), its caller's pc is at
/// bp + 8 and its caller's frame pointer at bp. Each frame is named by the executable's function
/// symbol at its pc (the return address less one, which lies in the call). Stops at a frame
/// pointer outside the stack or not above the frame's start; the last frame runs to `hi`.
void addFrames(const AddressSpace &memory, const ModuleFile &exe, uint64_t pc, uint64_t sp,
               uint64_t bp, uint64_t hi, uint64_t goroutine, std::vector<HeapArea> &frames) {
  for (unsigned n = 0; n < kMostFrames && pc && sp < hi; ++n) {
    const bool chained = bp >= sp && bp < hi - 16;
    const uint64_t end = chained ? bp + 16 : hi;
    if (const std::optional<ModuleSymbol> function = exe.symbolAt(pc - 1, /*functions=*/true);
        function && function->function)
      frames.push_back({function->name.str(), sp, end - sp, goroutine});
    if (!chained)
      return;
    pc = memory.readU64(bp + 8).value_or(0);
    const uint64_t caller_bp = memory.readU64(bp).value_or(0);
    sp = end;
    bp = caller_bp;
  }
}

/// The live part of each goroutine's stack, from runtime.allgs (a symbol of the executable, which
/// `roots` found mheap_ by): [the stack pointer it saved, or its thread's when it runs, its
/// stack's top), its goroutine's id in `arena`. Sets result.live_stacks and
/// every_object_listed when it reads them; says why not in the go_goroutines fact. Adds each P's
/// page cache (runtime.allp) to the bookkeeping.
void readGoroutines(const AddressSpace &memory, const HeapRoots &roots, HeapWalkResult &result,
                    Diagnostics &diags) {
  const GoroutineLayout &g = kGoroutine119;
  auto why_not = [&](const std::string &why) {
    result.facts.emplace_back("go_goroutines", "not read (" + why + ")");
  };
  if (roots.version.minor < g.first_minor || roots.version.minor > g.last_minor)
    return why_not("the g layout of Go 1." + std::to_string(g.first_minor) + " only");
  if (!roots.mheap)
    return why_not("no symbols");
  std::string source, why;
  const std::unique_ptr<ModuleFile> exe = openExecutable(memory, source, why, &diags);
  if (!exe)
    return why_not(why);
  const std::optional<uint64_t> allgs = exe->symbolAddress("runtime.allgs"),
                                allp = exe->symbolAddress("runtime.allp"),
                                allm = exe->symbolAddress("runtime.allm");
  if (!allgs)
    return why_not("executable " + exe->path() + " has no symbol runtime.allgs (stripped)");
  const uint8_t *head = memory.tryView(*allgs, 16);
  if (!head)
    return why_not("runtime.allgs not in the dump");
  const uint64_t list = read64le(head), count = read64le(head + 8);
  const uint8_t *gs = count <= kMostGoroutines ? memory.tryView(list, count * 8) : nullptr;
  if (!gs)
    return why_not("its list of " + std::to_string(count) + " goroutines not in the dump");
  const std::vector<Thread> &threads = memory.snapshot().threads;
  uint64_t unreadable = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t address = read64le(gs + 8 * i);
    const uint8_t *p = memory.tryView(address, g.size);
    if (!p) {
      ++unreadable;
      continue;
    }
    // Its stack's bounds: stack.hi is the address just past the stack, often the next span's
    // first object. Bookkeeping.
    result.bookkeeping.push_back({"g-stack", address + g.stack_lo, 16, 0});
    const uint32_t status = read32le(p + g.status) & ~uint32_t(kGoroutineScanBit);
    const uint64_t lo = read64le(p + g.stack_lo), hi = read64le(p + g.stack_hi);
    if (status == kGoroutineIdle || status == kGoroutineDead || hi <= lo ||
        hi - lo > kLargestGoroutineStack)
      continue;
    uint64_t sp = read64le(p + g.sched_sp);
    if (status == kGoroutineSyscall && read64le(p + g.syscall_sp))
      sp = read64le(p + g.syscall_sp);
    if (status == kGoroutineRunning) {
      sp = lo; // all of it, unless a thread runs on it
      for (const Thread &t : threads)
        if (t.stack_pointer >= lo && t.stack_pointer < hi)
          sp = t.stack_pointer;
    }
    if (sp < lo || sp > hi)
      sp = lo;
    if (sp >= hi)
      continue;
    result.live_stacks.push_back({"goroutine", sp, hi - sp, read64le(p + g.goid)});
    // A parked goroutine's frames, from the pc and frame pointer it saved with its stack pointer.
    if (status != kGoroutineRunning && status != kGoroutineSyscall)
      addFrames(memory, *exe, read64le(p + g.sched_pc), sp, read64le(p + g.sched_bp), hi,
                read64le(p + g.goid), result.stack_frames);
  }
  std::sort(result.live_stacks.begin(), result.live_stacks.end(),
            [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
  std::sort(result.stack_frames.begin(), result.stack_frames.end(),
            [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
  result.every_object_listed = unreadable == 0;
  // The threads' own stacks run the scheduler (g0): a Go object is held from a goroutine's.
  if (result.every_object_listed)
    result.stacks = result.live_stacks;
  // Each P's page cache holds the address of free pages (or of the object allocated from them):
  // the allocator's record, not a reference.
  if (allp) {
    const uint8_t *ps_head = memory.tryView(*allp, 16);
    const uint64_t ps = ps_head ? read64le(ps_head) : 0,
                   ps_count = ps_head ? read64le(ps_head + 8) : 0;
    if (const uint8_t *list =
            ps_count <= kMostGoroutines ? memory.tryView(ps, ps_count * 8) : nullptr)
      for (uint64_t i = 0; i < ps_count; ++i)
        if (const uint64_t p = read64le(list + 8 * i))
          result.bookkeeping.push_back({"page-cache", p + g.p_page_cache, 8, 0});
  }
  // The Ms' own goroutines (g0, gsignal) are in no allgs: their stacks' bounds are bookkeeping.
  if (allm) {
    llvm::DenseSet<uint64_t> seen;
    for (uint64_t m = memory.readU64(*allm).value_or(0); m && seen.size() < kMostMs;
         m = memory.readU64(m + g.m_alllink).value_or(0)) {
      if (!seen.insert(m).second)
        break; // a loop
      for (unsigned field : {g.m_g0, g.m_gsignal})
        if (const uint64_t own = memory.readU64(m + field).value_or(0))
          result.bookkeeping.push_back({"g-stack", own + g.stack_lo, 16, 0});
    }
  }
  std::sort(result.bookkeeping.begin(), result.bookkeeping.end(),
            [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
  result.facts.emplace_back(
      "go_goroutines",
      std::to_string(count) + " (" + std::to_string(result.live_stacks.size()) +
          " with a live stack" +
          (unreadable ? ", " + std::to_string(unreadable) + " not in the dump" : std::string()) +
          ")");
}

/// The requests an object may have served: a large object (size class 0: over 32 KiB, the
/// runtime's _MaxSmallSize) takes whole pages of its own, so it holds any request up to a page
/// less; a small object's size class is all that is known.
RequestRange requestsOf(const Allocation &object) {
  if (object.size_class != 0)
    return {object.size, object.size};
  return {object.size > kPageSize - 1 ? object.size - (kPageSize - 1) : 0, object.size};
}

class GoWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "go"; }

  /// linux/amd64 processes (Go's build info names no module of its own); large objects take
  /// whole 8 KiB pages.
  const WalkerTraits &traits() const override {
    static const WalkerTraits traits{
        .platforms = Platforms::littleEndian64({Os::Linux}, {"x86_64"}),
        .modules = {},
        .requests = requestsOf,
        .thresholds = {},
        // Every object, but goroutine stacks (in its areas) are
        // roots the holders pass does not read.
        .listing = BlockListing::Partial,
        // and arrays ("[4][]uint8": a slice's backing array)
        .framework_namespaces = {"runtime.", "internal/", "sync.", "["}};
    return traits;
  }

  /// True when the executable's data holds a Go build info block (every Go 1.18+ program).
  bool detect(const AddressSpace &memory) const override { return hasGoBuildInfo(memory); }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions & /*one thread*/) const override {
    auto roots = findHeap(memory, diags);
    if (!roots)
      return roots.takeError();

    HeapWalkResult result;
    result.size_classes = true;
    HeapWalk heap(memory, *roots, sink, result, diags);
    heap.run(diags);
    readGoroutines(memory, *roots, result, diags);
    // With the executable at hand (its symbols found mheap_), its DWARF may type the objects.
    if (roots->mheap)
      result.objects = makeGoObjectFinder(memory, heap.takeObjectSpans());

    result.facts.emplace_back("go_version",
                              roots->version.text.empty() ? "unknown" : roots->version.text);
    result.facts.emplace_back("go_layout", roots->layout->name);
    result.facts.emplace_back(
        "go_mheap", (roots->mheap ? hexAddress(roots->mheap)
                                  : std::string("allspans at ") + hexAddress(roots->allspans)) +
                        " (" + roots->found_by + ")");
    result.facts.emplace_back("go_sweepgen", std::to_string(roots->sweepgen));
    result.facts.emplace_back("go_spans",
                              std::to_string(heap.arenasWalked()) + " arenas, " +
                                  std::to_string(heap.spansInUse()) + " spans in use (" +
                                  std::to_string(heap.unsweptSpans()) + " not yet swept), " +
                                  std::to_string(heap.stackSpans()) + " of goroutine stacks, " +
                                  std::to_string(heap.runtimeSpans()) + " other manual");
    return result;
  }
};

} // namespace

std::unique_ptr<HeapWalker> makeGoWalker() {
  return std::make_unique<GoWalker>();
}

} // namespace dumpsift
