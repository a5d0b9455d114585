// What `dumpsift heap` prints: each walker's heaps (facts, counts, areas), the warnings, and the
// allocations that passed its filters, by address, as JSON (streamed) or as text (docs/cli.md).
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/diagnostics.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <vector>

namespace dumpsift {

/// One allocation as the listing shows it: compact, since a heap may hold millions.
struct ListedAllocation {
  uint64_t address, size, chunk, arena;
  uint16_t heap; // index into HeapListing::heaps
  AllocState state;
  bool mmapped;
};

struct HeapListing {
  std::vector<HeapWalkResult> heaps;         // one per walker that walked, in registry order
  std::vector<ListedAllocation> allocations; // by address
  uint64_t min_size = 0;                     // the smallest size listed, for the text's heading
  Diagnostics diagnostics;                   // the walkers' warnings (the snapshot keeps its own)
};

/// The listing as JSON: schema_version, dump, heaps, diagnostics, then the allocations, written
/// one by one (a million allocations cost no more memory than their list).
void writeHeapListingJson(const Snapshot &snapshot, const HeapListing &listing,
                          llvm::raw_ostream &out);

/// The listing for people: the dump in one line, each walker's facts, counts and areas, the
/// warnings, then one row per allocation.
void writeHeapListingText(const Snapshot &snapshot, const HeapListing &listing,
                          llvm::raw_ostream &out);

} // namespace dumpsift
