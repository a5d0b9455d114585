// What the mimalloc walker reads from a process: its segments, their pages, and the blocks that
// other threads freed into full pages (heaps' delayed-free lists). Internal to src/heap/mimalloc.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/support/diagnostics.h"
#include "mimalloc_layout.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift::mimalloc {

/// A segment header that passed the structural checks (readSegment).
struct Segment {
  uint64_t address = 0;
  const uint8_t *header = nullptr; // kSegment.header_size captured bytes at `address`
  uint64_t key = 0;                // cookie ^ address: _mi_heap_main.cookie in a real segment
  uint32_t kind = kKindNormal;
  uint64_t slices = 0;        // segment_slices
  uint64_t info_slices = 0;   // slices the header takes
  uint64_t slice_entries = 0; // descriptors in use
  uint64_t used = 0;          // pages in use, by the header
  uint64_t thread_id = 0;     // 0: abandoned (its thread exited) or unused (in the cache)

  uint64_t end() const { return address + slices * kSliceSize; }
};

/// The header at `address` (a multiple of kSegmentSize) as a segment, when it is captured and
/// its fields are those of a mimalloc 2.0.9 segment: kind 0 or 1, 512 slices when normal, as many
/// entries as slices (at most 512), the header's own page first, no more pages in use than
/// entries, and all of its slices in mapped memory. The cookie is not checked here (its key is
/// returned for the vote).
std::optional<Segment> readSegment(const AddressSpace &memory, uint64_t address);

/// Every segment in captured heap- or anonymous-class memory, by address. Bounded by the number
/// of 32 MiB-aligned addresses the dump holds.
std::vector<Segment> findSegments(const AddressSpace &memory);

/// One page in use (a run of slices holding blocks of one size), decoded from its descriptor.
struct Page {
  uint64_t descriptor = 0; // address of its mi_page_t in the segment header
  uint64_t start = 0;      // the first block
  uint64_t block_size = 0; // mi_usable_size of a block start
  uint32_t capacity = 0;   // blocks [0, capacity) were handed out at least once
  uint32_t reserved = 0;
  uint32_t used = 0;
  uint8_t flags = 0;
  uint64_t free = 0, local_free = 0, thread_free = 0; // list heads (thread_free's flags cleared)
  uint64_t heap = 0;                                  // the owning mi_heap_t, 0 when abandoned
  uint64_t slice_index = 0;
  uint64_t slice_count = 0;

  uint64_t blocksEnd() const { return start + uint64_t(capacity) * block_size; }
  /// The index of the block starting at `addr`, or -1 when none of [0, capacity) does.
  int64_t blockIndex(uint64_t addr) const {
    if (addr < start || addr >= blocksEnd() || (addr - start) % block_size != 0)
      return -1;
    return static_cast<int64_t>((addr - start) / block_size);
  }
};

/// Why a segment's walk of its slice descriptors stopped early ("" when it did not).
struct PageWalkEnd {
  uint64_t where = 0;
  std::string why;
};

/// Calls on_page for every page in use of `segment`, in slice order, from the first slice after
/// the header to slice_entries (a huge segment's one page may run further). A descriptor that is
/// not the first of its run, or a run past the segment's end, stops the walk: returns where and
/// why. A page whose geometry is impossible (capacity above reserved, blocks past the page) is
/// skipped, with a warning in `diags` unless it is null. Reads only the header view; at most 512
/// steps.
PageWalkEnd forEachPage(const Segment &segment, llvm::function_ref<void(const Page &)> on_page,
                        Diagnostics *diags);

/// The page in use of `segments` (sorted) whose block starts at `addr`; false when none does.
bool pageOfBlock(const std::vector<Segment> &segments, uint64_t addr, Page &page);

/// Blocks on the delayed-free lists (mi_heap_t::thread_delayed_free) of `heaps`: freed by other
/// threads into full pages, still counted in their pages' `used`. A list that leaves the blocks of
/// `segments` or repeats a block is cut there with a warning. At most `max_blocks` steps in all.
/// Sorted, unique.
std::vector<uint64_t> delayedFrees(const AddressSpace &memory, const std::vector<Segment> &segments,
                                   const std::vector<uint64_t> &heaps, uint64_t max_blocks,
                                   Diagnostics &diags);

/// How complete a page's free lists were.
enum class ListEnd : uint8_t { Complete, Foreign, Repeat, NotCaptured };

/// Marks in `free_bits` (one bit per block of `page`) the blocks on the list that starts at
/// `head`; `blocks` is a view of the page's blocks or nullptr (then links are read through
/// `memory`). Stops at a pointer that is not a block of this page (Foreign), a block already
/// marked (Repeat: a loop, or a block on two lists), or an uncaptured link; `stop` is the address
/// there. At most `capacity` steps. `marked` counts the blocks this list added.
ListEnd markList(const AddressSpace &memory, const Page &page, const uint8_t *blocks, uint64_t head,
                 std::vector<uint64_t> &free_bits, uint32_t &marked, uint64_t &stop);

} // namespace dumpsift::mimalloc
