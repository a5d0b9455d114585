// The "coreclr" and "netfx" walkers: arrays on the GC heap of .NET Core / .NET 5+ (coreclr) and of
// the .NET Framework (netfx: clr.dll 4.x, mscorwks.dll 2.0-3.5), 64-bit and 32-bit, found from the
// object layout alone, without the runtime's DAC. See docs/heap-managed.md for the method, each
// layout fact with its source, what is heuristic and what could fool it.
//
// Layout facts used (P = pointer size; dotnet/runtime gc/env/gcenv.object.h, vm/object.h,
// vm/methodtable.h, gc/gcpriv.h for CLR 4 and CoreCLR; SSCLI 2.0 clr/src/vm/methodtable.h,
// object.h, ceemain.cpp for CLR 2; checked on a CoreCLR 2.0 core):
//   object:      [-P] ObjHeader, [0] MethodTable* (low bits may carry GC mark/pin bits: 3 on
//                64-bit, 2 on 32-bit), arrays: [P] u32 length, elements at base size - P.
//   MethodTable: [0] u32 flags, [4] u32 base size, [0x10] parent MethodTable*, CLR 4+: the element
//                type handle at 0x30 (64-bit) / 0x20 (32-bit). CLR 4+: flag bit 31 says the low
//                16 bits are the element size, category bits 16-19 (0x8xxxx = array); CLR 2: a
//                non-zero low 16 bits is the element size, bit 16 = array, bit 17 = SZ array.
//   size:        base size + length * element size, rounded up to P (8 on the LOH).
//   free object: MethodTable with the free flags (0x80000001; CLR 2: 0x00010001), base size 3P,
//                no parent.
//   heap_segment (segments and regions alike): allocated, committed, reserved, used, mem, flags
//                (8 = LOH, 512 = POH), next (the generation's next segment or region) as its
//                first seven pointer-sized words; a segment's lies at the start of its
//                reservation, its objects from mem on.
#include "clr_handles.h"
#include "clr_objects.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "scan.h"
#include "walkers.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace dumpsift {
namespace {

using namespace managed;

constexpr uint32_t kHasComponentSize = 0x80000000u;
constexpr uint64_t kLohThreshold = 85000; // LARGE_OBJECT_SIZE; the effective one can be larger
constexpr uint64_t kSegmentFlagLoh = 8;
constexpr uint64_t kSegmentFlagPoh = 512;
constexpr uint64_t kMaxObjectSize = uint64_t(1) << 40;
constexpr uint64_t kMaxClassBaseSize = uint64_t(1) << 24;
constexpr unsigned kMaxParentDepth = 32;
constexpr uint64_t kPageSize = 4096;
constexpr uint64_t kMtLoaderModule = 0x18; // MethodTable::m_pLoaderModule (64-bit CLR 4+)
constexpr size_t kMaxSegments = 1 << 16;
/// Element types of 1-byte arrays named from metadata, at most (a real heap has three: byte,
/// sbyte, bool); each name may search 64 MiB for its module's metadata.
constexpr size_t kMaxNamedElementTypes = 8;
constexpr uint64_t kContractMagic = 0x0043414443434e44ull; // "DNCCDAC\0" little-endian

/// The file names of CoreCLR's runtime library.
constexpr ModuleName kCoreClrNames[] = {{"libcoreclr.so", ModuleName::Match::Exact},
                                        {"coreclr.dll", ModuleName::Match::AnyCase},
                                        {"libcoreclr.dylib", ModuleName::Match::Exact}};
/// The .NET Framework's runtimes: clr.dll (CLR 4, .NET Framework 4.x) and mscorwks.dll (CLR 2,
/// .NET Framework 2.0 to 3.5).
constexpr ModuleName kClr4Names[] = {{"clr.dll", ModuleName::Match::AnyCase}};
constexpr ModuleName kClr2Names[] = {{"mscorwks.dll", ModuleName::Match::AnyCase}};

/// What arrays just over the large object threshold mean.
std::string overLohThreshold(const Allocation & /*array*/) {
  return "just over .NET's 85,000-byte large-object threshold, so each lives on the large object "
         "heap, which is collected only with gen 2 and not compacted";
}

/// What the coreclr and netfx walkers share: 32-bit and 64-bit little-endian processes of any
/// operating system; an object's size says nothing of a request; the large object threshold,
/// measured on an array's object size.
WalkerTraits clrTraits(std::vector<ModuleName> modules) {
  return {.platforms = {.os = {},
                        .arch = {},
                        .pointer_sizes = {4, 8},
                        .byte_orders = {llvm::support::little}},
          .modules = std::move(modules),
          .requests = nullptr,
          .thresholds = {{.bytes = kLohThreshold,
                          .concerns = [](const Allocation &a) { return a.managed.has_value(); },
                          .measures_block = true,
                          .meaning = overLohThreshold}},
          // Arrays only: the objects that hold them are not listed.
          .listing = BlockListing::Partial,
          .framework_namespaces = {"System.", "Microsoft.", "Internal."}};
}

/// How the MethodTable flags of one CLR generation say what an object is.
struct ClrFlags {
  const char *name;    // "clr4" (CoreCLR and clr.dll), "clr2" (mscorwks.dll)
  bool component_flag; // the element size is the low 16 bits when bit 31 is set (CLR 4+), or
                       // whenever they are non-zero (CLR 2)
  uint32_t array_mask; // flags & array_mask == array_bits: an array
  uint32_t array_bits;
  uint32_t byte_array_mask;   // flags & byte_array_mask == byte_array_bits: an SZ array of
  uint32_t byte_array_bits;   // 1-byte elements without pointers (byte[], sbyte[], bool[])
  uint32_t free_flags;        // the free object's MethodTable flags
  bool element_type;          // the MethodTable holds the element type handle (CLR 4+)
  uint32_t contains_pointers; // the bit set for a type whose objects hold references; 0: unknown
};
constexpr ClrFlags kClr4 = {"clr4",      true,        0x000C0000u,
                            0x00080000u, 0x800FFFFFu, 0x800A0001u,
                            0x80000001u, true,        kClr4ContainsPointers};
constexpr ClrFlags kClr2 = {
    "clr2", false, 0x00010000u, 0x00010000u, 0x000FFFFFu, 0x00030001u, 0x00010001u, false, 0};

/// The layout a walk reads: the CLR generation and pointer size, and offsets that may come from
/// the runtime's contract descriptor instead of the built-in table.
struct Layout {
  const ClrFlags *flags = &kClr4;
  unsigned pointer_size = 8;
  uint64_t parent_offset = 0x10;       // MethodTable::m_pParentMethodTable
  uint64_t element_type_offset = 0x30; // MethodTable::m_ElementTypeHnd (arrays; CLR 4+)
  uint64_t free_method_table = 0;      // g_pFreeObjectMethodTable, when the descriptor gives it
  std::string source = "built-in";

  /// The built-in layout of `flags` with `pointer_size`-byte pointers.
  static Layout builtIn(const ClrFlags &flags, unsigned pointer_size) {
    Layout l;
    l.flags = &flags;
    l.pointer_size = pointer_size;
    l.element_type_offset = flags.element_type ? (pointer_size == 8 ? 0x30 : 0x20) : 0;
    return l;
  }
  /// "clr4-x64 (built-in)" and the like.
  std::string name() const {
    return std::string(flags->name) + (pointer_size == 8 ? "-x64" : "-x86") + " (" + source + ")";
  }
  /// The pointer at `p`.
  uint64_t word(const uint8_t *p) const {
    return readUnsigned(p, pointer_size, llvm::support::little);
  }
  /// The bits of an object's first word that hold GC marks, not the MethodTable.
  uint64_t markBits() const { return pointer_size == 8 ? 7 : 3; }
  /// ObjHeader + MethodTable* + length (+ pad): an empty SZ array, the smallest object.
  uint32_t arrayBaseSize() const { return 3 * pointer_size; }
  /// Objects on the small object heap are pointer-aligned; on the LOH and POH, 8-aligned.
  uint64_t align(uint64_t size, bool large) const {
    const uint64_t a = large ? 8 : pointer_size;
    return (size + a - 1) & ~(a - 1);
  }
};

/// What a MethodTable candidate turned out to be. Cached per address.
struct MtInfo {
  bool valid = false;
  bool free = false;
  bool array = false;
  bool component = false; // HasComponentSize: arrays, strings, the free object
  uint32_t flags = 0;
  uint32_t base_size = 0;
  uint32_t component_size = 0;
  uint64_t element_type = 0; // arrays: element TypeHandle
};

/// Decides whether an address holds a plausible MethodTable, with a fixed-size cache so that the
/// scan pays for each distinct candidate about once.
class MethodTables {
public:
  MethodTables(const AddressSpace &memory, const Layout &layout)
      : memory_(memory), layout_(layout) {}

  /// The loader modules of the classes (not arrays) of the valid MethodTables met, each with one
  /// of their MethodTables (64-bit; for the object finder's statics).
  std::vector<ClrModule> modules() const {
    std::vector<ClrModule> out;
    for (auto [module, mt] : modules_)
      out.push_back({module, mt});
    std::sort(out.begin(), out.end(),
              [](const ClrModule &a, const ClrModule &b) { return a.module < b.module; });
    return out;
  }

  /// The verdict for the (already unmasked) MethodTable pointer `mt`.
  MtInfo get(uint64_t mt, unsigned depth = 0) {
    if (const MtInfo *hit = cache_.find(mt))
      return *hit;
    MtInfo info = compute(mt, depth);
    cache_.put(mt, info);
    return info;
  }

private:
  MtInfo compute(uint64_t mt, unsigned depth) {
    MtInfo info;
    const unsigned ptr = layout_.pointer_size;
    if (mt == 0 || (mt & (ptr - 1)) != 0 || depth > kMaxParentDepth)
      return info;
    const uint64_t wanted =
        std::max({layout_.element_type_offset, layout_.parent_offset, uint64_t(8)}) + ptr;
    const uint8_t *p = memory_.tryView(mt, wanted);
    if (!p && !(p = memory_.tryView(mt, layout_.parent_offset + ptr)))
      return info;
    const ClrFlags &f = *layout_.flags;
    info.flags = read32le(p);
    info.base_size = read32le(p + 4);
    info.component =
        f.component_flag ? (info.flags & kHasComponentSize) != 0 : (info.flags & 0xFFFF) != 0;
    const uint64_t parent = layout_.word(p + layout_.parent_offset);
    if (layout_.free_method_table ? mt == layout_.free_method_table
                                  : info.flags == f.free_flags &&
                                        info.base_size == layout_.arrayBaseSize() && parent == 0) {
      info.valid = info.free = true;
      info.component_size = 1;
      return info;
    }
    if (info.component) {
      info.component_size = info.flags & 0xFFFF;
      info.array = (info.flags & f.array_mask) == f.array_bits;
      if (info.component_size == 0 || parent == 0)
        return info;
      if (info.array) {
        // SZ arrays have base size 3P (CLR 2: 4P for arrays of references, which hold their
        // element type); multi-dimensional ones add 8 bytes per rank.
        if (info.base_size < layout_.arrayBaseSize() ||
            info.base_size > layout_.arrayBaseSize() + ptr + 8 * 32 || info.base_size % ptr != 0)
          return info;
        // Arrays are told apart by their element type handle (CLR 4+), else by the MethodTable.
        info.element_type = mt;
        if (layout_.element_type_offset != 0 && layout_.element_type_offset + ptr <= 0x40) {
          if (const uint8_t *e = memory_.tryView(mt + layout_.element_type_offset, ptr))
            info.element_type = layout_.word(e);
        }
      } else if (info.base_size < 2 * ptr + 4 || info.base_size > 64) { // strings
        return info;
      }
    } else if (info.base_size < layout_.arrayBaseSize() || info.base_size % ptr != 0 ||
               info.base_size > kMaxClassBaseSize) {
      return info;
    }
    if (parent != 0) {
      // Every parent up to System.Object must itself be a plain (componentless) MethodTable.
      MtInfo up = get(parent, depth + 1);
      if (!up.valid || up.free || up.component)
        return info;
    }
    info.valid = true;
    if (!info.component && layout_.pointer_size == 8)
      if (std::optional<uint64_t> module = memory_.readU64(mt + kMtLoaderModule))
        modules_.try_emplace(*module, mt);
    return info;
  }

  const AddressSpace &memory_;
  const Layout &layout_;
  VerdictCache<MtInfo, 15> cache_;
  std::unordered_map<uint64_t, uint64_t> modules_; // loader module -> a class's MethodTable
};

/// One heap_segment record: a SOH/LOH/POH segment (or .NET 7+ region) and its object range.
struct Segment {
  uint64_t record = 0; // where the heap_segment lies
  uint64_t mem = 0;    // first object
  uint64_t allocated = 0;
  uint64_t flags = 0;
  llvm::StringRef kind() const {
    return flags & kSegmentFlagLoh ? "loh" : flags & kSegmentFlagPoh ? "poh" : "soh";
  }
};

/// The first seven words of a heap_segment: allocated, committed, reserved, (used,) mem, flags,
/// next.
struct SegmentRecord {
  uint64_t at = 0; // where it lies
  uint64_t allocated = 0, committed = 0, reserved = 0, mem = 0, flags = 0, next = 0;
  uint64_t heapBits() const { return flags & (kSegmentFlagLoh | kSegmentFlagPoh); }
};

/// A compact record of one reported object: given to the sink at once, or kept until the name of
/// byte[] is settled (CoreClrWalk::deferring_).
struct Found {
  uint64_t address;
  uint64_t size;
  uint64_t method_table;
  uint32_t length;
  uint32_t area; // index into the areas of this walk
  bool free;
  bool loh;
};

class CoreClrWalk {
public:
  CoreClrWalk(llvm::StringRef walker, const AddressSpace &memory, Diagnostics &diags,
              const Layout &layout)
      : walker_(walker), memory_(memory), diags_(diags), layout_(layout), mts_(memory, layout),
        bounds_(memory.snapshot()) {}

  /// Runs the whole walk; reports through `sink` after naming byte arrays. `name_objects`: the
  /// MethodTable layout is the one the object finder names (HeapWalkResult::objects).
  llvm::Expected<HeapWalkResult> run(AllocationSink sink, bool name_objects);

private:
  /// Size of the object at `addr` whose MethodTable is `mt` (0 when its length is unreadable).
  uint64_t objectSize(const uint8_t *obj, const MtInfo &mt) const {
    if (!mt.component)
      return mt.base_size;
    return uint64_t(mt.base_size) +
           uint64_t(read32le(obj + layout_.pointer_size)) * mt.component_size;
  }

  /// The MethodTable of `obj`'s first word, its GC mark bits masked.
  uint64_t methodTableOf(const uint8_t *obj) const {
    return layout_.word(obj) & ~layout_.markBits();
  }

  /// The MethodTable of a plausible object at `p` (inside a range ending at `end`, on the large
  /// object heap when `large`: it decides the alignment), or an invalid MtInfo. `strict` also asks
  /// arrays of a 64-bit process for a zero pad word after the length.
  MtInfo objectAt(const uint8_t *p, const uint8_t *end, bool strict, bool large, uint64_t &size) {
    size = 0;
    const unsigned ptr = layout_.pointer_size;
    if (uint64_t(end - p) < 2 * ptr)
      return {};
    uint64_t mt = methodTableOf(p);
    if (mt == 0 || !bounds_.contains(mt))
      return {};
    MtInfo info = mts_.get(mt);
    if (!info.valid)
      return {};
    size = objectSize(p, info);
    if (size > kMaxObjectSize || layout_.align(size, large) > uint64_t(end - p))
      return {};
    if (strict && info.array && ptr == 8 && read32le(p + 12) != 0)
      return {};
    return info;
  }

  /// Where the elements of an array (or a free object) with this MethodTable start.
  uint32_t dataOffset(const MtInfo &mt) const {
    return (mt.free ? layout_.arrayBaseSize() : mt.base_size) - layout_.pointer_size;
  }

  /// An SZ array of 1-byte elements without pointers: byte[], sbyte[] or bool[].
  bool byteLike(const MtInfo &mt) const {
    return (mt.flags & layout_.flags->byte_array_mask) == layout_.flags->byte_array_bits &&
           mt.base_size == layout_.arrayBaseSize();
  }

  /// The GC handle table's strong slots for the holders pass, and its facts: native memory holds
  /// an object of this heap only through a handle. Nothing is claimed when no segment is found.
  void handlesOf(HeapWalkResult &result) const {
    ClrHandles handles = findClrHandles(memory_, result.areas);
    result.facts.push_back({fact("handle_segments"), std::to_string(handles.segments)});
    if (handles.segments == 0)
      return;
    result.facts.push_back({fact("handles"), std::to_string(handles.strong) + " strong, " +
                                                 std::to_string(handles.weak) + " weak (" +
                                                 std::to_string(handles.handle_types) +
                                                 " handle types)"});
    result.held_through_handles = true;
    result.handles = std::move(handles.strong_slots);
  }

  /// "coreclr_segments" and the like: this walk's facts carry its walker's name.
  std::string fact(llvm::StringRef key) const { return (walker_ + "_" + key).str(); }

  /// The heap_segment-shaped record at `at` (mem <= allocated <= committed <= reserved, small
  /// flags), or nullopt when the words there have another shape or are not captured.
  std::optional<SegmentRecord> readRecord(uint64_t at) const;
  /// The same for the seven words at `w`, which lie at `at`.
  std::optional<SegmentRecord> recordFrom(const uint8_t *w, uint64_t at) const;
  /// A segment's own header: page-aligned (the start of its reservation), its objects shortly
  /// after it, past the fields read here.
  bool isHeader(const SegmentRecord &r) const;
  /// `next` is null, not captured, or another record of the same heap (SOH, LOH or POH).
  bool nextPlausible(const SegmentRecord &r) const;
  /// A valid object at `mem`, and `allocated` past it.
  bool hasFirstObject(const SegmentRecord &r);
  void findSegments();
  void walkSegment(const Segment &seg, uint32_t area);
  void scanRange(const ScanRange &range);
  void record(uint64_t addr, uint64_t size, uint64_t mt, const MtInfo &info, const uint8_t *obj,
              uint32_t area, bool loh);
  /// Counts an array of 1-byte elements of `element` type and, when the walk names byte[] from
  /// metadata and is not deferring, settles that type's verdict the first time it is met: an
  /// element type whose class name cannot be read (or one past kMaxNamedElementTypes) sends the
  /// rest of the walk to found_ (deferring_), where no more names are read.
  void noteByteLike(uint64_t element);
  /// True when the arrays of MethodTable `mt` are byte[]: by their element type's verdict, or,
  /// for a type without one, when it is the byte_guess_.
  bool isByteArray(const MtInfo &mt) const;
  /// Gives `f` to the sink, as an Allocation with what the walk knows of its array type.
  void report(const Found &f);
  /// Marks the object at `addr` (in a run of objects ending at `limit`) for the holders pass's
  /// object finder when it is the first of its run (`walked` 0) or the kObjectsPerMark-th since the
  /// last mark; counts it in `walked`. 64-bit CLR 4+ layouts only.
  void mark(uint64_t addr, uint64_t limit, uint64_t &walked) {
    if (layout_.pointer_size == 8 && layout_.flags->element_type)
      marks_.note(addr, limit, walked);
  }

  llvm::StringRef walker_;
  const AddressSpace &memory_;
  Diagnostics &diags_;
  const Layout &layout_;
  MethodTables mts_;
  CapturedBounds bounds_;
  std::vector<Segment> segments_;
  std::vector<HeapArea> areas_;
  AllocationSink sink_;
  HeapStats stats_;
  uint64_t arrays_ = 0;
  // Naming byte[]: the element types of 1-byte-element arrays, with their instances; the verdict
  // of those whose class name was read (System.Byte or another); the most frequent of the others,
  // settled after the walk, when none was named System.Byte.
  bool name_bytes_ = false;
  std::map<uint64_t, uint64_t> byte_like_;
  std::unordered_map<uint64_t, bool> byte_verdicts_;
  uint64_t byte_guess_ = 0;
  // While false, each object is reported as the walk meets it; once an element type's name is
  // not known (or from the start, when names are not read), the rest waits here for byte_guess_.
  bool deferring_ = true;
  std::vector<Found> found_;
  std::unordered_map<uint64_t, MtInfo> array_mts_; // every array MethodTable seen
  ObjectMarks marks_;                              // for the holders pass's object finder
  uint64_t objects_ = 0;
  uint64_t resyncs_ = 0;
  uint64_t ignored_records_ = 0;
  std::string segment_search_;
};

std::optional<SegmentRecord> CoreClrWalk::readRecord(uint64_t at) const {
  const unsigned ptr = layout_.pointer_size;
  if (at == 0 || (at & (ptr - 1)) != 0)
    return std::nullopt;
  const uint8_t *w = memory_.tryView(at, 7 * ptr);
  return w ? recordFrom(w, at) : std::nullopt;
}

std::optional<SegmentRecord> CoreClrWalk::recordFrom(const uint8_t *w, uint64_t at) const {
  const unsigned ptr = layout_.pointer_size;
  SegmentRecord r;
  r.at = at;
  r.allocated = layout_.word(w);
  r.committed = layout_.word(w + ptr);
  r.reserved = layout_.word(w + 2 * ptr);
  r.mem = layout_.word(w + 4 * ptr);
  r.flags = layout_.word(w + 5 * ptr);
  r.next = layout_.word(w + 6 * ptr);
  if (r.mem == 0 || (r.mem & (ptr - 1)) != 0 || r.allocated < r.mem || r.committed < r.allocated ||
      r.reserved < r.committed || r.flags >= 0x10000 || r.reserved - r.mem > (uint64_t(1) << 40))
    return std::nullopt;
  return r;
}

bool CoreClrWalk::isHeader(const SegmentRecord &r) const {
  return (r.at & (kPageSize - 1)) == 0 && r.mem >= r.at + 7 * layout_.pointer_size &&
         r.mem - r.at <= 0x10000;
}

bool CoreClrWalk::nextPlausible(const SegmentRecord &r) const {
  if (r.next == 0 || !memory_.tryView(r.next, 7 * layout_.pointer_size))
    return true; // the end of its list, or a record the dump did not capture
  std::optional<SegmentRecord> n = readRecord(r.next);
  return n && n->heapBits() == r.heapBits();
}

bool CoreClrWalk::hasFirstObject(const SegmentRecord &r) {
  if (r.allocated <= r.mem)
    return false;
  const uint8_t *obj = memory_.tryView(r.mem, layout_.arrayBaseSize());
  if (!obj)
    return false;
  const uint64_t run = memory_.capturedRunFrom(r.mem);
  uint64_t size;
  return objectAt(obj, obj + std::min<uint64_t>(run, r.allocated - r.mem), false, r.heapBits() != 0,
                  size)
      .valid;
}

void CoreClrWalk::findSegments() {
  const unsigned ptr = layout_.pointer_size;
  const std::vector<ScanRange> ranges = heapCandidateRanges(memory_);
  // 1. Segment headers at the start of a mapping: a segment's heap_segment is the first thing in
  //    its reservation, whose committed part is one writable mapping. One record read per mapping.
  std::vector<SegmentRecord> all;
  for (const ScanRange &r : ranges) {
    std::optional<SegmentRecord> rec = readRecord(r.start);
    if (rec && isHeader(*rec) && nextPlausible(*rec) && hasFirstObject(*rec))
      all.push_back(*rec);
  }
  const bool probed = !all.empty();
  // 2. No header there (.NET 7+ regions keep their records in a table; an unusual layout): every
  //    word of the candidate memory is tried as a record, as a last resort: it reads it all.
  if (!probed) {
    for (const ScanRange &r : ranges)
      for (uint64_t off = 0; off + 7 * ptr <= r.size; off += ptr) {
        std::optional<SegmentRecord> rec = recordFrom(r.bytes + off, r.start + off);
        if (rec && rec->allocated > rec->mem && nextPlausible(*rec) && hasFirstObject(*rec))
          all.push_back(*rec);
      }
  }
  // 3. The lists: each generation's segments are linked through `next` (gen2's SOH segments up to
  //    the ephemeral one, the LOH's, the POH's), so a segment whose header is not at a mapping
  //    start is still reached from the one before it. A link to something that is no record of
  //    the same heap ends the list with a warning.
  std::unordered_set<uint64_t> known, linked;
  for (const SegmentRecord &r : all)
    known.insert(r.at);
  for (size_t i = 0; i < all.size() && all.size() < kMaxSegments; ++i) {
    const SegmentRecord from = all[i];
    if (from.next == 0)
      continue;
    linked.insert(from.next);
    if (known.count(from.next))
      continue;
    std::optional<SegmentRecord> to = readRecord(from.next);
    if (!to || to->heapBits() != from.heapBits()) {
      if (memory_.tryView(from.next, 7 * ptr))
        diags_.warn(hexAddress(from.at), "heap_segment links to " + hexAddress(from.next) +
                                             ", which is no heap_segment of the same heap");
      continue;
    }
    known.insert(to->at);
    all.push_back(*to);
  }
  segment_search_ = probed ? "mapping starts and next links" : "every word, and next links";
  // One record per segment. Segments of a list and segment headers go first; other records (.NET
  // 7+ region tables) only where none of those claimed the memory. A record-like run of words
  // inside an object is then ignored for overlapping a real segment.
  std::sort(all.begin(), all.end(),
            [](const SegmentRecord &a, const SegmentRecord &b) { return a.mem < b.mem; });
  auto trusted = [&](const SegmentRecord &r) {
    return isHeader(r) || linked.count(r.at) || (r.next != 0 && known.count(r.next));
  };
  auto overlaps = [this](const SegmentRecord &r) {
    for (const Segment &k : segments_)
      if (r.mem < k.allocated && k.mem < r.allocated)
        return true;
    return false;
  };
  for (int pass = 0; pass < 2; ++pass)
    for (const SegmentRecord &r : all) {
      if (trusted(r) != (pass == 0) || r.allocated <= r.mem) // an empty segment: nothing to walk
        continue;
      if (overlaps(r)) {
        ++ignored_records_;
        continue;
      }
      segments_.push_back({r.at, r.mem, r.allocated, r.flags});
    }
  std::sort(segments_.begin(), segments_.end(),
            [](const Segment &a, const Segment &b) { return a.mem < b.mem; });
}

void CoreClrWalk::record(uint64_t addr, uint64_t size, uint64_t mt, const MtInfo &info,
                         const uint8_t *obj, uint32_t area, bool loh) {
  ++objects_;
  if (!info.array && !info.free)
    return;
  if (info.array) {
    array_mts_.emplace(mt, info);
    if (byteLike(info))
      noteByteLike(info.element_type);
  }
  const Found f{addr, size, mt, read32le(obj + layout_.pointer_size), area, info.free, loh};
  if (deferring_)
    found_.push_back(f);
  else
    report(f);
}

void CoreClrWalk::noteByteLike(uint64_t element) {
  if (byte_like_[element]++ != 0 || !name_bytes_ || deferring_)
    return; // met before, or the rest of the walk waits for the guess anyway
  if (byte_verdicts_.size() == kMaxNamedElementTypes) {
    deferring_ = true;
    return;
  }
  // A TypeDesc (bit 1) is no class; the names of the three 1-byte types are all it may be.
  const std::string name = (element & 3) == 0 ? clrClassName(memory_, element) : "";
  if (name == "System.Byte" || name == "System.SByte" || name == "System.Boolean")
    byte_verdicts_.emplace(element, name == "System.Byte");
  else
    deferring_ = true;
}

bool CoreClrWalk::isByteArray(const MtInfo &mt) const {
  if (!byteLike(mt))
    return false;
  auto verdict = byte_verdicts_.find(mt.element_type);
  return verdict != byte_verdicts_.end() ? verdict->second
                                         : byte_guess_ != 0 && mt.element_type == byte_guess_;
}

void CoreClrWalk::report(const Found &f) {
  Allocation a;
  a.address = f.address;
  a.size = f.size;
  a.chunk_address = f.address;
  const bool large = f.area < areas_.size()
                         ? areas_[f.area].kind == "loh" || areas_[f.area].kind == "poh"
                         : f.size >= kLohThreshold;
  a.chunk_size = layout_.align(f.size, large);
  a.arena = f.area < areas_.size() ? areas_[f.area].arena : 0;
  a.data_offset = layout_.pointer_size * 2;
  a.state = f.free ? AllocState::Free : AllocState::Used;
  if (!f.free) {
    const MtInfo &mt = array_mts_.at(f.method_table);
    a.data_offset = dataOffset(mt);
    ManagedArray m;
    m.method_table = f.method_table;
    m.length = f.length;
    m.element_size = mt.component_size;
    m.large_object_heap = f.loh;
    if (f.area < areas_.size() && areas_[f.area].kind != "gc-heap")
      m.heap_kind = areas_[f.area].kind;
    if (isByteArray(mt))
      m.type_name = "byte[]";
    a.managed = std::move(m);
    // Its elements are no references where the flags say its type holds none (or it has
    // 1-byte elements without pointers, in any CLR).
    a.noscan = byteLike(mt) ||
               (layout_.flags->contains_pointers && !(mt.flags & layout_.flags->contains_pointers));
    ++arrays_;
  }
  stats_.add(a);
  sink_(0, a); // one thread: lane 0
}

void CoreClrWalk::walkSegment(const Segment &seg, uint32_t area) {
  uint64_t run = memory_.capturedRunFrom(seg.mem);
  uint64_t len = std::min(run, seg.allocated - seg.mem);
  if (len < seg.allocated - seg.mem)
    diags_.warn(hexAddress(seg.mem), seg.kind().str() + " segment is captured only up to " +
                                         hexAddress(seg.mem + len) + " of " +
                                         hexAddress(seg.allocated));
  const uint8_t *base = memory_.tryView(seg.mem, len);
  if (!base)
    return;
  const uint8_t *end = base + len;
  const unsigned ptr = layout_.pointer_size;
  const bool loh = seg.flags & kSegmentFlagLoh;
  const bool large = seg.flags & (kSegmentFlagLoh | kSegmentFlagPoh);
  // Small objects: the walk reads every page of the segment, so it is read from the file in
  // large requests ahead of the walk. Large ones: only their headers (one page in many).
  std::optional<ReadAhead> ahead;
  if (!large)
    ahead.emplace(memory_, seg.mem, seg.mem + len);
  bool warned = false;
  uint64_t walked = 0; // objects since the last mark's, counted for the next mark
  const uint8_t *p = base;
  while (uint64_t(end - p) >= 2 * ptr) {
    if (layout_.word(p) == 0) { // allocation-context gap: zeroed memory not yet handed out
      p += ptr;
      continue;
    }
    uint64_t size;
    MtInfo info = objectAt(p, end, false, large, size);
    if (info.valid) {
      if (ahead)
        ahead->reached(seg.mem + (p - base));
      mark(seg.mem + (p - base), seg.mem + len, walked);
      record(seg.mem + (p - base), size, methodTableOf(p), info, p, area, loh);
      p += layout_.align(size, large);
      continue;
    }
    // Broken chain: resynchronise on the next object whose successor also checks out.
    if (!warned) {
      diags_.warn(hexAddress(seg.mem + (p - base)), "no valid object in the " + seg.kind().str() +
                                                        " segment at " + hexAddress(seg.mem) +
                                                        "; resynchronising");
      warned = true;
    }
    ++resyncs_;
    for (p += ptr; uint64_t(end - p) >= 2 * ptr; p += ptr) {
      MtInfo again = objectAt(p, end, true, large, size);
      if (!again.valid)
        continue;
      const uint8_t *next = p + layout_.align(size, large);
      uint64_t nsize;
      if (next == end || layout_.word(next) == 0 || objectAt(next, end, false, large, nsize).valid)
        break;
    }
    walked = 0; // the chain starts again here: the next object is marked
  }
  // The headers read here stay in the page cache only: the walk's resident size is one segment's,
  // not the heap's (each header read maps in the pages the kernel faults in around it).
  memory_.releasePages(seg.mem, len);
}

void CoreClrWalk::scanRange(const ScanRange &range) {
  const uint8_t *base = range.bytes, *end = base + range.size;
  const unsigned ptr = layout_.pointer_size;
  const uint8_t *chain_next = nullptr; // where the last accepted object ends
  uint64_t chain_walked = 0;           // objects since the last mark's, counted for the next
  std::optional<uint32_t> area;
  // Without segments the heap an object lives on is unknown: its size decides the alignment.
  auto objectHere = [&](const uint8_t *at, uint64_t &size) {
    MtInfo info = objectAt(at, end, true, false, size);
    if (info.valid && layout_.align(size, size >= kLohThreshold) > uint64_t(end - at))
      return MtInfo{};
    return info;
  };
  for (const uint8_t *p = base; uint64_t(end - p) >= 2 * ptr;) {
    uint64_t size;
    MtInfo info = objectHere(p, size);
    if (!info.valid) {
      p += ptr;
      continue;
    }
    const uint8_t *next = p + layout_.align(size, size >= kLohThreshold);
    bool accepted = p == chain_next || next == end;
    if (!accepted) {
      uint64_t nsize;
      accepted = objectHere(next, nsize).valid;
    }
    if (!accepted) {
      p += ptr;
      continue;
    }
    if (!area) {
      area = static_cast<uint32_t>(areas_.size());
      areas_.push_back({"gc-heap", range.start, range.size, 0});
    }
    if (p != chain_next)
      chain_walked = 0; // a chain of its own: its first object is marked
    mark(range.start + (p - base), range.start + range.size, chain_walked);
    record(range.start + (p - base), size, methodTableOf(p), info, p, *area, size >= kLohThreshold);
    chain_next = next;
    p = next;
    while (uint64_t(end - p) >= ptr && layout_.word(p) == 0) // skip zeroed, never-used memory
      p += ptr;
    // Only the padding of a 32-bit LOH object (small ones too: the free pads) to 8 bytes keeps
    // the chain across a gap.
    const bool padding = p - next < 8 && ((range.start + uint64_t(p - base)) & 7) == 0;
    if (p != next)
      chain_next = padding ? p : nullptr;
  }
}

llvm::Expected<HeapWalkResult> CoreClrWalk::run(AllocationSink sink, bool name_objects) {
  HeapWalkResult result;
  sink_ = sink;
  // byte[] is named from its element type's class name where the MethodTable layout is the one
  // the names are read from; each array is then reported as it is met, and the walk's heap stays
  // flat. Elsewhere every array waits for the walk's end (the most frequent kind is byte[]).
  name_bytes_ = name_objects;
  deferring_ = !name_bytes_;
  findSegments();
  if (!segments_.empty()) {
    for (const Segment &s : segments_) {
      uint32_t area = static_cast<uint32_t>(areas_.size());
      areas_.push_back({s.kind().str(), s.mem, s.allocated - s.mem, s.record});
      walkSegment(s, area);
    }
    result.facts.push_back({fact("discovery"), "heap_segment records"});
    result.facts.push_back({fact("segments"), std::to_string(segments_.size())});
    result.facts.push_back({fact("segment_search"), segment_search_});
    if (ignored_records_)
      result.facts.push_back({fact("segment_records_ignored"), std::to_string(ignored_records_)});
    result.facts.push_back({fact("loh"), "from segment flags"});
  } else {
    for (const ScanRange &r : heapCandidateRanges(memory_))
      scanRange(r);
    result.facts.push_back({fact("discovery"), "object scan (no heap_segment found)"});
    result.facts.push_back({fact("loh"), "heuristic: object size >= 85000"});
  }
  if (objects_ == 0)
    return createError("no " + llvm::Twine(walker_ == "coreclr" ? "CoreCLR" : ".NET Framework") +
                       " GC heap object (" + layout_.name() +
                       " layout) found in writable private memory");

  // Flags alone tell byte[] from sbyte[] and bool[] apart not at all. Where no element type was
  // named System.Byte, the one with the most instances of those not named is taken for it
  // (byte[] dominates every real heap).
  const bool byte_named = std::any_of(byte_verdicts_.begin(), byte_verdicts_.end(),
                                      [](const auto &verdict) { return verdict.second; });
  uint64_t best = 0, guessed_among = 0;
  for (auto [element, count] : byte_like_)
    if (!byte_verdicts_.count(element)) {
      ++guessed_among;
      if (!byte_named && count > best)
        best = count, byte_guess_ = element;
    }
  result.facts.push_back({fact("byte_like_element_types"), std::to_string(byte_like_.size())});
  if (!byte_like_.empty())
    result.facts.push_back({fact("byte_array_named"), byte_named
                                                          ? "from metadata (System.Byte)"
                                                          : "the most frequent 1-byte-element "
                                                            "array type"});
  if (!byte_named && guessed_among > 1)
    diags_.warn(walker_.str(), std::to_string(guessed_among) +
                                   " kinds of 1-byte-element arrays (byte[], sbyte[], bool[]); the "
                                   "most frequent is named byte[]");

  for (const HeapArea &a : areas_)
    result.areas.push_back(a);
  std::sort(result.areas.begin(), result.areas.end(),
            [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
  handlesOf(result);
  // References to objects are plain pointers (at an object's MethodTable word, or inside it from
  // a stack): the pass sees each.
  result.every_reference_seen = true;
  if (!marks_.empty()) {
    marks_.sort();
    result.facts.push_back({fact("object_names"),
                            name_objects ? "from MethodTables and ECMA-335 metadata (the .NET Core "
                                           "2.0 layout)"
                                         : "none (a MethodTable layout not checked)"});
    result.objects = makeClrObjectFinder(memory_, std::move(marks_), name_objects,
                                         {layout_.free_method_table, layout_.flags->free_flags,
                                          static_cast<uint32_t>(layout_.arrayBaseSize())},
                                         name_objects ? mts_.modules() : std::vector<ClrModule>{});
  }
  for (const Found &f : found_)
    report(f);
  found_ = {};
  result.stats = stats_;
  result.facts.push_back({fact("objects_walked"), std::to_string(objects_)});
  result.facts.push_back({fact("arrays"), std::to_string(arrays_)});
  result.facts.push_back({fact("array_method_tables"), std::to_string(array_mts_.size())});
  if (resyncs_)
    result.facts.push_back({fact("resyncs"), std::to_string(resyncs_)});
  result.facts.push_back({fact("layout"), layout_.source});
  result.facts.push_back(
      {fact("object_layout"),
       std::string(layout_.flags->name) + (layout_.pointer_size == 8 ? "-x64" : "-x86")});
  return result;
}

/// Reads a field offset from the descriptor's "types" object: {"Type": {"Field": off | [off, t]}}.
std::optional<uint64_t> typeField(const llvm::json::Object &types, llvm::StringRef type,
                                  llvm::StringRef field) {
  const llvm::json::Object *t = types.getObject(type);
  if (!t)
    return std::nullopt;
  const llvm::json::Value *v = t->get(field);
  if (!v)
    return std::nullopt;
  if (const llvm::json::Array *a = v->getAsArray())
    v = a->empty() ? nullptr : &(*a)[0];
  if (!v)
    return std::nullopt;
  if (llvm::Optional<uint64_t> n = v->getAsUINT64())
    return *n;
  return std::nullopt;
}

/// Finds the .NET 9+ contract descriptor (exported as DotNetRuntimeContractDescriptor) in the
/// captured memory of the CoreCLR module and applies what it says to `layout`. Returns a fact
/// describing the outcome; never fails (a runtime without one is the common case).
std::string applyContractDescriptor(const AddressSpace &memory, Layout &layout,
                                    Diagnostics &diags) {
  const Snapshot &snap = memory.snapshot();
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const Module &m : snap.modules)
    if (namesModule(kCoreClrNames, m.path) && m.end > m.start)
      spans.push_back({m.start, m.end});
  for (const Region &r : snap.regions)
    if (namesModule(kCoreClrNames, r.backing_file))
      spans.push_back({r.start, r.end()});
  const uint64_t captured = snap.capturedBytes();
  for (const MemoryRange &m : snap.memory) {
    bool inside = false;
    for (auto [s, e] : spans)
      inside |= m.start < e && m.end() > s;
    if (!inside)
      continue;
    for (uint64_t off = 0; off + 40 <= m.bytes.size(); off += 8) {
      const uint8_t *p = m.bytes.data() + off;
      if (read64le(p) != kContractMagic)
        continue;
      uint64_t at = m.start + off;
      uint32_t flags = read32le(p + 8), json_size = read32le(p + 12);
      uint64_t json_addr = read64le(p + 16);
      uint32_t pointer_count = read32le(p + 24);
      uint64_t pointers = read64le(p + 32);
      // The JSON is copied out of the dump: never more than the dump holds.
      if ((flags & 1) == 0 || (flags & 2) != 0 || json_size == 0 || json_size > (16u << 20) ||
          json_size > captured)
        continue;
      std::string json(json_size, '\0');
      if (llvm::Error e =
              memory.read(json_addr, llvm::MutableArrayRef<uint8_t>(
                                         reinterpret_cast<uint8_t *>(json.data()), json.size()))) {
        std::string why = llvm::toString(std::move(e));
        diags.warn(hexAddress(at), "contract descriptor found but its JSON is unreadable: " + why);
        return "found at " + hexAddress(at) + ", JSON not in the dump";
      }
      while (!json.empty() && json.back() == '\0')
        json.pop_back();
      llvm::Expected<llvm::json::Value> doc = llvm::json::parse(json);
      if (!doc) {
        diags.warn(hexAddress(at),
                   "contract descriptor JSON does not parse: " + llvm::toString(doc.takeError()));
        return "found at " + hexAddress(at) + ", JSON invalid";
      }
      const llvm::json::Object *root = doc->getAsObject();
      if (!root)
        return "found at " + hexAddress(at) + ", JSON not an object";
      if (const llvm::json::Object *types = root->getObject("types")) {
        if (auto v = typeField(*types, "MethodTable", "ParentMethodTable"); v && *v < 0x100)
          layout.parent_offset = *v;
        if (auto v = typeField(*types, "MethodTable", "ElementTypeHandle"); v && *v < 0x100)
          layout.element_type_offset = *v;
      }
      if (const llvm::json::Object *globals = root->getObject("globals")) {
        // A global is a value, [value, "type"], or an indirection [[index], ...] / [index] into the
        // pointer data; FreeObjectMethodTable is the address of g_pFreeObjectMethodTable.
        if (const llvm::json::Value *g = globals->get("FreeObjectMethodTable")) {
          std::optional<uint64_t> index;
          if (const llvm::json::Array *a = g->getAsArray(); a && !a->empty()) {
            const llvm::json::Array *inner = (*a)[0].getAsArray();
            llvm::Optional<uint64_t> n = inner && !inner->empty() ? (*inner)[0].getAsUINT64()
                                         : a->size() == 1         ? (*a)[0].getAsUINT64()
                                                                  : llvm::None;
            if (n)
              index = *n;
          }
          uint64_t slot = 0, variable = 0, mt = 0;
          if (index && *index < pointer_count && memory.readU64(pointers + 8 * *index, slot) &&
              memory.readU64(slot, variable)) {
            // The slot holds either the variable's address or (older builds) the value itself.
            mt = memory.readU32(slot) == kClr4.free_flags ? slot : variable;
          }
          if (mt)
            layout.free_method_table = mt;
        }
      }
      layout.source = "contract descriptor at " + hexAddress(at);
      return "used (" + hexAddress(at) + ")";
    }
  }
  return "absent";
}

class CoreClrWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "coreclr"; }

  const WalkerTraits &traits() const override {
    static const WalkerTraits traits =
        clrTraits({std::begin(kCoreClrNames), std::end(kCoreClrNames)});
    return traits;
  }

  bool detect(const AddressSpace &memory) const override {
    return memory.snapshot().findModule(traits().modules).has_value();
  }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions & /*one thread*/) const override {
    const unsigned ptr = memory.snapshot().system.pointer_size;
    Layout layout = Layout::builtIn(kClr4, ptr);
    // The descriptor's own layout is read for 64-bit processes only.
    std::string descriptor =
        ptr == 8 ? applyContractDescriptor(memory, layout, diags) : "not read (32-bit process)";
    CoreClrWalk walk(name(), memory, diags, layout);
    // The names come from .NET Core 2.0's MethodTable layout; a runtime that carries a contract
    // descriptor (.NET 9 and later) has another one (the TypeDef RID in m_dwFlags2).
    llvm::Expected<HeapWalkResult> result = walk.run(sink, layout.source == "built-in");
    if (result) {
      result->facts.push_back({"coreclr_contract_descriptor", descriptor});
      if (layout.free_method_table)
        result->facts.push_back(
            {"coreclr_free_method_table", hexAddress(layout.free_method_table)});
    }
    return result;
  }
};

/// The .NET Framework runtime a process loaded: clr.dll (CLR 4, .NET Framework 4.x) or
/// mscorwks.dll (CLR 2, .NET Framework 2.0 to 3.5); nullptr when neither.
const ClrFlags *netfxRuntime(const Snapshot &snapshot) {
  if (snapshot.findModule(kClr4Names))
    return &kClr4;
  if (snapshot.findModule(kClr2Names))
    return &kClr2;
  return nullptr;
}

class NetfxWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "netfx"; }

  const WalkerTraits &traits() const override {
    static const WalkerTraits traits = [] {
      std::vector<ModuleName> modules(std::begin(kClr4Names), std::end(kClr4Names));
      modules.insert(modules.end(), std::begin(kClr2Names), std::end(kClr2Names));
      return clrTraits(std::move(modules));
    }();
    return traits;
  }

  bool detect(const AddressSpace &memory) const override {
    return netfxRuntime(memory.snapshot()) != nullptr;
  }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions & /*one thread*/) const override {
    const ClrFlags *runtime = netfxRuntime(memory.snapshot());
    if (!runtime)
      return createError("neither clr.dll nor mscorwks.dll is loaded");
    Layout layout = Layout::builtIn(*runtime, memory.snapshot().system.pointer_size);
    CoreClrWalk walk(name(), memory, diags, layout);
    // The .NET Framework's MethodTable layout is not checked: its objects are found, not named.
    llvm::Expected<HeapWalkResult> result = walk.run(sink, false);
    if (result)
      result->facts.push_back({"netfx_runtime", runtime == &kClr4
                                                    ? "clr.dll (.NET Framework 4.x)"
                                                    : "mscorwks.dll (.NET Framework 2.0-3.5)"});
    return result;
  }
};

} // namespace

std::unique_ptr<HeapWalker> makeCoreClrWalker() {
  return std::make_unique<CoreClrWalker>();
}

std::unique_ptr<HeapWalker> makeNetfxWalker() {
  return std::make_unique<NetfxWalker>();
}

} // namespace dumpsift
