// What `dumpsift heap` prints: each walker's heaps (facts, counts, areas), the warnings, and the
// allocations that passed its filters, by address (the analysis layer's HeapListing), as JSON
// (streamed) or as text (docs/cli.md).
#pragma once

#include "dumpsift/analysis/heap_listing.h"
#include "dumpsift/dump/snapshot.h"

#include "llvm/Support/raw_ostream.h"

namespace dumpsift {

/// The listing as JSON: schema_version, dump, heaps, diagnostics, then the allocations, streamed
/// (a million allocations cost no more memory than their list). The rows are formatted on
/// `threads` threads (0: one per core) in pieces written in order: the bytes are the same for
/// every thread count.
void writeHeapListingJson(const Snapshot &snapshot, const HeapListing &listing,
                          llvm::raw_ostream &out, unsigned threads = 1);

/// The listing for people: the dump in one line, each walker's facts, counts and areas, the
/// warnings, then one row per allocation (formatted as writeHeapListingJson's).
void writeHeapListingText(const Snapshot &snapshot, const HeapListing &listing,
                          llvm::raw_ostream &out, unsigned threads = 1);

} // namespace dumpsift
