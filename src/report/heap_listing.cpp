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

namespace dumpsift {

using namespace detail;

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
  // Millions of lines: formatted straight into the stream, without printf or temporaries.
  auto hex = [&out](uint64_t v) { llvm::write_hex(out, v, llvm::HexPrintStyle::PrefixLower); };
  for (size_t i = 0; i < listing.allocations.size(); ++i) {
    const ListedAllocation &a = listing.allocations[i];
    out << (i ? ",\n" : "\n") << "    {\"address\": \"";
    hex(a.address);
    out << "\", \"size\": " << a.size << ", \"chunk\": \"";
    hex(a.chunk);
    out << "\", \"state\": \"" << stateName(a.state)
        << "\", \"mmapped\": " << (a.mmapped ? "true" : "false") << ", \"arena\": \"";
    hex(a.arena);
    out << "\", \"walker\": \"" << listing.heaps[a.heap].walker << "\"}";
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
  auto hexColumn = [&out](uint64_t v) { // "0x..." left-justified in 18 columns
    llvm::write_hex(out, v, llvm::HexPrintStyle::PrefixLower);
    const unsigned digits = v ? (64 - llvm::countLeadingZeros(v) + 3) / 4 : 1;
    out.indent(16 - digits);
  };
  for (const ListedAllocation &a : listing.allocations) {
    hexColumn(a.address);
    out << ' ' << llvm::format_decimal(a.size, 12) << ' '
        << llvm::left_justify(stateName(a.state), 7) << ' '
        << llvm::left_justify(a.mmapped ? "yes" : "no", 7) << ' ';
    if (a.arena)
      hexColumn(a.arena);
    else
      out << llvm::left_justify("-", 18); // an mmapped chunk belongs to no arena
    out << ' ' << listing.heaps[a.heap].walker << '\n';
  }
}

} // namespace dumpsift
