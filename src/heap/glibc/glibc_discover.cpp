// Finding glibc's arenas, heaps and mmapped chunks in a dump without debug symbols.
//
// Order: (1) heap_info headers at every HEAP_MAX_SIZE-aligned captured address give the non-main
// heaps and their arenas; (2) the `next` ring through those arenas gives main_arena (the member
// that lives in no heap); without thread arenas main_arena is found by scanning libc's writable
// data for a malloc_state whose `next` points to itself; (3) main_arena's top and system_mem give
// the brk heap; (4) every remaining anonymous writable page is checked for an mmapped chunk header.
#include "dumpsift/support/hex.h"
#include "dumpsift/support/intervals.h"
#include "glibc_model.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>

namespace dumpsift::glibc {

namespace {

constexpr uint64_t kAuxvPageSize = 6; // AT_PAGESZ
constexpr uint64_t kAuxvPhdr = 3;     // AT_PHDR
constexpr uint64_t kAuxvEntry = 9;    // AT_ENTRY
constexpr unsigned kMaxArenas = 1u << 14;
constexpr unsigned kMaxHeapsPerArena = 1u << 16;

/// Rounds `v` up to a multiple of the power of two `align` (no overflow check: callers compare).
uint64_t alignUp(uint64_t v, uint64_t align) {
  return (v + align - 1) & ~(align - 1);
}

/// The page size from AT_PAGESZ, else 4096.
uint64_t pageSizeOf(const Snapshot &snapshot) {
  for (const auto &[type, value] : snapshot.auxv)
    if (type == kAuxvPageSize && value >= 4096 && (value & (value - 1)) == 0)
      return value;
  return 4096;
}

/// True when the region may hold malloc memory: writable, or the dump recorded no permissions.
bool writableOrUnknown(const Region &r) {
  return r.perms.write || (!r.perms.read && !r.perms.write && !r.perms.execute);
}

/// A heap_info header read at a HEAP_MAX_SIZE-aligned address.
struct HeapInfoRec {
  uint64_t addr = 0, ar_ptr = 0, prev = 0, size = 0, mprotect_size = 0;
  uint64_t header_size() const { return ar_ptr & (kHeapMax - 1); }
};

/// Reads and checks a heap_info at `addr` (aligned to HEAP_MAX_SIZE): ar_ptr points at an arena
/// right after some heap's header (offset 0x20 or 0x30), prev is another heap or 0 exactly when
/// the arena lives in this heap, sizes are page multiples within HEAP_MAX_SIZE. False otherwise.
bool readHeapInfo(CachedReader &reader, uint64_t addr, uint64_t page, HeapInfoRec &out) {
  const uint8_t *p = reader.view(addr, 0x30);
  if (!p)
    return false;
  HeapInfoRec h;
  h.addr = addr;
  h.ar_ptr = read64le(p);
  h.prev = read64le(p + 8);
  h.size = read64le(p + 16);
  h.mprotect_size = read64le(p + 24);
  const HeapLayout *layout = layoutForHeapInfoSize(h.header_size());
  if (!layout || (h.ar_ptr & 15) != 0)
    return false;
  if ((h.prev & (kHeapMax - 1)) != 0 || h.prev == addr)
    return false;
  bool arena_here = h.ar_ptr == addr + layout->heap_info_size;
  if ((h.prev == 0) != arena_here)
    return false;
  if (h.size == 0 || h.size % page != 0 || h.size > kHeapMax)
    return false;
  if (h.mprotect_size < h.size || h.mprotect_size % page != 0 || h.mprotect_size > kHeapMax)
    return false;
  if (layout->heap_info_size == 0x30) { // pagesize field (2.35+): a power of two
    uint64_t pagesize = read64le(p + 32);
    if (pagesize < 4096 || (pagesize & (pagesize - 1)) != 0)
      return false;
  }
  out = h;
  return true;
}

/// Every plausible heap_info at a HEAP_MAX_SIZE-aligned captured, writable address.
std::vector<HeapInfoRec> scanHeapInfos(CachedReader &reader, const Snapshot &snapshot,
                                       uint64_t page) {
  std::vector<HeapInfoRec> found;
  for (const MemoryRange &m : snapshot.memory) {
    if (m.end() - m.start < 0x30)
      continue;
    for (uint64_t a = alignUp(m.start, kHeapMax); a >= m.start && a <= m.end() - 0x30;
         a += kHeapMax) {
      const Region *r = reader.memory().regionContaining(a);
      HeapInfoRec h;
      if (r && writableOrUnknown(*r) && readHeapInfo(reader, a, page, h))
        found.push_back(h);
      if (a + kHeapMax < a)
        break;
    }
  }
  return found;
}

/// Reads a malloc_state at `addr` and scores it: at least 120 of the 127 bin headers must be
/// empty (pointing at themselves) or hold two aligned pointers, and `top` must be a readable,
/// 16-aligned chunk. `out.readable` says whether it passed.
ArenaRec readArena(CachedReader &reader, uint64_t addr) {
  ArenaRec a;
  a.addr = addr;
  const uint8_t *p = reader.view(addr, kArena.size);
  if (!p || (addr & 7) != 0)
    return a;
  a.flags = read32le(p + kArena.flags);
  a.top = read64le(p + kArena.top);
  a.system_mem = read64le(p + kArena.system_mem);
  unsigned good = 0;
  for (unsigned i = 0; i < kArena.bin_headers; ++i) {
    uint64_t fd = read64le(p + kArena.bins + 16 * i);
    uint64_t bk = read64le(p + kArena.bins + 16 * i + 8);
    uint64_t self = addr + kArena.top + 16 * i;
    if ((fd == self && bk == self) ||
        (fd != self && bk != self && fd != 0 && bk != 0 && (fd & 15) == 0 && (bk & 15) == 0))
      ++good;
  }
  if (good < 120 || a.top == 0 || (a.top & 15) != 0)
    return a;
  if (a.top == addr + kArena.top) { // initial_top: malloc initialized, never grew
    a.readable = true;
    return a;
  }
  uint64_t size_word = 0;
  if (!reader.u64(a.top + 8, size_word))
    return a;
  a.top_size = size_word & ~kSizeBits;
  if (a.top + a.top_size < a.top)
    return a;
  a.readable = true;
  return a;
}

/// Reads the `next` pointer of the arena at `addr`; 0 when not captured.
uint64_t arenaNext(CachedReader &reader, uint64_t addr) {
  uint64_t next = 0;
  if (!reader.u64(addr + kArena.next, next))
    return 0;
  return next;
}

/// Follows the `next` ring from `start` (bounded); returns its members in ring order. Warns when
/// the ring does not come back to `start` (a loop elsewhere, a null or unreadable link).
std::vector<uint64_t> followRing(CachedReader &reader, uint64_t start, Diagnostics &diags) {
  std::vector<uint64_t> members{start};
  std::unordered_set<uint64_t> seen{start};
  uint64_t cur = start;
  for (unsigned i = 0; i < kMaxArenas; ++i) {
    uint64_t next = arenaNext(reader, cur);
    if (next == start)
      return members;
    if (next == 0 || (next & 7) != 0) {
      diags.warn(hexAddress(cur), "arena ring broken: `next` is " + hexAddress(next) +
                                      "; the rest of the ring is not followed");
      return members;
    }
    if (!seen.insert(next).second) {
      diags.warn(hexAddress(cur), "arena ring loops back to " + hexAddress(next) +
                                      " without returning to " + hexAddress(start));
      return members;
    }
    members.push_back(next);
    cur = next;
  }
  diags.warn(hexAddress(start), "arena ring longer than " + std::to_string(kMaxArenas) +
                                    " arenas; not followed further");
  return members;
}

/// Scans writable data for main_arena: a malloc_state whose `next` is itself or a known arena
/// and that passes readArena. Looks in libc's writable regions (and the anonymous .bss region
/// right after them), then in the executable's (static binaries). Returns 0 when none is found.
uint64_t scanForMainArena(CachedReader &reader, const Snapshot &snapshot,
                          const std::set<uint64_t> &thread_arenas, Diagnostics &diags) {
  std::vector<const Region *> libc_regions, exe_regions;
  std::string exe_path;
  for (const auto &[type, value] : snapshot.auxv) {
    if (type != kAuxvEntry && type != kAuxvPhdr)
      continue;
    if (const Region *r = reader.memory().regionContaining(value); r && !r->backing_file.empty())
      exe_path = r->backing_file;
  }
  for (size_t i = 0; i < snapshot.regions.size(); ++i) {
    const Region &r = snapshot.regions[i];
    bool libc = namesModule(kLibcNames, r.backing_file);
    bool exe = !exe_path.empty() && r.backing_file == exe_path;
    if (!libc && !exe)
      continue;
    auto &list = libc ? libc_regions : exe_regions;
    if (r.perms.write)
      list.push_back(&r);
    // The region right after the file's last mapping is its .bss when it is anonymous.
    if (i + 1 < snapshot.regions.size()) {
      const Region &n = snapshot.regions[i + 1];
      if (n.start == r.end() && n.backing_file.empty() && n.perms.write)
        list.push_back(&n);
    }
  }
  std::vector<std::pair<uint64_t, const Region *>> hits;
  for (const auto *group : {&libc_regions, &exe_regions}) {
    for (const Region *r : *group) {
      for (const MemoryRange &m : snapshot.memory) {
        if (m.end() <= r->start || m.start >= r->end() || m.bytes.size() < kArena.size)
          continue;
        const uint8_t *base = m.bytes.data();
        uint64_t limit = m.bytes.size() - kArena.size;
        for (uint64_t off = (8 - (m.start & 7)) & 7; off <= limit; off += 8) {
          uint64_t a = m.start + off;
          uint64_t next = read64le(base + off + kArena.next);
          if (next != a && !thread_arenas.count(next))
            continue;
          ArenaRec rec = readArena(reader, a);
          if (rec.readable)
            hits.emplace_back(a, r);
        }
      }
    }
    if (!hits.empty())
      break;
  }
  std::sort(hits.begin(), hits.end());
  hits.erase(std::unique(hits.begin(), hits.end(),
                         [](const auto &x, const auto &y) { return x.first == y.first; }),
             hits.end());
  if (hits.empty())
    return 0;
  if (hits.size() > 1)
    diags.warn(hexAddress(hits[0].first),
               std::to_string(hits.size()) +
                   " main_arena candidates in libc data; using the first");
  return hits[0].first;
}

/// The first chunk at or after `addr` whose user memory is 16-aligned.
uint64_t firstChunkAt(uint64_t addr) {
  return addr + ((16 - ((addr + 16) & kAlignMask)) & 15);
}

/// True when a chunk header at `chunk` looks like the first chunk of a heap: PREV_INUSE set, no
/// IS_MMAPPED, a size of at least MINSIZE that is a multiple of 16 and fits before `end`.
bool plausibleFirstChunk(CachedReader &reader, uint64_t chunk, uint64_t end) {
  uint64_t word = 0;
  if (chunk >= end || !reader.u64(chunk + 8, word))
    return false;
  uint64_t csize = word & ~kSizeBits;
  return (word & kPrevInuse) && !(word & kIsMmapped) && !(word & 8) && csize >= kMinChunk &&
         csize <= end - chunk;
}

/// True when a quiet header walk of `span` from its first chunk reaches the top chunk, or stops
/// only at a header the dump lacks (what is not captured says nothing against the start): the
/// check that a heap start from system_mem is right when the heap spans several mappings (a page
/// of it protected apart, or not in the core).
bool headerWalkReachesTop(CachedReader &reader, const Span &span) {
  uint64_t stop = 0;
  std::string why;
  WalkEnd end = walkChunks(
      reader, span, [](uint64_t, uint64_t, ChunkHint) {}, stop, why);
  return end == WalkEnd::Top || end == WalkEnd::NotCaptured;
}

/// The brk heap when main_arena is unknown: a Heap-class region, else the first anonymous
/// writable region above the executable, whose first chunk looks right. Empty span if none.
Span fallbackMainHeap(CachedReader &reader, const Snapshot &snapshot) {
  Span span;
  auto try_region = [&](const Region &r) {
    if (!writableOrUnknown(r) || !r.backing_file.empty() || r.captured == 0)
      return false;
    uint64_t first = firstChunkAt(r.start);
    if (!plausibleFirstChunk(reader, first, r.end()))
      return false;
    uint64_t prev_size = 1;
    if (!reader.u64(first, prev_size) || prev_size != 0)
      return false;
    span.kind = SpanKind::MainHeap;
    span.area_start = r.start;
    span.area_end = r.end();
    span.first_chunk = first;
    span.end = r.end();
    span.end_is_top = true;
    return true;
  };
  for (const Region &r : snapshot.regions)
    if (r.cls == RegionClass::Heap && try_region(r))
      return span;
  std::string exe_path;
  for (const auto &[type, value] : snapshot.auxv)
    if (type == kAuxvEntry || type == kAuxvPhdr)
      if (const Region *r = reader.memory().regionContaining(value); r && !r->backing_file.empty())
        exe_path = r->backing_file;
  if (exe_path.empty())
    return span;
  uint64_t exe_end = 0;
  for (const Region &r : snapshot.regions)
    if (r.backing_file == exe_path)
      exe_end = std::max(exe_end, r.end());
  for (const Region &r : snapshot.regions) {
    if (r.start < exe_end || r.cls == RegionClass::Stack)
      continue;
    if (r.start - exe_end > (uint64_t(1) << 32)) // brk randomization stays well below this
      break;
    if (r.backing_file.empty() && try_region(r))
      return span;
  }
  return span;
}

/// The mmapped chunk that memalign placed inside the mapping [map, map+size) whose original
/// header is at `map`: a header at an alignment point with prev_size = its offset in the mapping
/// and size = the rest of the mapping | IS_MMAPPED (_int_memalign). Returns `map` when none.
uint64_t memalignedChunkIn(CachedReader &reader, uint64_t map, uint64_t size) {
  for (uint64_t align = 32; align < size && align != 0; align <<= 1) {
    uint64_t brk = alignUp(map + kChunkHeader, align) - kChunkHeader;
    if (brk - map < kMinChunk)
      brk += align;
    uint64_t lead = brk - map;
    if (lead + kMinChunk > size)
      break;
    uint64_t prev_size = 0, size_word = 0;
    if (reader.u64(brk, prev_size) && prev_size == lead && reader.u64(brk + 8, size_word) &&
        size_word == ((size - lead) | kIsMmapped))
      return brk;
  }
  return map;
}

/// Scans the captured, writable, anonymous memory outside `claimed` (sorted, disjoint) page by
/// page for mmapped chunk headers: prev_size 0, size a page multiple | IS_MMAPPED only, the
/// mapping inside its region. Back-to-back chunks (merged mappings) are found one after another.
/// The brk heap (Heap class) is not scanned: an mmapped chunk is a mapping of its own, never in
/// the brk range (which another allocator, tcmalloc's sbrk, may hold instead of glibc).
std::vector<MmappedChunk> scanMmapped(CachedReader &reader, const Snapshot &snapshot,
                                      const std::vector<Interval> &claimed, uint64_t page) {
  std::vector<MmappedChunk> out;
  size_t ci = 0;
  for (const MemoryRange &m : snapshot.memory) {
    const Region *r = reader.memory().regionContaining(m.start);
    if (!r || !writableOrUnknown(*r) || !r->backing_file.empty() || r->cls == RegionClass::Stack ||
        r->cls == RegionClass::Image || r->cls == RegionClass::Heap)
      continue;
    uint64_t p = alignUp(m.start, page);
    ReleaseBehind behind(reader.memory(), m.start, m.end()); // only headers are read
    // One header per page, but every page: read ahead of the scan (a managed runtime's GC heap,
    // gigabytes of anonymous memory, is scanned here too).
    ReadAhead ahead(reader.memory(), m.start, m.end());
    while (p >= m.start && p < m.end() && m.end() - p >= 16) {
      behind.passed(p);
      ahead.reached(p);
      while (ci < claimed.size() && claimed[ci].second <= p)
        ++ci;
      if (ci < claimed.size() && claimed[ci].first <= p) {
        p = alignUp(claimed[ci].second, page);
        continue;
      }
      const uint8_t *h = m.bytes.data() + (p - m.start);
      uint64_t prev_size = read64le(h), size_word = read64le(h + 8);
      uint64_t csize = size_word & ~kSizeBits;
      if (prev_size == 0 && (size_word & kSizeBits) == kIsMmapped && csize >= page &&
          csize % page == 0 && csize <= r->end() - p &&
          (ci >= claimed.size() || claimed[ci].first >= p + csize)) {
        MmappedChunk c;
        c.map_start = p;
        c.map_end = p + csize;
        c.chunk = memalignedChunkIn(reader, p, csize);
        c.chunk_size = csize - (c.chunk - p);
        out.push_back(c);
        p += csize;
        continue;
      }
      p += page;
    }
  }
  return out;
}

} // namespace

Plan discover(CachedReader &reader, const Snapshot &snapshot, Diagnostics &diags) {
  Plan plan;
  plan.page_size = pageSizeOf(snapshot);

  // (1) Non-main heaps by their headers.
  std::vector<HeapInfoRec> heaps = scanHeapInfos(reader, snapshot, plan.page_size);
  std::map<uint64_t, HeapInfoRec> heap_at;
  unsigned votes[2] = {0, 0};
  for (const HeapInfoRec &h : heaps) {
    heap_at[h.addr] = h;
    ++votes[h.header_size() == 0x30 ? 1 : 0];
  }
  if (votes[0] || votes[1]) {
    plan.layout = &kHeapLayouts[votes[1] >= votes[0] ? 1 : 0];
    if (votes[0] && votes[1])
      diags.warn("glibc heaps", "heap_info headers disagree on their size (" +
                                    std::to_string(votes[0]) + " say 0x20, " +
                                    std::to_string(votes[1]) + " say 0x30); using " +
                                    plan.layout->versions);
  }
  uint64_t hinfo = plan.layout ? plan.layout->heap_info_size : 0;
  // A thread arena lives right after the heap_info of its first heap.
  auto is_thread_arena_addr = [&](uint64_t a) {
    auto it = heap_at.find(a & ~(kHeapMax - 1));
    return hinfo && it != heap_at.end() && it->second.ar_ptr == a && a == it->first + hinfo;
  };
  std::set<uint64_t> thread_arenas;
  for (const HeapInfoRec &h : heaps)
    if (h.header_size() == hinfo && is_thread_arena_addr(h.ar_ptr))
      thread_arenas.insert(h.ar_ptr);

  // (2) The ring through the thread arenas holds main_arena.
  std::set<uint64_t> ring_members;
  if (!thread_arenas.empty()) {
    std::vector<uint64_t> ring = followRing(reader, *thread_arenas.begin(), diags);
    for (uint64_t a : ring) {
      ring_members.insert(a);
      if (is_thread_arena_addr(a)) {
        thread_arenas.insert(a);
        continue;
      }
      ArenaRec rec = readArena(reader, a);
      if (!rec.readable) {
        diags.warn(hexAddress(a), "arena ring member is not a readable malloc_state");
        continue;
      }
      if (plan.main_arena && plan.main_arena != a) {
        diags.warn(hexAddress(a), "second arena outside any heap in the ring; ignored");
        continue;
      }
      plan.main_arena = a;
      plan.main_arena_how = "arena ring";
    }
    for (uint64_t a : thread_arenas)
      if (!ring_members.count(a))
        diags.warn(hexAddress(a), "thread arena is not on the arena ring");
  }
  if (!plan.main_arena) {
    plan.main_arena = scanForMainArena(reader, snapshot, thread_arenas, diags);
    if (plan.main_arena)
      plan.main_arena_how = "libc data scan";
  }

  // (3) The main heap.
  std::vector<Interval> claimed;
  if (plan.main_arena) {
    ArenaRec main = readArena(reader, plan.main_arena);
    main.is_main = true;
    plan.arenas.push_back(main);
    if (!main.readable)
      diags.warn(hexAddress(main.addr), "main_arena's top chunk is not readable");
    else if (main.top != plan.main_arena + kArena.top) {
      Span span;
      span.kind = SpanKind::MainHeap;
      span.arena = main.addr;
      span.arena_lists_known = true;
      span.top = main.top;
      span.end = main.top + main.top_size;
      const Region *top_region = reader.memory().regionContaining(main.top);
      bool contiguous = !(main.flags & kNonContiguousBit);
      uint64_t start = span.end - main.system_mem;
      span.first_chunk = firstChunkAt(start);
      if (contiguous && main.system_mem >= main.top_size && main.system_mem <= span.end &&
          top_region && plausibleFirstChunk(reader, span.first_chunk, span.end) &&
          (start >= top_region->start || headerWalkReachesTop(reader, span))) {
        plan.main_heap_how = start >= top_region->start
                                 ? "main_arena top and system_mem"
                                 : "main_arena top and system_mem (a header walk across the "
                                   "mappings reaches top)";
      } else if (top_region) {
        start = top_region->start;
        plan.main_heap_how = "region holding main_arena top";
        if (!contiguous)
          diags.warn(hexAddress(main.addr),
                     "main arena is non-contiguous (brk failed, mmap fallback): only the "
                     "segment holding top is walked");
        else
          diags.warn(hexAddress(main.addr),
                     "main heap start from system_mem does not hold a chunk; walking from the "
                     "start of the region holding top");
      }
      if (top_region && span.end <= top_region->end()) {
        span.area_start = start;
        span.area_end = span.end;
        span.first_chunk = firstChunkAt(start);
        plan.spans.push_back(span);
        claimed.emplace_back(span.area_start, span.area_end);
      } else {
        diags.warn(hexAddress(main.top), "main_arena top chunk is outside the dumped regions");
      }
    }
  }
  if (plan.spans.empty()) {
    Span span = fallbackMainHeap(reader, snapshot);
    if (span.end) {
      plan.main_heap_how = "heap region fallback (no main_arena)";
      plan.spans.push_back(span);
      claimed.emplace_back(span.area_start, span.area_end);
    }
  }

  // Thread arenas and their heaps, newest first along `prev` from the heap holding top.
  std::set<uint64_t> walked_heaps;
  for (uint64_t a : thread_arenas) {
    ArenaRec arena = readArena(reader, a);
    if (!arena.readable)
      diags.warn(hexAddress(a), "thread arena's malloc_state does not look valid; its heaps are "
                                "walked without top and fastbins");
    std::vector<uint64_t> chain;
    if (arena.readable) {
      uint64_t h = arena.top & ~(kHeapMax - 1);
      std::unordered_set<uint64_t> seen;
      while (h && chain.size() < kMaxHeapsPerArena) {
        auto it = heap_at.find(h);
        HeapInfoRec rec;
        if (it != heap_at.end())
          rec = it->second;
        else if (!readHeapInfo(reader, h, plan.page_size, rec)) {
          diags.warn(hexAddress(h), "heap of arena " + hexAddress(a) +
                                        " has no valid heap_info; the older heaps are not walked");
          break;
        }
        if (rec.ar_ptr != a) {
          diags.warn(hexAddress(h), "heap_info names arena " + hexAddress(rec.ar_ptr) +
                                        ", expected " + hexAddress(a));
          break;
        }
        if (!seen.insert(h).second) {
          diags.warn(hexAddress(h), "heap chain of arena " + hexAddress(a) + " loops");
          break;
        }
        heap_at[h] = rec;
        chain.push_back(h);
        h = rec.prev;
      }
    }
    // Heaps naming this arena that the chain missed are walked too.
    for (const auto &[addr, rec] : heap_at)
      if (rec.ar_ptr == a && std::find(chain.begin(), chain.end(), addr) == chain.end()) {
        if (arena.readable)
          diags.warn(hexAddress(addr),
                     "heap of arena " + hexAddress(a) + " is not on the arena's heap chain");
        chain.push_back(addr);
      }
    for (uint64_t h : chain) {
      if (!walked_heaps.insert(h).second)
        continue;
      const HeapInfoRec &rec = heap_at[h];
      Span span;
      span.kind = SpanKind::ThreadHeap;
      span.arena = a;
      span.arena_lists_known = arena.readable;
      span.area_start = h;
      span.area_end = h + rec.size;
      span.end = h + rec.size;
      span.first_chunk = (a == h + hinfo) ? h + plan.layout->first_chunk_offset : h + hinfo;
      if (arena.readable && arena.top >= h && arena.top < span.end)
        span.top = arena.top;
      plan.spans.push_back(span);
      claimed.emplace_back(h, h + kHeapMax); // with its PROT_NONE reservation
    }
    arena.heap_count = static_cast<unsigned>(chain.size());
    plan.arenas.push_back(arena);
  }

  // (4) mmapped chunks in what is left.
  mergeIntervals(claimed);
  plan.mmapped = scanMmapped(reader, snapshot, claimed, plan.page_size);
  return plan;
}

} // namespace dumpsift::glibc
