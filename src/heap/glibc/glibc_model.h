// What the glibc walker learns about a process before it walks chunks: its arenas, their heaps,
// the main (brk) heap, mmapped chunks, and the chunks sitting in tcaches and fastbins.
// Internal to src/heap/glibc.
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "dumpsift/support/diagnostics.h"
#include "glibc_layout.h"

#include "llvm/Support/Compiler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dumpsift::glibc {

/// One arena (struct malloc_state) as read from the dump.
struct ArenaRec {
  uint64_t addr = 0;
  bool is_main = false;
  bool readable = false; // the malloc_state was captured and looked like one
  uint64_t top = 0;      // top chunk address (0 when unreadable)
  uint64_t top_size = 0;
  uint64_t system_mem = 0;
  uint32_t flags = 0;
  unsigned heap_count = 0; // thread heaps walked for this arena
};

enum class SpanKind : uint8_t { MainHeap, ThreadHeap };

/// A stretch of back-to-back chunks to walk: the brk heap or one heap of a non-main arena.
struct Span {
  SpanKind kind = SpanKind::MainHeap;
  uint64_t area_start = 0; // the memory the span claims (heap_info and arena included)
  uint64_t area_end = 0;
  uint64_t first_chunk = 0;
  uint64_t end = 0;   // no chunk may run past this
  uint64_t top = 0;   // the arena's top chunk when it lies in this span, else 0
  uint64_t arena = 0; // malloc_state address, 0 when unknown
  /// True when the arena's fastbins were read: then a small chunk with the next PREV_INUSE set
  /// is used unless a tcache or fastbin holds it.
  bool arena_lists_known = false;
  /// Fallback spans (no arena found): a chunk ending exactly at `end` is taken as the top chunk.
  bool end_is_top = false;
};

/// An mmapped chunk: the mapping [map_start, map_end) holds one chunk at `chunk` (not at
/// map_start when memalign moved it: then prev_size = chunk - map_start).
struct MmappedChunk {
  uint64_t map_start = 0;
  uint64_t map_end = 0;
  uint64_t chunk = 0;
  uint64_t chunk_size = 0;
};

/// Everything discovered, ready to walk.
struct Plan {
  const HeapLayout *layout = nullptr; // nullptr when no thread heap told it
  uint64_t page_size = 4096;
  uint64_t main_arena = 0;
  std::string main_arena_how; // "arena ring", "libc data scan", or empty
  std::string main_heap_how;  // "main_arena top and system_mem", "heap region fallback", ...
  std::vector<ArenaRec> arenas;
  std::vector<Span> spans;
  std::vector<MmappedChunk> mmapped;
};

/// Finds arenas, heaps and mmapped chunks. Damage (a bad heap_info, a ring that loops, a heap
/// chain that loops) becomes a warning in `diags` and that part is left out; never fails.
/// Reads only through `reader`.
Plan discover(CachedReader &reader, const Snapshot &snapshot, Diagnostics &diags);

/// Chunks held by tcaches and fastbins (free although the next chunk's PREV_INUSE is set).
struct FreeLists {
  std::vector<uint64_t> chunks;        // sorted, unique chunk addresses
  unsigned tcaches = 0;                // tcache_perthread_structs found
  std::vector<uint64_t> tcache_chunks; // their chunk addresses, in the order found
  int safe_linking = -1;               // 1 yes (2.32+), 0 no, -1 not decided (no non-empty list)
};

/// Reads every tcache among `tcache_candidates` (addresses of in-use 0x290 chunks) and every
/// readable arena's fastbins. A list that loops or breaks is cut there with a warning; every walk
/// is bounded.
FreeLists collectFreeLists(CachedReader &reader, const Plan &plan,
                           const std::vector<uint64_t> &tcache_candidates, Diagnostics &diags);

/// How a chunk walk learned the state of one chunk.
enum class ChunkHint : uint8_t {
  NextPrevInuseSet,   // the next chunk's PREV_INUSE is set: used, or in a tcache/fastbin
  NextPrevInuseClear, // free, in a bin
  Top,                // the arena's top chunk
  Unknown,            // the next header could not be read
};

/// Why a chunk walk stopped.
enum class WalkEnd : uint8_t { Top, End, Fence, Corrupt, NotCaptured };

enum class HeaderCheck : uint8_t { Ok, Fence, Corrupt };

/// checkHeader's every case, out of line (glibc_walker.cpp).
HeaderCheck checkHeaderSlow(const Span &span, uint64_t cur, uint64_t size_word, std::string &why);

/// Checks the header (`size_word`) of the chunk at `cur` (< span.end): the top chunk must end at
/// the span's end; a size below MINSIZE is a fencepost where glibc puts one, else corruption;
/// the size must be a multiple of 16 that fits in the span; IS_MMAPPED must be clear (and
/// NON_MAIN_ARENA in the main heap). `why` says what is wrong for Fence-with-a-gap and Corrupt.
inline HeaderCheck checkHeader(const Span &span, uint64_t cur, uint64_t size_word,
                               std::string &why) {
  // The common case, inline: an ordinary chunk (not top) with a good header. Exactly the
  // conditions under which checkHeaderSlow says Ok for a chunk that is not top.
  const uint64_t csize = size_word & ~kSizeBits;
  const uint64_t bad_bits = 8 | kIsMmapped | (span.kind == SpanKind::MainHeap ? kNonMainArena : 0);
  if (LLVM_LIKELY(cur != span.top && csize >= kMinChunk && !(size_word & bad_bits) &&
                  csize <= span.end - cur))
    return HeaderCheck::Ok;
  return checkHeaderSlow(span, cur, size_word, why);
}

/// Header reads one resync after an uncaptured stretch may spend (resyncAfter), and resyncs per
/// heap: a hostile dump with many gaps costs at most their product.
constexpr uint64_t kResyncBudget = 1ull << 24;
constexpr unsigned kResyncsPerHeap = 16;
/// How far past an uncaptured stretch resyncAfter looks for the next chunk header.
constexpr uint64_t kResyncWindow = 1ull << 20;

/// True when chunk headers chain from `p`, each passing checkHeader, to the span's top chunk or
/// its end, or to a header the dump lacks after at least one good one; spends one of `budget`
/// per header read and fails when it runs out.
inline bool chainsToTop(CachedReader &reader, const Span &span, uint64_t p, uint64_t &budget) {
  std::string why;
  for (uint64_t cur = p; budget > 0; --budget) {
    uint64_t word = 0;
    if (cur >= span.end || span.end - cur < 16)
      return false;
    if (!reader.u64(cur + 8, word))
      return cur != p;
    if (checkHeader(span, cur, word, why) != HeaderCheck::Ok)
      return false;
    const uint64_t next = cur + (word & ~kSizeBits);
    if (cur == span.top || next == span.end)
      return true;
    cur = next;
  }
  return false;
}

/// The first chunk at or after `from` (an uncaptured stretch's end) and within kResyncWindow of
/// it whose header chain reaches top (chainsToTop), spending at most kResyncBudget header reads;
/// 0 when there is none. Where the dump lacks the headers of a heap, this is where its walk can
/// go on: a chain of valid headers that lands exactly on top does not arise from other bytes.
inline uint64_t resyncAfter(CachedReader &reader, const Span &span, uint64_t from) {
  uint64_t budget = kResyncBudget;
  const uint64_t first = (from + kAlignMask) & ~kAlignMask;
  for (uint64_t p = first; p < span.end && p - first < kResyncWindow && budget > 0; p += 16)
    if (chainsToTop(reader, span, p, budget))
      return p;
  return 0;
}

/// Walks `span` chunk by chunk, calling on_chunk(chunk_address, chunk_size, hint) for each chunk
/// in address order. Stops at the top chunk, the span's end, a fencepost, a corrupt header or
/// uncaptured memory; the chunk before a corrupt or uncaptured header is reported with hint
/// Unknown (its state is in that header). `stop_at` gets the address where the walk stopped and
/// `why` a message for anything but Top/End/a plain Fence. Never reads outside the dump;
/// terminates because every step moves forward by at least MINSIZE bytes. Releases the pages
/// behind it as it goes (ReleaseBehind), and those of the whole span when it returns, except
/// those below `keep_below`.
template <typename OnChunk>
WalkEnd walkChunks(CachedReader &reader, const Span &span, OnChunk &&on_chunk, uint64_t &stop_at,
                   std::string &why, uint64_t keep_below = 0) {
  uint64_t cur = span.first_chunk;
  uint64_t size_word = 0;
  stop_at = cur;
  if (cur >= span.end || (cur & kAlignMask) != 0) {
    why = "first chunk is outside its heap or misaligned";
    return WalkEnd::Corrupt;
  }
  // Fast path: the whole span captured in one range, read through one pointer. No read goes
  // past span.end (a misaligned, corrupt end fails the read instead).
  const uint64_t first = span.first_chunk;
  if (span.end - first < 16) {
    why = "heap too small for a chunk";
    return WalkEnd::Corrupt;
  }
  const uint8_t *base = reader.view(first, span.end - first);
  auto load = [&](uint64_t addr, uint64_t &out) {
    if (addr > span.end - 8)
      return false;
    if (base) {
      out = read64le(base + (addr - first));
      return true;
    }
    return reader.u64(addr, out);
  };
  if (!load(cur + 8, size_word)) {
    why = "first chunk header is not captured";
    return WalkEnd::NotCaptured;
  }
  switch (checkHeader(span, cur, size_word, why)) {
  case HeaderCheck::Ok:
    break;
  case HeaderCheck::Fence:
    return WalkEnd::Fence;
  case HeaderCheck::Corrupt:
    return WalkEnd::Corrupt;
  }
  ReleaseBehind behind(reader.memory(), std::max(first, keep_below), span.end);
  while (true) {
    behind.passed(cur);
    uint64_t csize = size_word & ~kSizeBits;
    if (cur == span.top) {
      on_chunk(cur, csize, ChunkHint::Top);
      return WalkEnd::Top;
    }
    uint64_t next = cur + csize;
    if (next == span.end) {
      on_chunk(cur, csize, span.end_is_top ? ChunkHint::Top : ChunkHint::Unknown);
      stop_at = next;
      return WalkEnd::End;
    }
    uint64_t next_word = 0;
    stop_at = next;
    if (!load(next + 8, next_word)) {
      on_chunk(cur, csize, ChunkHint::Unknown);
      why = "chunk header is not captured";
      return WalkEnd::NotCaptured;
    }
    HeaderCheck check = checkHeader(span, next, next_word, why);
    if (check == HeaderCheck::Corrupt) {
      on_chunk(cur, csize, ChunkHint::Unknown);
      return WalkEnd::Corrupt;
    }
    on_chunk(cur, csize,
             (next_word & kPrevInuse) ? ChunkHint::NextPrevInuseSet
                                      : ChunkHint::NextPrevInuseClear);
    if (check == HeaderCheck::Fence)
      return WalkEnd::Fence;
    cur = next;
    size_word = next_word;
  }
}

} // namespace dumpsift::glibc
