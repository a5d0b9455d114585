// The `heap` listing's writers (heap_listing.h).
#include "dumpsift/report/heap_listing.h"

#include "dumpsift/support/hex.h"
#include "dumpsift/support/parallel.h"
#include "dumpsift/support/sizes.h"
#include "dumpsift/support/terminal_text.h"
#include "dumpsift/support/version.h"
#include "json_values.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/NativeFormatting.h"
#include "llvm/Support/SwapByteOrder.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

namespace dumpsift {

using namespace detail;

namespace {

/// Rows formatted into memory, to be written in one piece: a million rows through raw_ostream's
/// operators cost more than the heap walk.
class RowText {
public:
  /// Room for the next `n` bytes, which the caller writes and then ends with wrote().
  char *room(size_t n) {
    if (bytes_.size() - used_ < n)
      bytes_.resize(std::max(2 * bytes_.size(), used_ + n));
    return bytes_.data() + used_;
  }
  /// The bytes up to `end` (inside the last room) are written.
  void wrote(const char *end) { used_ = static_cast<size_t>(end - bytes_.data()); }
  llvm::StringRef text() const { return llvm::StringRef(bytes_.data(), used_); }
  void clear() { used_ = 0; }

private:
  std::vector<char> bytes_;
  size_t used_ = 0;
};

/// Rows in a piece: formatted by one thread into one RowText (about 600 KB of text).
constexpr size_t kPieceRows = 8192;

/// Writes rows [0, n) to `out`: format(begin, end, text) formats rows [begin, end) into `text`,
/// on `threads` threads (0: one per core), one piece of kPieceRows at a time taken in order from
/// a shared counter, and each piece is written when the pieces before it are: the bytes are the
/// same for every thread count.
void writeRowsInOrder(size_t n, unsigned threads, llvm::raw_ostream &out,
                      llvm::function_ref<void(size_t, size_t, RowText &)> format) {
  const size_t pieces = (n + kPieceRows - 1) / kPieceRows;
  std::vector<RowText> texts(resolveThreads(threads)); // one per worker
  std::mutex mutex;
  std::condition_variable turn;
  size_t written = 0; // pieces [0, written) are written out
  parallelFor(
      pieces, threads,
      [&](size_t piece, unsigned worker) {
        RowText &text = texts[worker];
        text.clear();
        format(piece * kPieceRows, std::min(n, (piece + 1) * kPieceRows), text);
        {
          std::unique_lock<std::mutex> lock(mutex);
          turn.wait(lock, [&] { return written == piece; });
        }
        out << text.text(); // only the piece whose turn it is writes
        {
          std::lock_guard<std::mutex> lock(mutex);
          ++written;
        }
        turn.notify_all();
      },
      [] {});
}

char *putText(char *p, llvm::StringRef text) {
  std::memcpy(p, text.data(), text.size());
  return p + text.size();
}

/// A short text (a state's or a walker's name) kept with room to copy it with a store of constant
/// size: a row's few names cost no call to memcpy.
class ShortText {
public:
  explicit ShortText(llvm::StringRef text) : text_(text) {
    std::memset(bytes_, 0, sizeof bytes_);
    std::memcpy(bytes_, text.data(), std::min(text.size(), sizeof bytes_));
  }
  /// Writes the text at `p` (and, when it is short, up to kBytes bytes in all); returns its end.
  char *put(char *p) const {
    if (text_.size() > kBytes)
      return putText(p, text_);
    std::memcpy(p, bytes_, kBytes);
    return p + text_.size();
  }
  size_t size() const { return text_.size(); }
  static constexpr size_t kBytes = 32;

private:
  llvm::StringRef text_;
  char bytes_[kBytes];
};

/// Spaces from `end` up to `p + width` (width at most 18), when `end` is short of it; returns the
/// end. Writes 18 bytes from `p` whatever the field's width: a store of constant size.
char *padTo(char *p, char *end, size_t width) {
  if (end >= p + width)
    return end;
  char spaces[18];
  std::memset(spaces, ' ', sizeof spaces);
  std::memcpy(end, spaces, sizeof spaces);
  return p + width;
}

/// The 8 hex digits of `half` in ASCII, the most significant in the lowest byte: all 8 at once
/// (each nibble spread into a byte of its own, then '0' or 'a' - 10 added to each byte).
uint64_t hexDigits8(uint32_t half) {
  uint64_t x = half;
  x = (x | (x << 16)) & 0x0000ffff0000ffffull;
  x = (x | (x << 8)) & 0x00ff00ff00ff00ffull;
  x = (x | (x << 4)) & 0x0f0f0f0f0f0f0f0full; // byte i holds nibble i
  const uint64_t letters = ((x + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull;
  x += 0x3030303030303030ull + letters * ('a' - '0' - 10);
  return llvm::ByteSwap_64(x); // the most significant nibble first
}

/// "0x" and `value` in lowercase hex (hexAddress's form): at most 18 bytes. Writes 18 bytes from
/// `p` whatever the value: stores of constant size.
char *putHex(char *p, uint64_t value) {
  const unsigned digits = value ? (64 - llvm::countLeadingZeros(value) + 3) / 4 : 1;
  const uint64_t top = digits == 16 ? value : value << (64 - 4 * digits); // digits first
  const uint64_t high = hexDigits8(static_cast<uint32_t>(top >> 32));
  const uint64_t low = hexDigits8(static_cast<uint32_t>(top));
  *p++ = '0';
  *p++ = 'x';
  std::memcpy(p, &high, 8);
  std::memcpy(p + 8, &low, 8);
  return p + digits;
}

/// "00" "01" ... "99".
constexpr std::array<char, 200> kDigitPairs = [] {
  std::array<char, 200> pairs{};
  for (unsigned i = 0; i < 100; ++i) {
    pairs[2 * i] = static_cast<char>('0' + i / 10);
    pairs[2 * i + 1] = static_cast<char>('0' + i % 10);
  }
  return pairs;
}();

/// The number of decimal digits of `value`.
unsigned decimalDigits(uint64_t value) {
  unsigned n = 1;
  for (; value >= 100; value /= 100)
    n += 2;
  return n + (value >= 10);
}

/// `value` in decimal, its last digit just before `end`.
void putDigitsBefore(char *end, uint64_t value) {
  for (; value >= 100; value /= 100) {
    end -= 2;
    std::memcpy(end, &kDigitPairs[2 * (value % 100)], 2);
  }
  if (value >= 10)
    std::memcpy(end - 2, &kDigitPairs[2 * value], 2);
  else
    end[-1] = static_cast<char>('0' + value);
}

/// `value` in decimal, right-justified in `width` columns (at most 16): at most max(16, 20)
/// bytes.
char *putDecimal(char *p, uint64_t value, size_t width = 0) {
  const unsigned length = decimalDigits(value);
  if (width > length) {
    char spaces[16];
    std::memset(spaces, ' ', sizeof spaces);
    std::memcpy(p, spaces, sizeof spaces);
    putDigitsBefore(p + width, value);
    return p + width;
  }
  putDigitsBefore(p + length, value);
  return p + length;
}

/// The names a row shows: each state's, and each heap's walker's.
struct RowNames {
  explicit RowNames(const HeapListing &listing)
      : states{ShortText(stateName(AllocState::Used)), ShortText(stateName(AllocState::Free)),
               ShortText(stateName(AllocState::Unknown))} {
    for (const HeapWalkResult &h : listing.heaps)
      walkers.emplace_back(h.walker);
  }
  const ShortText &state(AllocState s) const { return states[static_cast<size_t>(s)]; }
  ShortText states[3];
  std::vector<ShortText> walkers;
};

} // namespace

void writeHeapListingJson(const Snapshot &snapshot, const HeapListing &listing,
                          llvm::raw_ostream &out, unsigned threads) {
  Json head;
  head["schema_version"] = kHeapListingSchemaVersion;
  head["dump"] = dumpSummaryJson(snapshot);
  Json heaps = Json::array();
  for (const HeapWalkResult &h : listing.heaps)
    heaps.push_back(heapJson(h));
  head["heaps"] = std::move(heaps);
  Json diag = diagnosticsJson(snapshot.diagnostics);
  for (Json &d : diagnosticsJson(listing.diagnostics))
    diag.push_back(std::move(d));
  head["diagnostics"] = std::move(diag);
  std::string text = dumpJson(head, 2);
  text.pop_back(); // reopen the object to append the streamed array
  out << text << ",\n  \"allocations\": [";
  // Millions of lines: formatted in memory (RowText), without printf or temporaries.
  const RowNames names(listing);
  writeRowsInOrder(
      listing.allocations.size(), threads, out, [&](size_t begin, size_t end, RowText &rows) {
        for (size_t i = begin; i < end; ++i) {
          const ListedAllocation &a = listing.allocations[i];
          const ShortText &state = names.state(a.state), &walker = names.walkers[a.heap];
          char *p = rows.room(256 + state.size() + walker.size());
          p = putText(p, i ? ",\n    {\"address\": \"" : "\n    {\"address\": \"");
          p = putHex(p, a.address);
          p = putText(p, "\", \"size\": ");
          p = putDecimal(p, a.size);
          p = putText(p, ", \"chunk\": \"");
          p = putHex(p, a.chunk);
          p = putText(p, "\", \"state\": \"");
          p = state.put(p);
          p = putText(p, a.mmapped ? "\", \"mmapped\": true, \"arena\": \""
                                   : "\", \"mmapped\": false, \"arena\": \"");
          p = putHex(p, a.arena);
          p = putText(p, "\", \"walker\": \"");
          p = walker.put(p);
          rows.wrote(putText(p, "\"}"));
        }
      });
  out << (listing.allocations.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

void writeHeapListingText(const Snapshot &snapshot, const HeapListing &listing,
                          llvm::raw_ostream &out, unsigned threads) {
  out << printable(snapshot.path) << ": " << formatName(snapshot.format) << " "
      << osName(snapshot.system.os) << "/" << printable(snapshot.system.arch) << "\n";
  if (listing.heaps.empty())
    out << "no heap recognised\n";
  for (const HeapWalkResult &h : listing.heaps) {
    out << h.walker << ":";
    for (const auto &[k, v] : h.facts)
      out << " " << printable(k) << "=" << printable(v);
    out << "\n  used " << h.stats.used_count << " (" << humanBytes(h.stats.used_bytes) << "), free "
        << h.stats.free_count << " (" << humanBytes(h.stats.free_bytes) << "), unknown "
        << h.stats.unknown_count << " (" << humanBytes(h.stats.unknown_bytes) << ")\n";
    for (const HeapArea &a : h.areas) {
      out << "  " << a.kind << " " << hexAddress(a.start) << "-" << hexAddress(a.start + a.size)
          << " (" << humanBytes(a.size) << ")";
      if (a.arena) // mmapped chunks and other areas outside any arena have none
        out << " arena " << hexAddress(a.arena);
      out << "\n";
    }
  }
  for (const std::vector<Diagnostic> &warnings :
       {snapshot.diagnostics.warnings(), listing.diagnostics.warnings()})
    for (const Diagnostic &d : warnings)
      out << "warning: " << printable(d.where) << ": " << printable(d.message) << "\n";
  out << "\n"
      << listing.allocations.size() << " allocation" << (listing.allocations.size() == 1 ? "" : "s")
      << " of at least " << listing.min_size << " bytes\n";
  // The column heads, as wide as the rows' columns.
  out << llvm::left_justify("address", 18) << ' ' << llvm::right_justify("size", 12) << ' '
      << llvm::left_justify("state", 7) << ' ' << llvm::left_justify("mmapped", 7) << ' '
      << llvm::left_justify("arena", 18) << " walker\n";
  const RowNames names(listing);
  writeRowsInOrder(
      listing.allocations.size(), threads, out, [&](size_t begin, size_t end, RowText &rows) {
        for (size_t i = begin; i < end; ++i) {
          const ListedAllocation &a = listing.allocations[i];
          const ShortText &state = names.state(a.state), &walker = names.walkers[a.heap];
          char *p = rows.room(192 + state.size() + walker.size());
          p = padTo(p, putHex(p, a.address), 18);
          *p++ = ' ';
          p = putDecimal(p, a.size, 12);
          *p++ = ' ';
          p = padTo(p, state.put(p), 7);
          *p++ = ' ';
          p = padTo(p, putText(p, a.mmapped ? "yes" : "no"), 7);
          *p++ = ' ';
          // An mmapped chunk belongs to no arena.
          p = padTo(p, a.arena ? putHex(p, a.arena) : putText(p, "-"), 18);
          *p++ = ' ';
          p = walker.put(p);
          *p++ = '\n';
          rows.wrote(p);
        }
      });
}

} // namespace dumpsift
