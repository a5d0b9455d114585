// CoreCLR's GC handle table segments, found by their shape.
//
// Layout (dotnet/runtime src/coreclr/gc/handletablepriv.h and handletableconstants.h; the same in
// .NET Core 2.0, read there with gdb over libcoreclr's g_HandleTableMap): a segment is 64 KiB,
// aligned to 64 KiB, a 4 KiB header then 7,680 handle slots of 8 bytes in 120 blocks of 64. The
// header is packed:
//   +0     u8  rgGeneration[120 * 4]
//   +480   u8  rgAllocation[120]      next block of an allocation chain, or 0xFF
//   +600   u32 rgFreeMask[240]        a set bit: that slot is free (two masks per block)
//   +1560  u8  rgBlockType[120]       the handle type of the block, or 0xFF (a free block)
//   +1680  u8  rgUserData[120], +1800 u8 rgLocks[120]
//   +1920  u8  rgTail[T], u8 rgHint[T], u32 rgFreeCount[T]   (T = HANDLE_MAX_INTERNAL_TYPES)
//   +1920 + 6T: TableSegment *pNextSegment; HandleTable *pHandleTable; u8 flags, bFreeList,
//               bEmptyLine, bCommitLine (blocks below it are committed), bDecommitLine, bSequence
// T is 12 up to .NET 8 and 13 since (.NET Core 2.0: 12, pHandleTable at +2000, seen). The last
// type (T - 1) marks the blocks that hold other blocks' user data. Handle types (gcinterface.h):
// 0 weak short, 1 weak long, 2 strong, 3 pinned, 4 variable, 5 ref-counted, 6 dependent, 7 async
// pinned, 8 sized ref, 9+ weak kinds (WinRT, native COM, interior pointers). A slot handed to a
// handle cache counts as in use but holds null.
#include "clr_handles.h"

#include "dumpsift/dump/words.h"

#include <algorithm>
#include <optional>

namespace dumpsift {
namespace {

constexpr uint64_t kSegmentSize = 0x10000, kHeaderSize = 0x1000;
constexpr uint64_t kSlotsPerBlock = 64, kBlockBytes = 8 * kSlotsPerBlock;
constexpr unsigned kBlocks = (kSegmentSize - kHeaderSize) / kBlockBytes; // 120
constexpr uint64_t kAllocation = 480, kFreeMasks = 600, kBlockTypes = 1560, kChainArrays = 1920;
constexpr uint8_t kNone = 0xFF;
/// More segments than any process has (each holds 7,680 handles): the shape is chance.
constexpr uint64_t kMaxSegments = 4096;

/// Handle types that keep their object alive; variable and ref-counted ones may (counted strong).
bool strongType(uint8_t type) {
  switch (type) {
  case 2: // strong
  case 3: // pinned
  case 4: // variable: its type is in the block's user data
  case 5: // ref-counted: strong while counted
  case 7: // async pinned
  case 8: // sized ref
    return true;
  default:
    return false;
  }
}

/// Whether `address` lies in one of `areas` (sorted by start).
bool inAreas(llvm::ArrayRef<HeapArea> areas, uint64_t address) {
  auto it = std::upper_bound(areas.begin(), areas.end(), address,
                             [](uint64_t a, const HeapArea &area) { return a < area.start; });
  return it != areas.begin() && address - std::prev(it)->start < std::prev(it)->size;
}

/// One segment's slots in use that hold an object.
struct SegmentSlots {
  std::vector<uint64_t> strong; // slot addresses
  uint64_t weak = 0;
  uint64_t in_areas = 0, elsewhere = 0; // where the objects they hold lie
};

/// The segment at `at` read with `types` handle types, when its header has the shape; nullopt
/// otherwise. Blocks whose slots the dump lacks are passed over.
std::optional<SegmentSlots> readSegment(const AddressSpace &memory, uint64_t at, unsigned types,
                                        llvm::ArrayRef<HeapArea> gc_areas) {
  const uint8_t *header = memory.tryView(at, kHeaderSize);
  if (!header)
    return std::nullopt;
  const uint64_t links = kChainArrays + 6 * uint64_t(types);
  const uint64_t next = read64le(header + links), table = read64le(header + links + 8);
  const uint8_t commit_line = header[links + 19];
  if (table == 0 || table % 8 != 0 || next % kSegmentSize != 0 || commit_line == 0 ||
      commit_line > kBlocks || !memory.readU64(table))
    return std::nullopt;
  for (unsigned b = 0; b < kBlocks; ++b) {
    const uint8_t type = header[kBlockTypes + b], chain = header[kAllocation + b];
    if ((type != kNone && type >= types) || (chain != kNone && chain >= kBlocks))
      return std::nullopt;
  }
  SegmentSlots out;
  for (unsigned b = 0; b < commit_line; ++b) {
    const uint8_t type = header[kBlockTypes + b];
    if (type == kNone || type == types - 1) // a free block, or one of user data
      continue;
    const uint64_t block = at + kHeaderSize + b * kBlockBytes;
    const uint8_t *slots = memory.tryView(block, kBlockBytes);
    if (!slots)
      continue;
    const uint64_t free_mask = uint64_t(read32le(header + kFreeMasks + 8 * b)) |
                               uint64_t(read32le(header + kFreeMasks + 8 * b + 4)) << 32;
    for (unsigned i = 0; i < kSlotsPerBlock; ++i) {
      const uint64_t object = read64le(slots + 8 * i);
      if ((free_mask >> i & 1) || object == 0)
        continue;
      ++(inAreas(gc_areas, object) ? out.in_areas : out.elsewhere);
      if (strongType(type))
        out.strong.push_back(block + 8 * i);
      else
        ++out.weak;
    }
  }
  return out;
}

} // namespace

ClrHandles findClrHandles(const AddressSpace &memory, llvm::ArrayRef<HeapArea> gc_areas) {
  ClrHandles found;
  if (memory.snapshot().system.pointer_size != 8)
    return found;
  std::vector<uint64_t> strong;
  for (const MemoryRange &m : memory.snapshot().memory) {
    const Region *region = memory.regionContaining(m.start);
    if (!region || !region->perms.write)
      continue;
    // Each 64 KiB boundary whose header the range holds; no sum wraps (a range may end at 2^64).
    const uint64_t skip = (kSegmentSize - m.start % kSegmentSize) % kSegmentSize;
    for (uint64_t offset = skip; offset < m.bytes.size() && m.bytes.size() - offset >= kHeaderSize;
         offset += kSegmentSize) {
      const uint64_t at = m.start + offset;
      if (inAreas(gc_areas, at))
        continue;
      for (unsigned types : {12u, 13u}) {
        std::optional<SegmentSlots> s = readSegment(memory, at, types, gc_areas);
        // Three in four of the objects held lie in the GC heap: a handle table, not chance. Not
        // all: objects of the allocation contexts lie past the ephemeral segment's `allocated`,
        // where the walk ends (2 of 15 in the Holders.cs core, whose program pinned none).
        if (!s || s->in_areas == 0 || s->in_areas * 4 < (s->in_areas + s->elsewhere) * 3)
          continue;
        if (++found.segments > kMaxSegments)
          return ClrHandles{};
        found.handle_types = types;
        found.strong += s->strong.size();
        found.weak += s->weak;
        strong.insert(strong.end(), s->strong.begin(), s->strong.end());
        break;
      }
    }
  }
  std::sort(strong.begin(), strong.end());
  for (uint64_t slot : strong) {
    if (!found.strong_slots.empty() &&
        found.strong_slots.back().start + found.strong_slots.back().size == slot)
      found.strong_slots.back().size += 8;
    else
      found.strong_slots.push_back({"gc-handle", slot, 8, 0});
  }
  return found;
}

} // namespace dumpsift
