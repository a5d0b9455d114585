// What `dumpsift heap` prints: each walker's heaps (facts, counts, areas), the warnings, and the
// allocations that passed its filters, by address, as JSON (streamed) or as text (docs/cli.md).
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/diagnostics.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace dumpsift {

/// One allocation as the listing shows it: compact, since a heap may hold millions.
struct ListedAllocation {
  uint64_t address, size, chunk, arena;
  uint16_t heap; // index into HeapListing::heaps
  AllocState state;
  bool mmapped;
};

/// The rows of a listing, in blocks that never move: appending a million rows copies none (a
/// vector grown by doubling copied each row about twice, and faulted in the pages of every size
/// it grew through). A block is 2 MiB, aligned and advised as a transparent huge page where the
/// system allows it: one page fault per block instead of one per 4 KiB (the faults were a fifth
/// of `heap --min-size 0`'s time).
class ListedRows {
public:
  static constexpr size_t kBlockBytes = size_t(2) << 20;
  static constexpr size_t kBlockRows = kBlockBytes / sizeof(ListedAllocation);

  void push_back(const ListedAllocation &row) {
    if (size_ % kBlockRows == 0)
      blocks_.push_back(newBlock());
    new (&blocks_.back()[size_ % kBlockRows]) ListedAllocation(row); // into raw memory
    ++size_;
  }
  const ListedAllocation &operator[](size_t i) const {
    return blocks_[i / kBlockRows][i % kBlockRows];
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

private:
  struct FreeBlock {
    void operator()(ListedAllocation *block) const;
  };
  using Block = std::unique_ptr<ListedAllocation[], FreeBlock>;
  static Block newBlock(); // uninitialized; throws std::bad_alloc when out of memory

  std::vector<Block> blocks_;
  size_t size_ = 0;
};

struct HeapListing {
  std::vector<HeapWalkResult> heaps; // one per walker that walked, in registry order
  ListedRows allocations;            // by address
  uint64_t min_size = 0;             // the smallest size listed, for the text's heading
  Diagnostics diagnostics;           // the walkers' warnings (the snapshot keeps its own)
};

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
