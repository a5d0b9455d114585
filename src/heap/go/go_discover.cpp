// Finding the Go heap: the build info's version, mheap_ by symbol or by the shape of allspans,
// and the offsets of the arena table, checked against the spans themselves.
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "go_heap.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <vector>

namespace dumpsift::golang {

namespace {

/// "\xff Go buildinf:" starts `.go.buildinfo`, the first section of a Go executable's writable
/// segment (runtime/debug, cmd/link); 16-byte aligned.
constexpr llvm::StringLiteral kBuildInfoMagic("\xff Go buildinf:");
/// Only the first bytes of each writable mapping of a module are searched for it.
constexpr uint64_t kBuildInfoSearchBytes = 64 * 1024;
/// A span list or arena list longer than this is not believed (the arena table has 1<<22 slots;
/// allspans would need a terabyte heap to get near it).
constexpr uint64_t kMaxListLength = uint64_t(1) << 24;
/// Entries of allspans checked per candidate, and how many of its in-use spans are tried against
/// the arena table (one whose arena is damaged does not sink the heap).
constexpr uint64_t kSpansChecked = 64, kSpansTried = 4;
/// Words of the executable's data that look like a slice header and are tried as allspans: a real
/// program has a handful before mheap_; a hostile dump full of them stops here.
constexpr unsigned kMaxCandidates = 4096;

/// The captured bytes of the writable mappings of `exe` and of the anonymous mapping right after
/// its last one (.bss and .noptrbss), where the runtime's globals live. Without modules, every
/// writable file-backed mapping and the anonymous one after it.
std::vector<MemoryRange> executableData(const AddressSpace &memory, const Module *exe) {
  const Snapshot &snap = memory.snapshot();
  std::vector<MemoryRange> out;
  for (size_t i = 0; i < snap.regions.size(); ++i) {
    const Region &r = snap.regions[i];
    bool ours =
        exe ? (!r.backing_file.empty() && r.backing_file == exe->path) : !r.backing_file.empty();
    if (!ours || !r.perms.write)
      continue;
    auto take = [&](const Region &region) {
      for (const MemoryRange &m : snap.memory)
        if (m.end() > region.start && m.start < region.end()) {
          uint64_t lo = std::max(m.start, region.start), hi = std::min(m.end(), region.end());
          out.push_back({lo, m.bytes.slice(lo - m.start, hi - lo)});
        }
    };
    take(r);
    if (i + 1 < snap.regions.size() && snap.regions[i + 1].start == r.end() &&
        snap.regions[i + 1].backing_file.empty() && snap.regions[i + 1].perms.write)
      take(snap.regions[i + 1]);
  }
  return out;
}

/// The first build info block in the executable's data, as a view; empty when none.
llvm::ArrayRef<uint8_t> buildInfo(const AddressSpace &memory) {
  const Snapshot &snap = memory.snapshot();
  for (const MemoryRange &m : executableData(memory, snap.executableModule())) {
    uint64_t limit = std::min<uint64_t>(m.bytes.size(), kBuildInfoSearchBytes);
    for (uint64_t at = (16 - m.start % 16) % 16; at + 48 <= limit; at += 16)
      if (std::memcmp(m.bytes.data() + at, kBuildInfoMagic.data(), kBuildInfoMagic.size()) == 0)
        return m.bytes.slice(at, std::min<uint64_t>(m.bytes.size() - at, 256));
  }
  return {};
}

/// A Go slice header {ptr, len, cap} at `addr`, when it looks like one of `min_cap` or more.
struct Slice {
  uint64_t ptr = 0, len = 0, cap = 0;
};
std::optional<Slice> readSlice(const AddressSpace &memory, uint64_t addr, uint64_t min_cap) {
  const uint8_t *p = memory.tryView(addr, 24);
  if (!p)
    return std::nullopt;
  Slice s{read64le(p), read64le(p + 8), read64le(p + 16)};
  if (s.ptr == 0 || s.ptr % 8 || s.len == 0 || s.len > s.cap || s.cap < min_cap ||
      s.cap > kMaxListLength)
    return std::nullopt;
  return s;
}

/// What the first kSpansChecked entries of an allspans candidate hold under one layout: how many
/// are plausible in-use spans (the first kSpansTried of them kept), and how many are not spans of
/// this layout at all (unreadable, an impossible state, an in-use span breaking its size class).
struct SpanSample {
  unsigned in_use = 0, bad = 0;
  std::vector<Span> first;

  /// A heap, perhaps with some damage: more good spans than bad ones. Under a wrong layout, or
  /// for words that only look like a slice, nearly every entry is bad.
  bool plausible() const { return in_use > 0 && bad < in_use; }
};

SpanSample sampleSpans(const AddressSpace &memory, const Slice &list, const Layout &layout) {
  SpanSample out;
  for (uint64_t i = 0; i < std::min(list.len, kSpansChecked); ++i) {
    uint64_t p = 0;
    Span s;
    if (!memory.readU64(list.ptr + 8 * i, p) || p % 8 || !readSpan(memory, layout.span, p, s) ||
        s.state > kSpanManual) {
      ++out.bad;
      continue;
    }
    if (s.state != kSpanInUse)
      continue;
    if (!inUseSpanProblem(s, layout.inline_mark_bits).empty()) {
      ++out.bad;
      continue;
    }
    ++out.in_use;
    if (out.first.size() < kSpansTried)
      out.first.push_back(s);
  }
  return out;
}

/// Completes `roots` (allspans and layout set) with the arena table: the offsets under which
/// `span`'s page maps back to it, and an allArenas list that names its arena. False when none do.
bool findArenaTable(const AddressSpace &memory, const Span &span, HeapRoots &roots) {
  const uint64_t index = arenaIndex(span.start);
  const uint64_t page = (span.start % kArenaBytes) / kPageSize;
  if (index >= kArenaL2Entries)
    return false;
  for (uint64_t arenas_off : kArenasFromAllspans) {
    uint64_t l2 = 0, arena = 0;
    if (!memory.readU64(roots.allspans + arenas_off, l2) || l2 == 0 ||
        !memory.readU64(l2 + 8 * index, arena) || arena == 0)
      continue;
    for (uint64_t spans_off : kArenaSpansOffsets) {
      uint64_t back = 0;
      if (!memory.readU64(arena + spans_off + 8 * page, back) || back != span.address)
        continue;
      for (uint64_t all_off : kAllArenasFromArenas) {
        std::optional<Slice> all = readSlice(memory, roots.allspans + arenas_off + all_off, 1);
        if (!all || all->len > kArenaL2Entries)
          continue;
        bool names_it = false; // arenas are listed in the order they were made: it is early
        for (uint64_t i = 0; i < std::min(all->len, kSpansChecked) && !names_it; ++i) {
          uint64_t e = 0;
          names_it = memory.readU64(all->ptr + 8 * i, e) && e == index;
        }
        if (!names_it)
          continue;
        roots.arenas_l2 = l2;
        roots.all_arenas = roots.allspans + arenas_off + all_off;
        roots.arena_spans = spans_off;
        return true;
      }
    }
  }
  return false;
}

/// Tries `allspans` as the address of mheap_.allspans under each layout, the one the version
/// names first. True (and `roots` filled) when one fits: the listed spans are consistent and the
/// arena table maps their pages back to them.
bool tryAllspans(const AddressSpace &memory, uint64_t allspans, unsigned minor, HeapRoots &roots) {
  std::optional<Slice> list = readSlice(memory, allspans, 1024);
  if (!list)
    return false;
  std::vector<const Layout *> order;
  for (const Layout &l : kLayouts)
    if (minor >= l.first_minor && minor <= l.last_minor)
      order.push_back(&l);
  for (const Layout &l : kLayouts)
    if (std::find(order.begin(), order.end(), &l) == order.end())
      order.push_back(&l);
  for (const Layout *layout : order) {
    SpanSample sample = sampleSpans(memory, *list, *layout);
    if (!sample.plausible())
      continue;
    HeapRoots candidate;
    candidate.layout = layout;
    candidate.allspans = allspans;
    if (std::none_of(sample.first.begin(), sample.first.end(),
                     [&](const Span &s) { return findArenaTable(memory, s, candidate); }))
      continue;
    uint64_t sweepgen_word = 0;
    if (const uint8_t *p = memory.tryView(allspans - kSweepgenBeforeAllspans, 4))
      sweepgen_word = read32le(p);
    candidate.sweepgen = static_cast<uint32_t>(sweepgen_word);
    candidate.version = roots.version;
    candidate.mheap = roots.mheap;
    candidate.found_by = roots.found_by;
    roots = candidate;
    return true;
  }
  return false;
}

/// The error of a search that found no heap.
llvm::Error noHeap(const HeapRoots &roots) {
  return createError("no Go heap found: no mheap_.allspans in the executable's data lists spans "
                     "that the arena table maps back (" +
                     (roots.version.text.empty() ? "Go version unknown" : roots.version.text) +
                     ")");
}

} // namespace

bool hasGoBuildInfo(const AddressSpace &memory) {
  return !buildInfo(memory).empty();
}

GoVersion findGoVersion(const AddressSpace &memory) {
  GoVersion out;
  llvm::ArrayRef<uint8_t> info = buildInfo(memory);
  // [14] pointer size, [15] flags (bit 1: the strings are inline, Go 1.18+), [32] a varint
  // length and the version string.
  if (info.size() < 34 || info[14] != 8 || !(info[15] & 2))
    return out;
  uint64_t length = info[32];
  if (length == 0 || length >= 0x80 || 33 + length > info.size())
    return out;
  llvm::StringRef text(reinterpret_cast<const char *>(info.data() + 33), length);
  unsigned major = 0, minor = 0;
  llvm::StringRef rest = text;
  if (!rest.consume_front("go") || rest.consumeInteger(10, major) || !rest.consume_front(".") ||
      rest.consumeInteger(10, minor) || major != 1)
    return out;
  out.text = text.str();
  out.minor = minor;
  return out;
}

bool readSpan(const AddressSpace &memory, const SpanLayout &l, uint64_t address, Span &out) {
  const uint8_t *p = memory.tryView(address, l.size);
  if (!p)
    return false;
  out.address = address;
  out.start = read64le(p + l.start_addr);
  out.npages = read64le(p + l.npages);
  out.freeindex = l.small_indices ? read16le(p + l.freeindex) : read64le(p + l.freeindex);
  out.nelems = l.small_indices ? read16le(p + l.nelems) : read64le(p + l.nelems);
  out.alloc_bits = read64le(p + l.alloc_bits);
  out.gcmark_bits = read64le(p + l.gcmark_bits);
  out.sweepgen = read32le(p + l.sweepgen);
  out.alloc_count = read16le(p + l.alloc_count);
  out.spanclass = p[l.spanclass];
  out.state = p[l.state];
  out.elemsize = read64le(p + l.elemsize);
  return true;
}

std::string inUseSpanProblem(const Span &s, bool inline_mark_bits) {
  if (s.start % kPageSize || s.npages == 0 || s.npages > kMaxSpanPages ||
      s.start + s.bytes() < s.start)
    return "start " + hexAddress(s.start) + " and " + std::to_string(s.npages) +
           " pages are no span";
  unsigned size_class = s.sizeClass();
  if (size_class >= kNumSizeClasses)
    return "size class " + std::to_string(size_class) + " does not exist";
  if (size_class == 0) {
    if (s.nelems != 1 || s.elemsize != s.bytes())
      return "a large object's span holds " + std::to_string(s.nelems) + " objects of " +
             std::to_string(s.elemsize) + " bytes in " + std::to_string(s.bytes());
  } else {
    uint64_t room = s.bytes();
    if (inline_mark_bits && s.elemsize >= kInlineMarksMinSize && s.elemsize <= kInlineMarksMaxSize)
      room -= kInlineMarksBytes;
    if (s.elemsize != kClassSize[size_class] || s.npages != kClassPages[size_class] ||
        s.nelems != room / s.elemsize)
      return "size class " + std::to_string(size_class) + " with " + std::to_string(s.nelems) +
             " objects of " + std::to_string(s.elemsize) + " bytes in " + std::to_string(s.npages) +
             " pages";
  }
  if (s.freeindex > s.nelems || s.alloc_count > s.nelems)
    return "free index " + std::to_string(s.freeindex) + " or count " +
           std::to_string(s.alloc_count) + " past its " + std::to_string(s.nelems) + " objects";
  return "";
}

llvm::Expected<HeapRoots> findHeap(const AddressSpace &memory, Diagnostics &diags) {
  HeapRoots roots;
  roots.version = findGoVersion(memory);
  const unsigned minor = roots.version.minor;
  if (minor && minor < 19)
    diags.warn("go", roots.version.text + " is older than the Go 1.19 this walker knows");

  std::string source, why;
  if (std::optional<uint64_t> mheap =
          executableSymbol(memory, "runtime.mheap_", source, why, diags)) {
    roots.mheap = *mheap;
    roots.found_by = "symbol runtime.mheap_ in " + source;
    for (uint64_t off = kAllspansMinOffset; off <= kAllspansMaxOffset; off += 8)
      if (tryAllspans(memory, *mheap + off, minor, roots))
        return roots;
    diags.warn("go", "runtime.mheap_ at " + hexAddress(*mheap) + " (" + source +
                         ") holds no heap this walker can read; searching the data instead");
    roots.mheap = 0;
  }

  // No symbols: mheap_.allspans by its shape, in the executable's globals.
  roots.found_by = "the shape of mheap_.allspans in the executable's data";
  if (!why.empty())
    roots.found_by += " (" + why + ")";
  const Snapshot &snap = memory.snapshot();
  unsigned candidates = 0;
  for (const MemoryRange &m : executableData(memory, snap.executableModule()))
    for (uint64_t at = (8 - m.start % 8) % 8; at + 24 <= m.bytes.size(); at += 8) {
      const uint8_t *p = m.bytes.data() + at;
      uint64_t ptr = read64le(p), len = read64le(p + 8), cap = read64le(p + 16);
      if (ptr == 0 || ptr % 8 || len == 0 || len > cap || cap < 1024 || cap > kMaxListLength)
        continue; // the cheap filter: most words fail here
      if (++candidates > kMaxCandidates) {
        diags.warn("go", "more than " + std::to_string(kMaxCandidates) +
                             " words of the executable's data look like mheap_.allspans; the "
                             "rest not tried");
        return noHeap(roots);
      }
      if (tryAllspans(memory, m.start + at, minor, roots))
        return roots;
    }
  return noHeap(roots);
}

} // namespace dumpsift::golang
