// What the go walker knows of the Go runtime's heap (linux/amd64, Go 1.19 and later), as data:
// constants, the size classes, and the field offsets that moved between versions. Each fact's
// source is in docs/heap-go.md. Private to src/heap/go.
#pragma once

#include <array>
#include <cstdint>

namespace dumpsift::golang {

constexpr uint64_t kPageSize = 8192;                         // _PageShift = 13
constexpr uint64_t kPagesPerArena = 8192;                    // heapArenaBytes / pageSize
constexpr uint64_t kArenaBytes = kPageSize * kPagesPerArena; // 64 MiB (logHeapArenaBytes = 26)
constexpr uint64_t kArenaBaseOffset = 0xffff800000000000ull; // arenaBaseOffset on amd64
constexpr uint64_t kArenaL2Entries = uint64_t(1) << 22;      // arenaL1Bits 0, arenaL2Bits 22

/// The arena index of address `p` and the base address of arena `index` (mheap.go arenaIndex).
inline uint64_t arenaIndex(uint64_t p) {
  return (p - kArenaBaseOffset) / kArenaBytes;
}
inline uint64_t arenaBase(uint64_t index) {
  return index * kArenaBytes + kArenaBaseOffset;
}

/// A span of more pages than this (one 64 GiB object) is taken for damage.
constexpr uint64_t kMaxSpanPages = kPagesPerArena * 1024;

/// mspan.state (mheap.go mSpanState).
enum SpanState : uint8_t { kSpanDead = 0, kSpanInUse = 1, kSpanManual = 2 };

/// class_to_size and class_to_allocnpages (sizeclasses.go; unchanged from 1.19 to 1.27). Class 0
/// is a large object: one object per span, of the span's size.
constexpr unsigned kNumSizeClasses = 68;
constexpr std::array<uint16_t, kNumSizeClasses> kClassSize = {
    0,     8,     16,    24,    32,    48,    64,    80,    96,    112,   128,   144,  160,   176,
    192,   208,   224,   240,   256,   288,   320,   352,   384,   416,   448,   480,  512,   576,
    640,   704,   768,   896,   1024,  1152,  1280,  1408,  1536,  1792,  2048,  2304, 2688,  3072,
    3200,  3456,  4096,  4864,  5376,  6144,  6528,  6784,  6912,  8192,  9472,  9728, 10240, 10880,
    12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768};
constexpr std::array<uint8_t, kNumSizeClasses> kClassPages = {
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 2, 1, 2, 1, 3, 2,  3, 1, 3,
    2, 3, 4, 5, 6, 1, 7, 6, 5, 4, 3, 5, 7, 2, 9, 7, 5, 8, 3, 10, 7, 4};

/// Offsets of the mspan fields the walker reads.
struct SpanLayout {
  unsigned start_addr, npages, freeindex, nelems;
  bool small_indices; // freeindex and nelems are u16 (1.22+), else uintptr
  unsigned alloc_bits, gcmark_bits, sweepgen, alloc_count, spanclass, state, elemsize;
  unsigned size; // bytes read per span (covers every field above)
};

/// One row per layout of the runtime's mspan, with the version-dependent rules of its objects.
struct Layout {
  const char *name;     // "1.19-1.20": the versions it is for
  unsigned first_minor; // Go 1.<first_minor> ...
  unsigned last_minor;  // ... to 1.<last_minor> (99: and later)
  SpanLayout span;
  /// Small objects over 512 bytes in spans that hold pointers start with an 8-byte type header
  /// (1.22+, the allocheaders design): their data starts 8 bytes in.
  bool malloc_headers;
  /// Objects of 16 to 512 bytes keep their marks in the last 128 bytes of the span's first page
  /// until the span is swept (1.26+, the Green Tea collector).
  bool inline_mark_bits;
};

constexpr SpanLayout kSpan119 = {24, 32, 48, 56, false, 72, 80, 88, 96, 98, 99, 104, 112};
constexpr SpanLayout kSpan121 = {24, 32, 48, 56, false, 72, 80, 96, 104, 106, 107, 112, 120};
constexpr SpanLayout kSpan122 = {24, 32, 48, 50, true, 64, 72, 88, 96, 98, 99, 104, 112};

constexpr std::array<Layout, 4> kLayouts = {{
    {"1.19-1.20", 19, 20, kSpan119, false, false},
    {"1.21", 21, 21, kSpan121, false, false},
    {"1.22-1.25", 22, 25, kSpan122, true, false},
    {"1.26+", 26, 99, kSpan122, true, true},
}};

/// Where a goroutine's g keeps its stack, its saved stack pointers, its status and its id
/// (runtime2.go `type g`: stack.lo, stack.hi, sched.sp, syscallsp, atomicstatus, goid), for the
/// Go versions it was checked on (gdb on a Go 1.19.8 binary, docs/heap-go.md).
struct GoroutineLayout {
  unsigned first_minor, last_minor;
  unsigned stack_lo, stack_hi, sched_sp, syscall_sp, status, goid;
  /// The pc and frame pointer it saved with sched_sp (gobuf.pc, gobuf.bp): where a parked
  /// goroutine's chain of frames starts.
  unsigned sched_pc, sched_bp;
  unsigned size; // bytes read per g (covers every field above)
  /// A P's page cache (`p.pcache.base`, runtime.allp's elements): the address of pages the P
  /// may allocate from, which the last large object freed or still holds. Bookkeeping.
  unsigned p_page_cache;
  /// An M's g0 and gsignal (goroutines of the runtime's own, not in allgs) and the next M
  /// (`m.alllink`, from runtime.allm).
  unsigned m_g0, m_gsignal, m_alllink;
};
constexpr GoroutineLayout kGoroutine119 = {19,   19,   0x00, 0x08, 0x38, 0x70, 0x90, 0x98,
                                           0x40, 0x68, 0xa0, 0x48, 0x00, 0x50, 0x150};
/// Frames followed up one goroutine's chain of frame pointers at most.
constexpr unsigned kMostFrames = 1u << 12;
/// Ms followed along runtime.allm at most.
constexpr unsigned kMostMs = 1u << 16;

/// A goroutine's status (runtime2.go): _Grunning's saved stack pointer is stale (its thread's
/// is current), _Gsyscall's is syscallsp, _Gidle and _Gdead hold no stack; _Gscan is a bit.
enum GoroutineStatus : uint32_t {
  kGoroutineIdle = 0,
  kGoroutineRunning = 2,
  kGoroutineSyscall = 3,
  kGoroutineDead = 6,
  kGoroutineScanBit = 0x1000,
};
/// Goroutines read from allgs at most, and the largest stack taken for one (a goroutine's stack
/// grows to 1 GB at most on 64-bit platforms: runtime.maxstacksize).
constexpr uint64_t kMostGoroutines = uint64_t(1) << 22;
constexpr uint64_t kLargestGoroutineStack = uint64_t(1) << 30;

/// mheap_.sweepgen lies just before mheap_.allspans in every version.
constexpr unsigned kSweepgenBeforeAllspans = 8;
/// Where allspans may lie in mheap_ (after the lock and the pageAlloc, whose size varies).
constexpr uint64_t kAllspansMinOffset = 65800, kAllspansMaxOffset = 65904;
/// mheap_.arenas from mheap_.allspans (1.19-1.21, 1.22+), mheap_.allArenas from mheap_.arenas
/// (1.19-1.20, 1.21+), and heapArena.spans (1.19; 1.20-1.21; 1.22+, whose pointer bitmaps moved
/// into the spans). The walker keeps the combination whose tables point back at the spans.
constexpr uint64_t kArenasFromAllspans[] = {80, 144};
constexpr uint64_t kAllArenasFromArenas[] = {80, 88};
constexpr uint64_t kArenaSpansOffsets[] = {2097152, 1064960, 0};

/// GreenTea's inline mark bits: the last 128 bytes of the span's first page, marks at +64.
constexpr uint64_t kInlineMarksFromPageEnd = 128 - 64;
/// The runtime reserves those 128 bytes in spans of objects of 16 to 512 bytes.
constexpr uint64_t kInlineMarksMinSize = 16, kInlineMarksMaxSize = 512, kInlineMarksBytes = 128;

} // namespace dumpsift::golang
