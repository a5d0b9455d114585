// Chunks in tcaches and fastbins. They keep the next chunk's PREV_INUSE set, so a chunk walk
// alone would call them used; these lists say they are free.
//
// tcache (2.30+): `uint16_t counts[64]; tcache_entry *entries[64]`; entries[i] points at the user
// memory of a chunk of size 0x20 + 0x10 * i, whose first word is `next`. Fastbins: arena
// fastbinsY[i] points at a chunk header of size 0x20 + 0x10 * i, whose fd (chunk + 0x10) is the
// next chunk header. List heads are stored plain; since 2.32 each link is stored as
// PROTECT_PTR(pos, ptr) = (pos >> 12) ^ ptr, pos being the address of the link itself.
#include "dumpsift/support/hex.h"
#include "glibc_model.h"

#include <algorithm>

namespace dumpsift::glibc {

namespace {

enum class Linking { Unknown, Plain, Mangled };

/// True when `chunk` is a readable, 16-aligned chunk header of exactly `expect` bytes and not
/// mmapped.
bool chunkOfSize(CachedReader &reader, uint64_t chunk, uint64_t expect) {
  uint64_t word = 0;
  return chunk != 0 && (chunk & kAlignMask) == 0 && reader.u64(chunk + 8, word) &&
         (word & ~kSizeBits) == expect && !(word & kIsMmapped);
}

/// Which readings of a stored link `raw` at address `pos` are consistent: bit 0 when the plain
/// value is null or a chunk of `expect` bytes, bit 1 when the demangled value is. `user` says the
/// link points at user memory (tcache) rather than at a chunk header (fastbin).
unsigned probeLink(CachedReader &reader, uint64_t raw, uint64_t pos, uint64_t expect, bool user) {
  unsigned mask = 0;
  uint64_t readings[2] = {raw, (pos >> 12) ^ raw};
  for (unsigned i = 0; i < 2; ++i) {
    uint64_t v = readings[i];
    if (v == 0 || (v > kChunkHeader && chunkOfSize(reader, user ? v - kChunkHeader : v, expect)))
      mask |= 1u << i;
  }
  return mask;
}

/// Brent's cycle finder over a sequence of list nodes: `seen(x)` is true once a node repeats.
class LoopCheck {
public:
  /// Feeds the next node; true when the list has been seen to loop.
  bool seen(uint64_t node) {
    if (node == tortoise_)
      return true;
    if (++steps_ == power_) {
      tortoise_ = node;
      power_ *= 2;
      steps_ = 0;
    }
    return false;
  }

private:
  uint64_t tortoise_ = 0;
  uint64_t power_ = 1, steps_ = 0;
};

/// The raw view of a tcache_perthread_struct at user address `user`, when it looks like one:
/// each bin has a count of 0 with a null head or a non-zero count with a head pointing at a chunk
/// of that bin's size (or at aligned memory whose header the dump lacks, which says nothing
/// against it). nullptr otherwise.
const uint8_t *tcacheView(CachedReader &reader, uint64_t user) {
  const uint8_t *p = reader.view(user, kTcacheStructSize);
  if (!p)
    return nullptr;
  for (unsigned i = 0; i < kTcacheBins; ++i) {
    const uint16_t count = read16le(p + 2 * i);
    uint64_t head = read64le(p + kTcacheEntriesOffset + 8 * i);
    if ((count == 0) != (head == 0))
      return nullptr;
    uint64_t size_word = 0;
    if (head && (head <= kChunkHeader || (head & kAlignMask) != 0 ||
                 (reader.u64(head - 8, size_word) &&
                  !chunkOfSize(reader, head - kChunkHeader, 0x20 + 0x10 * i))))
      return nullptr;
  }
  return p;
}

/// Decodes a stored link.
uint64_t reveal(Linking mode, uint64_t pos, uint64_t raw) {
  return mode == Linking::Mangled ? (pos >> 12) ^ raw : raw;
}

} // namespace

FreeLists collectFreeLists(CachedReader &reader, const Plan &plan,
                           const std::vector<uint64_t> &tcache_candidates, Diagnostics &diags) {
  FreeLists out;
  // Only 0x290 chunks whose content looks like a tcache are tcaches (an all-zero 0x288-byte
  // buffer also passes; it holds no entries, so it changes nothing).
  std::vector<std::pair<uint64_t, const uint8_t *>> tcaches;
  for (uint64_t chunk : tcache_candidates)
    if (const uint8_t *p = tcacheView(reader, chunk + kChunkHeader))
      tcaches.emplace_back(chunk, p);
  out.tcaches = static_cast<unsigned>(tcaches.size());
  for (const auto &[chunk, view] : tcaches)
    out.tcache_chunks.push_back(chunk);

  // Safe-linking: every non-empty list's first link votes for the reading that makes sense.
  unsigned votes_plain = 0, votes_mangled = 0;
  auto vote = [&](unsigned mask) {
    if (mask == 1)
      ++votes_plain;
    else if (mask == 2)
      ++votes_mangled;
  };
  for (const auto &[chunk, p] : tcaches) {
    for (unsigned i = 0; i < kTcacheBins; ++i) {
      uint64_t head = read64le(p + kTcacheEntriesOffset + 8 * i);
      uint64_t raw = 0;
      if (head && reader.u64(head, raw))
        vote(probeLink(reader, raw, head, 0x20 + 0x10 * i, /*user=*/true));
    }
  }
  std::vector<const ArenaRec *> arenas;
  for (const ArenaRec &a : plan.arenas)
    if (a.readable)
      arenas.push_back(&a);
  for (const ArenaRec *a : arenas) {
    for (unsigned i = 0; i < kFastbins; ++i) {
      uint64_t head = 0, raw = 0;
      if (reader.u64(a->addr + kArena.fastbins + 8 * i, head) && head && reader.u64(head + 16, raw))
        vote(probeLink(reader, raw, head + 16, 0x20 + 0x10 * i, /*user=*/false));
    }
  }
  Linking mode = Linking::Unknown;
  if (plan.layout && plan.layout->heap_info_size == 0x30)
    mode = Linking::Mangled; // 2.35+ always mangles
  else if (votes_mangled > votes_plain)
    mode = Linking::Mangled;
  else if (votes_plain > votes_mangled)
    mode = Linking::Plain;
  out.safe_linking = mode == Linking::Unknown ? -1 : mode == Linking::Mangled ? 1 : 0;
  if (votes_plain && votes_mangled)
    diags.warn("glibc free lists", "links disagree about safe-linking (" +
                                       std::to_string(votes_plain) + " plain, " +
                                       std::to_string(votes_mangled) + " mangled)");
  if (mode == Linking::Unknown)
    mode = Linking::Plain; // only empty or one-entry lists whose link is null: plain reads them

  // tcache lists: `count` entries, then a null link.
  for (const auto &[chunk, p] : tcaches) {
    for (unsigned i = 0; i < kTcacheBins; ++i) {
      const uint16_t count = read16le(p + 2 * i);
      uint64_t e = read64le(p + kTcacheEntriesOffset + 8 * i);
      uint64_t expect = 0x20 + 0x10 * i;
      LoopCheck loop;
      std::string where =
          "tcache " + hexAddress(chunk + kChunkHeader) + " bin " + std::to_string(i);
      for (unsigned k = 0; k < count && e; ++k) {
        uint64_t size_word = 0;
        if (e > kChunkHeader && !reader.u64(e - 8, size_word)) {
          diags.warn(where,
                     "entry " + hexAddress(e) + " lies in memory the dump lacks; list cut there");
          break;
        }
        if (e <= kChunkHeader || !chunkOfSize(reader, e - kChunkHeader, expect)) {
          diags.warn(where, "entry " + hexAddress(e) + " is not a free chunk of size " +
                                std::to_string(expect) + "; list cut there");
          break;
        }
        if (loop.seen(e)) {
          diags.warn(where, "list loops at " + hexAddress(e) + "; list cut there");
          break;
        }
        out.chunks.push_back(e - kChunkHeader);
        uint64_t raw = 0;
        if (!reader.u64(e, raw)) {
          diags.warn(where, "link at " + hexAddress(e) + " is not captured");
          break;
        }
        uint64_t next = reveal(mode, e, raw);
        if (k + 1 == count && next != 0)
          diags.warn(where, "list is longer than its count " + std::to_string(count));
        e = next;
      }
    }
  }

  // Fastbin lists: bounded by what the arena could hold, and checked for loops.
  for (const ArenaRec *a : arenas) {
    uint64_t bound = std::min<uint64_t>(a->system_mem / kMinChunk + 16, uint64_t(1) << 26);
    for (unsigned i = 0; i < kFastbins; ++i) {
      uint64_t c = 0;
      if (!reader.u64(a->addr + kArena.fastbins + 8 * i, c))
        continue;
      uint64_t expect = 0x20 + 0x10 * i;
      LoopCheck loop;
      std::string where = "arena " + hexAddress(a->addr) + " fastbin " + std::to_string(i);
      for (uint64_t k = 0; c; ++k) {
        if (k == bound) {
          diags.warn(where, "list longer than the arena could hold; cut");
          break;
        }
        if (!chunkOfSize(reader, c, expect)) {
          diags.warn(where, "entry " + hexAddress(c) + " is not a chunk of size " +
                                std::to_string(expect) + "; list cut there");
          break;
        }
        if (loop.seen(c)) {
          diags.warn(where, "list loops at " + hexAddress(c) + "; list cut there");
          break;
        }
        out.chunks.push_back(c);
        uint64_t raw = 0;
        if (!reader.u64(c + 16, raw)) {
          diags.warn(where, "link at " + hexAddress(c + 16) + " is not captured");
          break;
        }
        c = reveal(mode, c + 16, raw);
      }
    }
  }
  std::sort(out.chunks.begin(), out.chunks.end());
  out.chunks.erase(std::unique(out.chunks.begin(), out.chunks.end()), out.chunks.end());
  return out;
}

} // namespace dumpsift::glibc
