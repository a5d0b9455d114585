// The "mono" walker: arrays in the large object space (LOS) of Mono's SGen collector (64-bit),
// found without symbols. See docs/heap-managed.md for the method, what is heuristic and what could
// fool it.
//
// Layout facts used (x64; mono/mono mono/sgen/sgen-los.c, sgen-conf.h, sgen-gc.h; struct offsets
// checked against the debug info of Debian's mono-runtime 6.8.0.105 and on a core of it):
//   LOSObject (24 bytes): next, size (bit 0 = pin/mark), cardtable_mod_union, then the object.
//   LOS section: 1 MiB, 1 MiB-aligned; {next, num_free_chunks, free_chunk_map = section + 24};
//                4 KiB chunks, map byte 1 = free. Bigger objects get their own page-aligned
//                mapping.
//   objects over 8,000 bytes live in the LOS; an object's header sits at a random 8-aligned offset
//   inside the slack of its chunk run (or page) - hence a scan, not arithmetic.
//   MonoArray: vtable (bits 0-1 are GC tags), sync, bounds (NULL for SZ arrays), u32 max_length,
//              elements at +32. LOS size = align8(32 + length * element size).
//   MonoVTable: klass @0, rank @44.  MonoClass: element_class @0, rank @26, class_kind @27
//              (5 = array), name @64, element_size @136, _byval_arg @176 (data @176, type @186).
#include "dumpsift/support/bytes.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "mono_layout.h"
#include "mono_objects.h"
#include "scan.h"
#include "walkers.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace dumpsift {
namespace {

using namespace managed;

constexpr uint64_t kLosHeader = 24;        // sizeof(LOSObject)
constexpr uint64_t kArrayBounds = 16;      // MonoArray::bounds, from the object start
constexpr uint64_t kSectionSize = 1 << 20; // LOS_SECTION_SIZE
constexpr uint64_t kChunkSize = 4096;      // LOS_CHUNK_SIZE
constexpr uint64_t kSectionHeader = 24;    // sizeof(LOSSection)
constexpr uint8_t kTypeSzArray = 0x1d;     // MONO_TYPE_SZARRAY
constexpr uint8_t kTypeArray = 0x14;       // MONO_TYPE_ARRAY
constexpr uint8_t kTypeString = 0x0e;      // MONO_TYPE_STRING
constexpr uint8_t kTypeValueType = 0x11;   // MONO_TYPE_VALUETYPE
constexpr uint64_t kMaxClassName = 256;    // longest class name read
constexpr uint8_t kTypeClass = 0x12;       // MONO_TYPE_CLASS
constexpr uint8_t kTypeGenericInst = 0x15; // MONO_TYPE_GENERICINST
constexpr uint8_t kTypeObject = 0x1c;      // MONO_TYPE_OBJECT
constexpr uint64_t kMaxObjectSize = uint64_t(1) << 40;

/// The file names of Mono's runtime: the mono executable or its shared library, and the DLLs Unity
/// ships (`mono.dll` in Unity before 2017, `mono-2.0-bdwgc.dll` since: Mono built with the Boehm
/// collector, whose heap has no LOS, so the walk finds nothing there and walkHeaps says so).
constexpr ModuleName kMonoNames[] = {{"mono", ModuleName::Match::Exact},
                                     {"mono-sgen", ModuleName::Match::Exact},
                                     {"libmonosgen-2.0.so", ModuleName::Match::Prefix},
                                     {"libmono-2.0.so", ModuleName::Match::Prefix},
                                     {"mono-2.0-sgen.dll", ModuleName::Match::AnyCase},
                                     {"mono-2.0-bdwgc.dll", ModuleName::Match::AnyCase},
                                     {"mono.dll", ModuleName::Match::AnyCase}};

/// What a vtable candidate is, cached per address.
struct VTableInfo {
  bool valid = false;
  bool array = false;       // an SZ array class
  uint8_t element_type = 0; // MonoTypeEnum of the element class
  uint32_t element_size = 0;
  uint64_t klass = 0;
};

/// One LOS object found.
struct LosObject {
  uint64_t header = 0;
  uint64_t next = 0;
  uint64_t los_size = 0; // LOSObject.size without the flag bit
  uint64_t vtable = 0;
  VTableInfo type;
  uint32_t length = 0;
  uint64_t section = 0; // 0 when in its own mapping
  bool chunk_free = false;
};

class MonoWalk {
public:
  MonoWalk(const AddressSpace &memory, Diagnostics &diags, const MonoLayout &layout)
      : memory_(memory), diags_(diags), layout_(layout), bounds_(memory.snapshot()) {}

  llvm::Expected<HeapWalkResult> run(AllocationSink sink);

private:
  VTableInfo vtable(uint64_t vt) {
    if (const VTableInfo *hit = cache_.find(vt))
      return *hit;
    VTableInfo info = computeVTable(vt);
    cache_.put(vt, info);
    return info;
  }

  VTableInfo computeVTable(uint64_t vt) const {
    VTableInfo info;
    const uint8_t *v = memory_.tryView(vt, layout_.vtable_rank + 1);
    if (!v)
      return info;
    uint64_t klass = read64le(v + layout_.vtable_klass);
    if (klass == 0 || (klass & 7) != 0)
      return info;
    const uint8_t *k = memory_.tryView(klass, layout_.class_min_size);
    if (!k)
      return info;
    uint8_t kind = k[layout_.class_kind], rank = k[layout_.class_rank];
    uint8_t type = k[layout_.class_byval_type];
    if (kind == 0 || kind > 7)
      return info;
    info.klass = klass;
    if (kind != kMonoClassArray) {
      // Large non-arrays: strings, objects, or classes whose MonoType points back at the class.
      uint64_t data = read64le(k + layout_.class_byval_data);
      bool typed = type == kTypeString || type == kTypeObject ||
                   ((type == kTypeClass || type == kTypeValueType) && data == klass) ||
                   (type == kTypeGenericInst && data != 0);
      info.valid = rank == 0 && v[layout_.vtable_rank] == 0 && typed;
      return info;
    }
    uint64_t element = read64le(k + layout_.class_element_class);
    uint32_t element_size = read32le(k + layout_.class_element_size);
    if (rank == 0 || rank > 32 || v[layout_.vtable_rank] != rank || element == 0 ||
        element_size == 0 || element_size > 0x10000)
      return info;
    const uint8_t *e = memory_.tryView(element, layout_.class_min_size);
    if (!e)
      return info;
    info.element_size = element_size;
    info.element_type = e[layout_.class_byval_type];
    if (type == kTypeSzArray) {
      // An SZ array's MonoType points at its element class: a cheap cross-check of the layout.
      if (read64le(k + layout_.class_byval_data) != element)
        return info;
      info.array = true;
    } else if (type != kTypeArray) {
      return info;
    }
    info.valid = true;
    return info;
  }

  /// Checks for a LOS object header at `p` (address `addr`) with `avail` captured bytes from it.
  bool headerAt(const uint8_t *p, uint64_t addr, uint64_t avail, LosObject &out) {
    if (avail < kLosHeader + kMonoArrayData)
      return false;
    uint64_t size = read64le(p + 8) & ~uint64_t(1);
    if (size <= kMaxSmallObject || size > kMaxObjectSize || (size & 7) != 0 ||
        kLosHeader + size > avail)
      return false;
    uint64_t next = read64le(p);
    if ((next & 7) != 0)
      return false;
    uint64_t vt = read64le(p + kLosHeader) & ~uint64_t(7);
    if (vt == 0 || !bounds_.contains(vt))
      return false;
    VTableInfo type = vtable(vt);
    if (!type.valid)
      return false;
    const uint8_t *obj = p + kLosHeader;
    uint32_t length = 0;
    if (type.array) {
      if (read64le(obj + kArrayBounds) != 0)
        return false;
      length = read32le(obj + kMonoArrayLength);
      if (alignUp8(kMonoArrayData + uint64_t(length) * type.element_size) != size)
        return false;
    }
    out = LosObject{addr, next, size, vt, type, length, 0, false};
    return true;
  }

  /// Fills in the section of `o` and whether the free-chunk map marks its first chunk free.
  void placeInSection(LosObject &o) const {
    uint64_t section = o.header & ~(kSectionSize - 1);
    const uint8_t *s = memory_.tryView(section, kSectionHeader + kSectionSize / kChunkSize);
    if (!s || read64le(s + 16) != section + kSectionHeader ||
        read64le(s + 8) > kSectionSize / kChunkSize)
      return;
    if (o.header + kLosHeader + o.los_size > section + kSectionSize)
      return;
    o.section = section;
    o.chunk_free = s[kSectionHeader + (o.header - section) / kChunkSize] == 1;
  }

  std::string arrayName(const LosObject &o) const;

  /// The live objects of the major heap block at `p` (address `at`, kMajorBlockSize captured
  /// bytes) when its MSBlockInfo reads as one (an object size SGen uses, a state, a use count and
  /// free list that fit the block) and its slots hold objects of valid vtables or free-list
  /// links only; nullopt otherwise, or when no slot holds an object.
  std::optional<uint64_t> majorBlockAt(const uint8_t *p, uint64_t at) {
    const uint64_t size = read16le(p);
    if (size < 16 || size > kMaxSmallObject || (size & 7) != 0 || read16le(p + 2) >= 128 ||
        read32le(p + 4) > 4)
      return std::nullopt;
    const uint64_t slots = (kMajorBlockSize - kMajorBlockSkip) / size;
    const uint64_t used = read16le(p + 8), free_list = read64le(p + 16), next = read64le(p + 24);
    if (used > slots || (next & (kMajorBlockSize - 1)) != 0 ||
        (free_list && (free_list - at < kMajorBlockSkip || free_list - at >= kMajorBlockSize ||
                       (free_list - at - kMajorBlockSkip) % size != 0)))
      return std::nullopt;
    uint64_t live = 0;
    for (uint64_t i = 0; i < slots; ++i) {
      const uint64_t word = read64le(p + kMajorBlockSkip + i * size);
      if ((word & ~kVTableTagBits) == 0 || word - at < kMajorBlockSize)
        continue; // free
      if (!slotVTable(word & ~kVTableTagBits))
        return std::nullopt;
      ++live;
    }
    return live ? std::optional<uint64_t>(live) : std::nullopt;
  }

  /// True when `vt` reads as a vtable of some class: its class is readable, of a known kind, and
  /// from an image. Looser than vtable(): a major block's header already vouched for its slots,
  /// which hold every kind of object (boxed primitives too).
  bool slotVTable(uint64_t vt) {
    if (const VTableInfo *hit = cache_.find(vt))
      if (hit->klass)
        return true;
    const std::optional<uint64_t> klass = memory_.readU64(vt + layout_.vtable_klass);
    if (!klass || *klass == 0 || (*klass & 7) != 0)
      return false;
    const uint8_t *k = memory_.tryView(*klass, layout_.class_min_size);
    return k && k[layout_.class_kind] >= 1 && k[layout_.class_kind] <= 7 &&
           read64le(k + layout_.class_image) != 0;
  }

  /// The size of the lock-free allocator's superblock at `at` (which must end by `end`): its
  /// first word is its Descriptor, whose block size is a power of two `at` is aligned to, whose
  /// first slot lies just past the header, and whose slot count is what the block holds; 0 when
  /// the page is no superblock.
  uint64_t superblockAt(uint64_t at, uint64_t end) const {
    const std::optional<uint64_t> desc = memory_.readU64(at);
    const uint8_t *d = desc && *desc && (*desc & 7) == 0
                           ? memory_.tryView(*desc, kLockFreeFirstSlot + 8)
                           : nullptr;
    if (!d)
      return 0;
    const uint64_t slot = read32le(d + kLockFreeSlotSize), block = read32le(d + kLockFreeBlockSize),
                   count = read32le(d + kLockFreeMaxCount),
                   first = read64le(d + kLockFreeFirstSlot);
    if ((block != 4096 && block != 8192 && block != 16384) || at % block != 0 || block > end - at ||
        first <= at || first - at > kLockFreeHeaderMax || slot == 0 || slot * 2 > block ||
        count != (block - (first - at)) / slot)
      return 0;
    return block;
  }

  /// The bytes of the SGen pointer queue (SgenPointerQueue {data, size, next_slot, mem_type})
  /// whose record is at `p`, in the runtime's data, when its data was mapped apart: page-aligned,
  /// more than the internal allocator's largest slot and at most 64 MiB, captured, in none of the
  /// heap's `areas`, next_slot within size and mem_type one of SGen's internal kinds; 0 otherwise.
  uint64_t pointerQueueAt(const uint8_t *p, const std::vector<HeapArea> &areas) const {
    const uint64_t data = read64le(p), entries = read64le(p + 8), next = read64le(p + 16);
    const uint32_t kind = read32le(p + 24);
    if (data == 0 || (data & 4095) != 0 || entries > (uint64_t(64) << 20) / 8 ||
        entries * 8 <= kLockFreeLargestSlot || next > entries || kind >= kInternalMemKinds ||
        insideSortedAreas(areas, data) || !memory_.tryView(data, entries * 8))
      return 0;
    return entries * 8;
  }

  /// The number of buckets of the GC handle list (SgenArrayList) at `p`, in the runtime's data:
  /// the first n of its 32 bucket pointers set and the others null, its u32 capacity the sum of
  /// their sizes (32 << i entries each), its u32 max_index within it, every bucket captured; 0
  /// when `p` holds no such list.
  unsigned handleListAt(const uint8_t *p) const {
    unsigned n = 0;
    while (n < kHandleBuckets && read64le(p + 8 * n) != 0)
      ++n;
    if (n == 0 || n > 24)
      return 0;
    for (unsigned i = n; i < kHandleBuckets; ++i)
      if (read64le(p + 8 * i) != 0)
        return 0;
    const uint64_t capacity = read32le(p + 8 * kHandleBuckets);
    const uint64_t max_index = read32le(p + 8 * kHandleBuckets + 8);
    if (capacity != (kHandleBucketBytes / 8) * ((uint64_t(1) << n) - 1) || max_index > capacity)
      return 0;
    for (unsigned i = 0; i < n; ++i) {
      const uint64_t bucket = read64le(p + 8 * i);
      if ((bucket & 7) != 0 || !memory_.tryView(bucket, kHandleBucketBytes << i))
        return 0;
    }
    return n;
  }

  /// True when `at` lies in one of `areas`, sorted by start and not overlapping.
  static bool insideSortedAreas(const std::vector<HeapArea> &areas, uint64_t at) {
    auto it = llvm::partition_point(areas, [&](const HeapArea &a) { return a.start <= at; });
    return it != areas.begin() && at - std::prev(it)->start < std::prev(it)->size;
  }

  const AddressSpace &memory_;
  Diagnostics &diags_;
  const MonoLayout &layout_;
  CapturedBounds bounds_;
  VerdictCache<VTableInfo, 14> cache_;
};

std::string MonoWalk::arrayName(const LosObject &o) const {
  llvm::StringRef primitive = csharpArrayName(o.type.element_type);
  if (!primitive.empty())
    return primitive.str();
  // Array classes get their name ("Foo[]") from a mempool, which core dumps normally include.
  std::optional<uint64_t> name = memory_.readU64(o.type.klass + layout_.class_name);
  if (!name || *name == 0)
    return "";
  std::optional<llvm::StringRef> text = memory_.readCString(*name, kMaxClassName + 1);
  if (!text || !llvm::all_of(*text, [](char c) { return c >= 0x20 && c <= 0x7e; }))
    return "";
  return text->str();
}

llvm::Expected<HeapWalkResult> MonoWalk::run(AllocationSink sink) {
  HeapWalkResult result;
  std::vector<LosObject> found;
  const std::vector<ScanRange> candidates = heapCandidateRanges(memory_);
  for (const ScanRange &r : candidates) {
    for (uint64_t off = 0; off + kLosHeader + kMonoArrayData <= r.size;) {
      LosObject o;
      if (headerAt(r.bytes + off, r.start + off, r.size - off, o) &&
          (o.type.array || (placeInSection(o), o.section != 0))) {
        // Arrays prove themselves by their length; other objects only inside a LOS section.
        found.push_back(o);
        off += kLosHeader + o.los_size; // the object's body cannot hold another header
      } else {
        off += 8;
      }
    }
  }
  // Close the set over `next`: a linked header outside the scanned memory is still an object.
  llvm::DenseSet<uint64_t> known;
  for (const LosObject &o : found)
    known.insert(o.header);
  for (size_t i = 0; i < found.size(); ++i) {
    uint64_t next = found[i].next;
    if (next == 0 || (!isReservedDenseKey(next) && known.count(next)))
      continue;
    uint64_t avail = memory_.capturedRunFrom(next);
    const uint8_t *p =
        memory_.tryView(next, std::min<uint64_t>(avail, kLosHeader + kMonoArrayData));
    LosObject o;
    if (p && (p = memory_.tryView(next, avail)) && headerAt(p, next, avail, o)) {
      found.push_back(o);
      known.insert(next);
    } else {
      diags_.warn(hexAddress(found[i].header),
                  "LOS object's next pointer " + hexAddress(next) + " is not a LOS object");
    }
  }
  std::sort(found.begin(), found.end(),
            [](const LosObject &a, const LosObject &b) { return a.header < b.header; });
  for (LosObject &o : found)
    placeInSection(o);

  // The list sgen_los_object_list links every live or not-yet-swept object. Its head is the one
  // object nothing else points to; the global holding it lies in the runtime binary's data.
  llvm::DenseMap<uint64_t, unsigned> in_degree;
  for (const LosObject &o : found)
    if (o.next && !isReservedDenseKey(o.next))
      ++in_degree[o.next];
  // A sorted vector, not a DenseSet: words read from memory may equal DenseSet's reserved keys.
  std::vector<uint64_t> heads;
  for (const LosObject &o : found)
    if (!in_degree.count(o.header) && !o.chunk_free)
      heads.push_back(o.header);
  std::sort(heads.begin(), heads.end());
  std::vector<uint64_t> head_refs;
  std::vector<const MemoryRange *> runtime_data_ranges; // the runtime binary's data and .bss
  const Snapshot &snap = memory_.snapshot();
  for (const MemoryRange &m : snap.memory) {
    const Region *r = memory_.regionContaining(m.start);
    bool runtime_data = r && r->perms.write && namesModule(kMonoNames, r->backing_file);
    // The .bss right after the binary's data segment is anonymous; take the region that follows.
    if (!runtime_data && r && r->backing_file.empty() && r->perms.write && r != &snap.regions[0] &&
        namesModule(kMonoNames, (r - 1)->backing_file) && (r - 1)->end() == r->start)
      runtime_data = true;
    if (!runtime_data)
      continue;
    runtime_data_ranges.push_back(&m);
    for (uint64_t off = 0; off + 8 <= m.bytes.size(); off += 8) {
      uint64_t word = read64le(m.bytes.data() + off);
      if ((word & 7) == 0 && std::binary_search(heads.begin(), heads.end(), word))
        head_refs.push_back(word);
    }
  }
  std::sort(head_refs.begin(), head_refs.end());
  head_refs.erase(std::unique(head_refs.begin(), head_refs.end()), head_refs.end());
  llvm::DenseSet<uint64_t> listed;
  if (head_refs.size() == 1) {
    llvm::DenseMap<uint64_t, uint64_t> next_of;
    for (const LosObject &o : found)
      next_of[o.header] = o.next;
    for (uint64_t h = head_refs[0]; h && !isReservedDenseKey(h) && listed.insert(h).second;) {
      auto it = next_of.find(h);
      h = it == next_of.end() ? 0 : it->second;
    }
    result.facts.push_back({"mono_los_list_head", hexAddress(head_refs[0])});
  } else {
    result.facts.push_back({"mono_los_list_head", head_refs.empty() ? "not found" : "ambiguous"});
  }

  // Areas: LOS sections and single-object mappings.
  for (const LosObject &o : found) {
    uint64_t start = o.section ? o.section : o.header & ~uint64_t(4095);
    uint64_t size = o.section ? kSectionSize : alignUp8(o.header - start + kLosHeader + o.los_size);
    if (!result.areas.empty() && result.areas.back().start == start)
      continue;
    result.areas.push_back({o.section ? "los-section" : "los-mapping", start, size, o.section});
  }

  // The major heap's blocks, and the objects in them for the holders pass.
  std::vector<MonoMajorBlock> blocks;
  uint64_t objects = 0;
  for (const ScanRange &r : candidates)
    for (uint64_t at = llvm::alignTo(r.start, kMajorBlockSize); at + kMajorBlockSize <= r.end();
         at += kMajorBlockSize)
      if (!insideSortedAreas(result.areas, at))
        if (std::optional<uint64_t> live = majorBlockAt(r.bytes + (at - r.start), at)) {
          blocks.push_back({at, read16le(r.bytes + (at - r.start))});
          objects += *live;
        }
  // Areas: runs of adjacent blocks.
  const size_t los_areas = result.areas.size();
  for (const MonoMajorBlock &b : blocks)
    if (result.areas.size() > los_areas &&
        result.areas.back().start + result.areas.back().size == b.start)
      result.areas.back().size += kMajorBlockSize;
    else
      result.areas.push_back({"major-blocks", b.start, kMajorBlockSize, 0});
  llvm::sort(result.areas, [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });

  // The superblocks of the runtime's lock-free allocator: the collector's own records.
  for (const ScanRange &r : candidates)
    for (uint64_t at = llvm::alignTo(r.start, 4096); at + 4096 <= r.end();)
      if (uint64_t size = superblockAt(at, r.end()); size && !insideSortedAreas(result.areas, at)) {
        result.bookkeeping.push_back({"mono-internal", at, size, 0});
        at += size;
      } else {
        at += 4096;
      }
  // The GC handles' buckets, found from their lists in the runtime's data.
  for (const MemoryRange *m : runtime_data_ranges)
    for (uint64_t off = 0; off + kHandleListSize <= m->bytes.size(); off += 8)
      if (unsigned buckets = handleListAt(m->bytes.data() + off)) {
        for (unsigned i = 0; i < buckets; ++i)
          result.handles.push_back(
              {"gc-handle", read64le(m->bytes.data() + off + 8 * i), kHandleBucketBytes << i, 0});
        off += 8 * kHandleBuckets; // past its buckets
      }
  llvm::sort(result.handles,
             [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
  // SGen's pointer queues (the pin queue) too big for its internal allocator: mapped apart.
  for (const MemoryRange *m : runtime_data_ranges)
    for (uint64_t off = 0; off + kPointerQueueSize <= m->bytes.size(); off += 8)
      if (uint64_t size = pointerQueueAt(m->bytes.data() + off, result.areas))
        result.bookkeeping.push_back({"mono-internal", read64le(m->bytes.data() + off), size, 0});
  // A word of the runtime's own data that points at an object of its heap is bookkeeping, not a
  // reference of the program: SGen keeps its newest large objects there, and the runtime's
  // registered roots there hold its own objects. What the program holds lies elsewhere: a class's
  // statics and the GC handles' buckets are blocks of the C heap (which those words still reach).
  for (const MemoryRange *m : runtime_data_ranges)
    for (uint64_t off = 0; off + 8 <= m->bytes.size(); off += 8)
      if (insideSortedAreas(result.areas, read64le(m->bytes.data() + off)))
        result.bookkeeping.push_back({"mono-runtime-data", m->start + off, 8, 0});
  llvm::sort(result.bookkeeping,
             [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
  // Not overlapping: a record within another is dropped.
  std::vector<HeapArea> records;
  for (HeapArea &a : result.bookkeeping)
    if (records.empty() || a.start >= records.back().start + records.back().size)
      records.push_back(std::move(a));
  result.bookkeeping = std::move(records);
  if (found.empty() && blocks.empty())
    return createError(llvm::Twine("no Mono SGen large-object-space object or major heap block "
                                   "found (layout ") +
                       layout_.name + ")");
  result.facts.push_back({"mono_major_blocks", std::to_string(blocks.size())});
  result.facts.push_back({"mono_major_objects", std::to_string(objects)});
  result.objects = makeMonoObjectFinder(memory_, layout_, std::move(blocks), objects);
  // References are plain words holding an object's start: the pass sees every one.
  result.every_reference_seen = true;

  uint64_t arrays = 0, stale = 0;
  for (const LosObject &o : found) {
    if (!o.type.array)
      continue;
    Allocation a;
    a.address = o.header + kLosHeader;
    a.size = kMonoArrayData + uint64_t(o.length) * o.type.element_size;
    a.chunk_address = o.header;
    a.chunk_size = kLosHeader + o.los_size;
    a.arena = o.section;
    a.data_offset = kMonoArrayData;
    a.mmapped = o.section == 0;
    if (o.chunk_free)
      a.state = AllocState::Free;
    else if (!listed.empty() && !listed.count(o.header))
      a.state = AllocState::Unknown;
    else
      a.state = AllocState::Used;
    stale += a.state != AllocState::Used;
    ManagedArray m;
    m.method_table = o.vtable;
    m.length = o.length;
    m.element_size = o.type.element_size;
    m.large_object_heap = true;
    m.type_name = arrayName(o);
    a.noscan = primitiveElementType(o.type.element_type);
    m.heap_kind = "los";
    a.managed = std::move(m);
    ++arrays;
    result.stats.add(a);
    sink(0, a); // one thread: lane 0
  }
  result.facts.push_back({"mono_layout", layout_.name});
  result.facts.push_back({"mono_los_objects", std::to_string(found.size())});
  result.facts.push_back({"mono_los_arrays", std::to_string(arrays)});
  result.facts.push_back({"mono_los_listed", std::to_string(listed.size())});
  if (stale)
    result.facts.push_back({"mono_los_unlisted_or_freed", std::to_string(stale)});
  return result;
}

class MonoWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "mono"; }

  /// 64-bit little-endian processes of any operating system that map Mono's runtime; an
  /// object's size says nothing of a request.
  const WalkerTraits &traits() const override {
    static const WalkerTraits traits{.platforms = Platforms::littleEndian64(),
                                     .modules = {std::begin(kMonoNames), std::end(kMonoNames)},
                                     .requests = nullptr,
                                     .thresholds = {},
                                     // LOS arrays only.
                                     .listing = BlockListing::Partial,
                                     .framework_namespaces = {"System.", "Microsoft.", "Mono."}};
    return traits;
  }

  bool detect(const AddressSpace &memory) const override {
    return memory.snapshot().findModule(traits().modules).has_value();
  }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions & /*one thread*/) const override {
    MonoWalk walk(memory, diags, kMono68);
    return walk.run(sink);
  }
};

} // namespace

std::unique_ptr<HeapWalker> makeMonoWalker() {
  return std::make_unique<MonoWalker>();
}

} // namespace dumpsift
