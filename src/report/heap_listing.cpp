// The `heap` listing's writers (heap_listing.h).
#include "dumpsift/report/heap_listing.h"

#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "dumpsift/support/terminal_text.h"
#include "dumpsift/support/version.h"
#include "json_values.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/NativeFormatting.h"

#include <cstring>
#include <vector>

namespace dumpsift {

using namespace detail;

namespace {

/// Rows are formatted into a block of memory and written a block at a time: a million rows
/// through raw_ostream's operators cost more than the heap walk.
class RowBlock {
public:
  explicit RowBlock(llvm::raw_ostream &out) : out_(out), bytes_(kBlockBytes) {}
  RowBlock(const RowBlock &) = delete;
  RowBlock &operator=(const RowBlock &) = delete;
  ~RowBlock() { flush(); }

  /// Room for the next `n` bytes, which the caller writes and then ends with wrote(); writes the
  /// block out first when it has less room left.
  char *room(size_t n) {
    if (bytes_.size() - used_ < n) {
      flush();
      if (bytes_.size() < n)
        bytes_.resize(n);
    }
    return bytes_.data() + used_;
  }
  /// The bytes up to `end` (inside the last room) are written.
  void wrote(const char *end) { used_ = static_cast<size_t>(end - bytes_.data()); }

private:
  static constexpr size_t kBlockBytes = 64u << 10;
  void flush() {
    out_.write(bytes_.data(), used_);
    used_ = 0;
  }
  llvm::raw_ostream &out_;
  std::vector<char> bytes_;
  size_t used_ = 0;
};

char *putText(char *p, llvm::StringRef text) {
  std::memcpy(p, text.data(), text.size());
  return p + text.size();
}

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

/// "0x" and `value` in lowercase hex (hexAddress's form): at most 18 bytes.
char *putHex(char *p, uint64_t value) {
  const unsigned digits = value ? (64 - llvm::countLeadingZeros(value) + 3) / 4 : 1;
  *p++ = '0';
  *p++ = 'x';
  for (char *q = p + digits; q != p; value >>= 4)
    *--q = "0123456789abcdef"[value & 15];
  return p + digits;
}

/// `value` in decimal, right-justified in `width` columns: at most max(width, 20) bytes.
char *putDecimal(char *p, uint64_t value, size_t width = 0) {
  char digits[20];
  char *const end = digits + sizeof digits;
  char *d = end;
  do {
    *--d = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value);
  const auto length = static_cast<size_t>(end - d);
  if (width > length) {
    std::memset(p, ' ', width - length);
    p += width - length;
  }
  return putText(p, llvm::StringRef(d, length));
}

} // namespace

void writeHeapListingJson(const Snapshot &snapshot, const HeapListing &listing,
                          llvm::raw_ostream &out) {
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
  // Millions of lines: formatted in memory (RowBlock), without printf or temporaries.
  {
    RowBlock rows(out);
    for (size_t i = 0; i < listing.allocations.size(); ++i) {
      const ListedAllocation &a = listing.allocations[i];
      const llvm::StringRef state = stateName(a.state), walker = listing.heaps[a.heap].walker;
      char *p = rows.room(256 + state.size() + walker.size());
      p = putText(p, i ? ",\n    {\"address\": \"" : "\n    {\"address\": \"");
      p = putHex(p, a.address);
      p = putText(p, "\", \"size\": ");
      p = putDecimal(p, a.size);
      p = putText(p, ", \"chunk\": \"");
      p = putHex(p, a.chunk);
      p = putText(p, "\", \"state\": \"");
      p = putText(p, state);
      p = putText(p, a.mmapped ? "\", \"mmapped\": true, \"arena\": \""
                               : "\", \"mmapped\": false, \"arena\": \"");
      p = putHex(p, a.arena);
      p = putText(p, "\", \"walker\": \"");
      p = putText(p, walker);
      rows.wrote(putText(p, "\"}"));
    }
  }
  out << (listing.allocations.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

void writeHeapListingText(const Snapshot &snapshot, const HeapListing &listing,
                          llvm::raw_ostream &out) {
  out << printable(snapshot.path) << ": " << formatName(snapshot.format) << " "
      << printable(snapshot.system.os) << "/" << printable(snapshot.system.arch) << "\n";
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
  RowBlock rows(out);
  for (const ListedAllocation &a : listing.allocations) {
    const llvm::StringRef state = stateName(a.state), walker = listing.heaps[a.heap].walker;
    char *p = rows.room(192 + state.size() + walker.size());
    p = padTo(p, putHex(p, a.address), 18);
    *p++ = ' ';
    p = putDecimal(p, a.size, 12);
    *p++ = ' ';
    p = padTo(p, putText(p, state), 7);
    *p++ = ' ';
    p = padTo(p, putText(p, a.mmapped ? "yes" : "no"), 7);
    *p++ = ' ';
    // An mmapped chunk belongs to no arena.
    p = padTo(p, a.arena ? putHex(p, a.arena) : putText(p, "-"), 18);
    *p++ = ' ';
    p = putText(p, walker);
    *p++ = '\n';
    rows.wrote(p);
  }
}

} // namespace dumpsift
