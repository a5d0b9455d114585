// The directory of blocks (the graph's nodes) and the filter in front of its lookups. Internal to
// src/holders.
#pragma once

#include "dumpsift/holders/holders.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace dumpsift::holders {

/// What an entry of the directory is.
enum EntryFlags : uint8_t {
  kHolds = 1,   // its words may be references: a listed block that is not free and not noscan
  kTarget = 2,  // a buffer whose holders are wanted
  kPartial = 4, // listed by a walker whose list is partial (BlockListing::Partial)
  kNoscan = 8,  // its allocator records that it holds no pointers (Go's noscan spans)
  kFree = 16,   // a free block (a target): its words are no references
  kListed = 32, // a walker lists it (else a region scan buffer)
};

inline constexpr uint32_t kNoEntry = std::numeric_limits<uint32_t>::max();

/// Blocks sorted by start, not overlapping: [starts[i], ends[i]) with flags[i], listed by heaps[i].
/// About 19 bytes each.
class Directory {
public:
  std::vector<uint64_t> starts, ends;
  std::vector<uint8_t> flags;
  std::vector<uint16_t> heaps; // the walker result listing it (HolderTarget::kNoHeap: none)

  size_t size() const { return starts.size(); }
  /// The entry whose block holds `address`, or kNoEntry.
  uint32_t find(uint64_t address) const {
    const uint64_t *first = starts.data(), *last = first + starts.size();
    // upper_bound, branch-light: the last start at or below `address`.
    size_t n = starts.size();
    const uint64_t *base = first;
    while (n > 1) {
      const size_t half = n / 2;
      base = base[half] <= address ? base + half : base;
      n -= half;
    }
    if (base == last || *base > address)
      return kNoEntry;
    const uint32_t i = static_cast<uint32_t>(base - first);
    return address < ends[i] ? i : kNoEntry;
  }
  /// The lowest start and the highest end (0, 0 when empty).
  uint64_t lowest() const { return starts.empty() ? 0 : starts.front(); }
  uint64_t highest() const { return highest_end_; }
  void setHighest(uint64_t end) { highest_end_ = end; }

private:
  uint64_t highest_end_ = 0;
};

/// Answers "may `value` point into a block of the directory?" before a binary search does: no when
/// it lies outside [lowest, highest) or on a page no block touches. Two levels: the address range
/// in granules of at least 1 GiB (at most 2^17 of them), each with a bitmap of its 2^18 pages when
/// a block touches it. Granules wholly inside a block, and granules past the bitmap budget, answer
/// "maybe" (the search decides).
class PageFilter {
public:
  /// Builds the filter of `directory`, with at most `max_bitmaps` bitmaps of 32 KiB.
  void build(const Directory &directory, size_t max_bitmaps);

  /// Every block lies in [low(), low() + span()): the first test of maybe, which the pass makes on
  /// several words at once.
  uint64_t low() const { return lo_; }
  uint64_t span() const { return span_; }

  bool maybe(uint64_t value) const {
    const uint64_t off = value - lo_;
    if (off >= span_)
      return false;
    const uint32_t slot = granules_[off >> granule_shift_];
    if (slot <= kAll)
      return slot == kAll;
    const uint64_t page = (off >> page_shift_) & (kPagesPerGranule - 1);
    return (bits_[size_t(slot - kFirstBitmap) * kWordsPerBitmap + page / 64] >> (page % 64)) & 1;
  }

private:
  static constexpr uint32_t kNone = 0, kAll = 1, kFirstBitmap = 2;
  static constexpr unsigned kPageBits = 18;
  static constexpr uint64_t kPagesPerGranule = uint64_t(1) << kPageBits;
  static constexpr size_t kWordsPerBitmap = kPagesPerGranule / 64;

  uint64_t lo_ = 0, span_ = 0; // [lo_, lo_ + span_) holds every block
  unsigned granule_shift_ = 30, page_shift_ = 12;
  std::vector<uint32_t> granules_; // kNone, kAll or kFirstBitmap + bitmap index
  std::vector<uint64_t> bits_;
};

using Lanes = std::vector<std::vector<BlockDirectoryBuilder::Entry>>;

/// Adds to `lanes` every object of each walker result whose ObjectFinder gives them
/// (ObjectFinder::eachObject), in a lane of its own, while the directory stays within `budget`
/// blocks. Returns, per walker result, whether its objects were added: its walker's listing is then
/// complete for the pass, and paths run through the objects the walker does not list.
std::vector<bool> addFinderObjects(Lanes &lanes, llvm::ArrayRef<HeapWalkResult> heaps,
                                   uint64_t budget);

/// Per walker result: its walker lists only some of its blocks (BlockListing::Partial), and neither
/// `completed` (from addFinderObjects; empty: none) says the directory got the rest nor the walk
/// says it listed them all this time (HeapWalkResult::every_object_listed).
std::vector<bool> partialHeaps(llvm::ArrayRef<HeapWalkResult> heaps,
                               const std::vector<bool> &completed);

/// The directory of `lanes` (the builder's, and addFinderObjects') and `targets` (sorted by
/// address): every block, kListed, with kHolds unless noscan (then kNoscan), kPartial for the
/// blocks of walker results `partial` says, and each target marked kTarget (a target that is no
/// listed block, a free block (kFree, kListed) or a region scan buffer, is an entry of its own
/// without kHolds). A block its walker listed and its finder gave too is one entry, the finder's
/// (which knows whether it holds references). A block that overlaps the one before it is dropped
/// (counted in `dropped`), unless it is a target. `target_entries` gets each target's entry.
Directory buildDirectory(Lanes lanes, const std::vector<bool> &partial,
                         llvm::ArrayRef<HolderTarget> targets,
                         std::vector<uint32_t> &target_entries, uint64_t &dropped);

/// The directory of the targets alone (every entry kTarget; kHolds as in `full`, where each target
/// is entry target_entries[i]), for a pass that looks for references into them only.
Directory targetDirectory(const Directory &full, const std::vector<uint32_t> &target_entries);

} // namespace dumpsift::holders
