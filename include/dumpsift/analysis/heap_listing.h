// The heap listing (`dumpsift heap`): every heap the walkers recognise and the allocations that
// pass the size and state filters, by address, kept compact (a heap may hold millions). The
// report layer writes it (dumpsift/report/heap_listing.h).
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walk.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/diagnostics.h"

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

/// Walks every heap of the walkers `options` names (every one that detects its heaps when it names
/// none) on options.threads threads and lists the allocations that pass its size and state
/// filters (as analyze keeps buffers), by address; what two walkers both claim is ordered by
/// walker, then the other columns. The other options are not used. The listing is the same for
/// every thread count. Never fails: damage becomes diagnostics.
HeapListing listHeaps(
    const AddressSpace &memory, const AnalyzeOptions &options,
    ProgressFn progress = [](llvm::StringRef, uint64_t, uint64_t) {});

} // namespace dumpsift
