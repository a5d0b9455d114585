// Finding mimalloc segments by their headers, decoding their page descriptors, and following the
// free lists: the parts of the mimalloc walker that read the dump.
#include "dumpsift/support/hex.h"
#include "mimalloc_model.h"

#include <algorithm>

namespace dumpsift::mimalloc {

namespace {

/// The descriptor of slice `index` (< kSlicesPerSegment + 1) in the header view.
const uint8_t *sliceDescriptor(const Segment &segment, uint64_t index) {
  return segment.header + kSegment.slices + index * kPage.size;
}

/// Decodes the page whose first slice is `index` (its descriptor has a non-zero slice_count and
/// a zero slice_offset) into `page`. Returns nullptr when it is a page in use with a possible
/// geometry, "" for a free span, else why the page cannot be walked.
const char *decodePage(const Segment &segment, uint64_t index, Page &page) {
  const uint8_t *d = sliceDescriptor(segment, index);
  const uint64_t xblock_size = read32le(d + kPage.xblock_size);
  if (xblock_size == 0)
    return "";
  page.descriptor = segment.address + kSegment.slices + index * kPage.size;
  page.slice_index = index;
  page.slice_count = read32le(d + kPage.slice_count);
  const uint64_t offset =
      xblock_size >= 8 && xblock_size <= kSmallBlockOffsetMax ? kSmallBlockStartOffset : 0;
  const uint64_t page_bytes = page.slice_count * kSliceSize - offset;
  page.start = segment.address + index * kSliceSize + offset;
  page.block_size = xblock_size >= kHugeBlockSize ? page_bytes : xblock_size;
  page.capacity = read16le(d + kPage.capacity);
  page.reserved = read16le(d + kPage.reserved);
  page.used = read32le(d + kPage.used);
  page.flags = d[kPage.flags];
  page.free = read64le(d + kPage.free);
  page.local_free = read64le(d + kPage.local_free);
  page.thread_free = read64le(d + kPage.xthread_free) & ~kThreadFreeFlagBits;
  page.heap = read64le(d + kPage.xheap);
  if (page.block_size < 8)
    return "block size below 8 bytes";
  if (page.capacity > page.reserved)
    return "capacity above the blocks reserved";
  if (uint64_t(page.reserved) * page.block_size > page_bytes)
    return "reserved blocks do not fit the page";
  return nullptr;
}

/// True when every byte of [start, end) lies in a region of the snapshot (mapped, captured or
/// not). At most one step per region.
bool mapped(const AddressSpace &memory, uint64_t start, uint64_t end) {
  for (uint64_t at = start; at < end;) {
    const Region *r = memory.regionContaining(at);
    if (!r)
      return false;
    at = r->end();
  }
  return true;
}

} // namespace

std::optional<Segment> readSegment(const AddressSpace &memory, uint64_t address) {
  const uint8_t *h = memory.tryView(address, kSegment.header_size);
  if (!h)
    return std::nullopt;
  Segment s;
  s.address = address;
  s.header = h;
  s.key = read64le(h + kSegment.cookie) ^ address;
  s.kind = read32le(h + kSegment.kind);
  s.slices = read64le(h + kSegment.segment_slices);
  s.info_slices = read64le(h + kSegment.info_slices);
  s.slice_entries = read64le(h + kSegment.slice_entries);
  s.used = read64le(h + kSegment.used);
  s.thread_id = read64le(h + kSegment.thread_id);
  // A huge segment holds one allocation of at most PTRDIFF_MAX bytes; 2^24 slices (1 TiB) keeps
  // every product below overflow and is far beyond any real process.
  constexpr uint64_t kMaxSlices = 1ull << 24;
  const bool normal = s.kind == kKindNormal && s.slices == kSlicesPerSegment;
  const bool huge = s.kind == kKindHuge && s.slices > s.info_slices && s.slices <= kMaxSlices;
  const uint64_t entries = std::min(s.slices, kSlicesPerSegment);
  // MI_SECURE builds keep the last slice as a guard page: one entry fewer.
  const bool entries_ok = s.slice_entries == entries || s.slice_entries + 1 == entries;
  if (!(normal || huge) || read32le(h + kSegment.kind + 4) != 0 || !entries_ok ||
      s.info_slices == 0 || s.info_slices >= s.slice_entries || s.used > s.slice_entries)
    return std::nullopt;
  const uint8_t *info = sliceDescriptor(s, 0);
  if (read32le(info + kPage.slice_count) != s.info_slices ||
      read32le(info + kPage.slice_offset) != 0)
    return std::nullopt;
  // The OS maps a segment whole (the parts not committed yet too): it cannot reach past the
  // process's mappings.
  if (s.end() < address || !mapped(memory, address, s.end()))
    return std::nullopt;
  return s;
}

std::vector<Segment> findSegments(const AddressSpace &memory) {
  std::vector<Segment> out;
  for (const MemoryRange &m : memory.snapshot().memory) {
    const Region *region = memory.regionContaining(m.start);
    if (!region || (region->cls != RegionClass::Heap && region->cls != RegionClass::Anonymous))
      continue;
    const uint64_t first = (m.start + kSegmentSize - 1) & ~(kSegmentSize - 1);
    if (first < m.start) // wrapped past 2^64
      continue;
    for (uint64_t a = first; a < m.end() && m.end() - a >= kSegment.header_size;
         a += kSegmentSize) {
      if (std::optional<Segment> s = readSegment(memory, a))
        out.push_back(*s);
      if (a > UINT64_MAX - kSegmentSize)
        break;
    }
  }
  return out;
}

PageWalkEnd forEachPage(const Segment &segment, llvm::function_ref<void(const Page &)> on_page,
                        Diagnostics *diags) {
  // A huge segment's one page may have more slices than the 512 descriptors.
  const uint64_t limit = segment.kind == kKindHuge ? segment.slices : segment.slice_entries;
  Page page;
  for (uint64_t i = segment.info_slices; i < segment.slice_entries;) {
    const uint8_t *d = sliceDescriptor(segment, i);
    const uint64_t count = read32le(d + kPage.slice_count);
    const uint64_t where = segment.address + kSegment.slices + i * kPage.size;
    if (count == 0 || read32le(d + kPage.slice_offset) != 0)
      return {where, "slice " + std::to_string(i) + " does not start a page or a free span"};
    if (count > limit - i)
      return {where, "page of " + std::to_string(count) + " slices at slice " + std::to_string(i) +
                         " runs past the segment"};
    if (const char *why = decodePage(segment, i, page); !why)
      on_page(page);
    else if (*why && diags)
      diags->warn(hexAddress(where), std::string("page descriptor: ") + why + " (block size " +
                                         std::to_string(page.block_size) + ", capacity " +
                                         std::to_string(page.capacity) + ", reserved " +
                                         std::to_string(page.reserved) +
                                         "); its blocks are not reported");
    i += count;
  }
  return {};
}

bool pageOfBlock(const std::vector<Segment> &segments, uint64_t addr, Page &page) {
  auto it = std::upper_bound(segments.begin(), segments.end(), addr,
                             [](uint64_t a, const Segment &s) { return a < s.address; });
  if (it == segments.begin())
    return false;
  const Segment &segment = *--it;
  if (addr >= segment.end())
    return false;
  uint64_t index = (addr - segment.address) / kSliceSize;
  if (index >= segment.slice_entries)
    return false; // a block starts in its page's first slices, which have descriptors
  const uint8_t *d = sliceDescriptor(segment, index);
  if (read32le(d + kPage.slice_count) == 0) {
    // An inner slice of a page: slice_offset leads back to the page's first slice.
    const uint64_t back = read32le(d + kPage.slice_offset);
    if (back == 0 || back % kPage.size != 0 || back / kPage.size > index)
      return false;
    index -= back / kPage.size;
    d = sliceDescriptor(segment, index);
    if (read32le(d + kPage.slice_count) == 0 || read32le(d + kPage.slice_offset) != 0)
      return false;
  } else if (read32le(d + kPage.slice_offset) != 0) {
    return false;
  }
  if (index < segment.info_slices || decodePage(segment, index, page) != nullptr)
    return false;
  return page.blockIndex(addr) >= 0;
}

std::vector<uint64_t> delayedFrees(const AddressSpace &memory, const std::vector<Segment> &segments,
                                   const std::vector<uint64_t> &heaps, uint64_t max_blocks,
                                   Diagnostics &diags) {
  std::vector<uint64_t> out;
  uint64_t steps = 0;
  for (uint64_t heap : heaps) {
    uint64_t node = 0;
    if (!memory.readU64(heap + kHeap.thread_delayed_free, node))
      continue; // the heap itself is not captured: nothing to read
    const std::string where = hexAddress(heap);
    // Brent's cycle finder: `tortoise` is reset at powers of two; a loop meets it.
    uint64_t tortoise = node, power = 1, lambda = 0;
    Page page;
    while (node) {
      if (++steps > max_blocks) {
        diags.warn(where, "delayed-free list runs past the number of blocks in all pages; cut");
        break;
      }
      if (!pageOfBlock(segments, node, page) || page.heap != heap) {
        diags.warn(where, "delayed-free list: " + hexAddress(node) +
                              " is not a block of a page of this heap; the list is cut there");
        break;
      }
      out.push_back(node);
      if (!memory.readU64(node, node)) {
        diags.warn(where, "delayed-free list: the link in " + hexAddress(out.back()) +
                              " is not captured; the list is cut there");
        break;
      }
      if (node == tortoise) {
        diags.warn(where, "delayed-free list loops at " + hexAddress(node) + "; cut");
        break;
      }
      if (++lambda == power) {
        tortoise = node;
        power *= 2;
        lambda = 0;
      }
    }
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    diags.warn("mimalloc", "a block is on the delayed-free lists twice; counted once");
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

ListEnd markList(const AddressSpace &memory, const Page &page, const uint8_t *blocks, uint64_t head,
                 std::vector<uint64_t> &free_bits, uint32_t &marked, uint64_t &stop) {
  marked = 0;
  for (uint64_t node = head; node;) {
    const int64_t k = page.blockIndex(node);
    stop = node;
    if (k < 0)
      return ListEnd::Foreign;
    uint64_t &word = free_bits[static_cast<uint64_t>(k) >> 6];
    const uint64_t bit = 1ull << (k & 63);
    if (word & bit)
      return ListEnd::Repeat; // every step marks a new block: at most `capacity` steps
    word |= bit;
    ++marked;
    if (blocks)
      node = read64le(blocks + (node - page.start)); // block_size >= 8: the link is in the view
    else if (!memory.readU64(node, node))
      return ListEnd::NotCaptured;
  }
  return ListEnd::Complete;
}

} // namespace dumpsift::mimalloc
