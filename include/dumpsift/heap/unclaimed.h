// Memory no heap walker explained. Heap- and anonymous-class bytes of the dump that lie outside
// every walker's areas are reported, and scanned for content by the analysis (the region scan), so
// that nothing large is silently missed (an allocator no walker knows, a heap a walker could not
// find, a custom mmap pool).
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "dumpsift/heap/walker.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace dumpsift {

/// A stretch of captured memory that no walker claimed.
struct UnclaimedRange {
  uint64_t start = 0;
  uint64_t size = 0;
  RegionClass cls = RegionClass::Anonymous; // the class of the region it lies in
  uint64_t end() const { return start + size; }
};

/// The captured bytes of Heap- and Anonymous-class regions not covered by any of `areas` (from
/// all walkers; any order, may overlap), sorted by start. Each range lies inside one memory range
/// of the snapshot and one region, so AddressSpace::tryView gives it whole; ranges are not merged
/// across those boundaries. Bytes that are mapped but not captured are not reported (there is
/// nothing to show).
std::vector<UnclaimedRange> unclaimedRanges(const Snapshot &snapshot,
                                            llvm::ArrayRef<HeapArea> areas);

} // namespace dumpsift
