// The heap listing (heap_listing.h): the walk, filtered and merged as analyze's, kept compact.
#include "dumpsift/analysis/heap_listing.h"

#include "kept_walk.h"

#include <sys/mman.h>
#include <tuple>

namespace dumpsift {

ListedRows::Block ListedRows::newBlock() {
  // Twice the size, so that an aligned block lies inside; the rest is given back.
  const size_t span = 2 * kBlockBytes;
  void *mapped = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED)
    throw std::bad_alloc();
  const auto start = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = (start + kBlockBytes - 1) & ~(kBlockBytes - 1);
  if (aligned > start)
    munmap(mapped, aligned - start);
  if (start + span > aligned + kBlockBytes)
    munmap(reinterpret_cast<void *>(aligned + kBlockBytes), start + span - aligned - kBlockBytes);
  auto *block = reinterpret_cast<void *>(aligned);
  (void)madvise(block, kBlockBytes, MADV_HUGEPAGE); // advice: small pages where refused
  return Block(static_cast<ListedAllocation *>(block));
}

void ListedRows::FreeBlock::operator()(ListedAllocation *block) const {
  munmap(block, kBlockBytes);
}

HeapListing listHeaps(const AddressSpace &memory, const AnalyzeOptions &options,
                      ProgressFn progress) {
  HeapListing listing;
  listing.min_size = options.min_size;
  // By address (a walker's areas do not overlap); the other columns order what two walkers both
  // claim, whatever thread walked it.
  auto before = [](const ListedAllocation &a, const ListedAllocation &b) {
    return std::tie(a.address, a.heap, a.chunk, a.size, a.arena, a.state, a.mmapped) <
           std::tie(b.address, b.heap, b.chunk, b.size, b.arena, b.state, b.mmapped);
  };
  auto kept = detail::keepWalked<ListedRows>(
      memory, options, listing.diagnostics, progress,
      [](uint16_t heap, const Allocation &a) {
        return ListedAllocation{a.address, a.size,  a.chunk_address, a.arena,
                                heap,      a.state, a.mmapped};
      },
      before);
  listing.heaps = std::move(kept.heaps);
  listing.allocations = std::move(kept.rows);
  return listing;
}

} // namespace dumpsift
