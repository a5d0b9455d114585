// The "coreclr" walker: arrays on the GC heap of .NET Core / .NET 5+ (64-bit), found from the
// object layout alone, without the runtime's DAC. See docs/heap-managed.md for the method, what is
// heuristic and what could fool it.
//
// Layout facts used (64-bit; dotnet/runtime gc/env/gcenv.object.h, vm/object.h, vm/methodtable.h,
// gc/gcpriv.h; checked on a CoreCLR 2.0 core):
//   object:      [-8] ObjHeader, [0] MethodTable* (low 3 bits may carry GC mark/pin bits),
//                arrays: [8] u32 length, [12] u32 pad, [16] elements.
//   MethodTable: [0] u32 flags (bit 31: has component size, then the low 16 bits are the element
//                size; bits 16-19: category, 0x8xxxx = array), [4] u32 base size,
//                [0x10] parent MethodTable*, [0x30] element type handle (arrays).
//   size:        base size + length * element size; objects follow each other at 8-byte steps.
//   free object: MethodTable with flags 0x80000001, base size 24, no parent.
//   heap_segment (segments and regions alike): allocated, committed, reserved, used, mem, flags
//                (8 = LOH, 512 = POH) as its first six words.
#include "dumpsift/support/hex.h"
#include "scan.h"
#include "walkers.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

namespace dumpsift {
namespace {

using namespace managed;

constexpr uint32_t kHasComponentSize = 0x80000000u;
constexpr uint32_t kCategoryArrayMask = 0x000C0000u;
constexpr uint32_t kCategoryArray = 0x00080000u;
constexpr uint32_t kFreeObjectFlags = 0x80000001u;
constexpr uint32_t kByteLikeMask = 0x800FFFFFu;  // has-component, category, element size
constexpr uint32_t kByteLikeArray = 0x800A0001u; // SZ array of 1-byte elements
constexpr uint32_t kArrayBaseSize = 24;
constexpr uint64_t kArrayLengthOffset = 8;
constexpr uint32_t kArrayDataOffset = 16;
constexpr uint64_t kMinObjectSize = 24;
constexpr uint64_t kLohThreshold = 85000; // LARGE_OBJECT_SIZE; the effective one can be larger
constexpr uint64_t kSegmentFlagLoh = 8;
constexpr uint64_t kSegmentFlagPoh = 512;
constexpr uint64_t kMaxObjectSize = uint64_t(1) << 40;
constexpr uint64_t kMaxClassBaseSize = uint64_t(1) << 24;
constexpr unsigned kMaxParentDepth = 32;
constexpr uint64_t kContractMagic = 0x0043414443434e44ull; // "DNCCDAC\0" little-endian

bool isCoreClrModule(llvm::StringRef name) {
  return name == "libcoreclr.so" || name.equals_insensitive("coreclr.dll") ||
         name == "libcoreclr.dylib";
}

/// Offsets that may come from the runtime's contract descriptor instead of the built-in table.
struct Layout {
  uint64_t parent_offset = 0x10;       // MethodTable::m_pParentMethodTable
  uint64_t element_type_offset = 0x30; // MethodTable::m_ElementTypeHnd (arrays)
  uint64_t free_method_table = 0;      // g_pFreeObjectMethodTable, when the descriptor gives it
  std::string source = "built-in";
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
    if (mt == 0 || (mt & 7) != 0 || depth > kMaxParentDepth)
      return info;
    const uint8_t *p =
        memory_.tryView(mt, std::max<uint64_t>(layout_.element_type_offset, 0x18) + 8);
    if (!p && !(p = memory_.tryView(mt, layout_.parent_offset + 8)))
      return info;
    info.flags = read32le(p);
    info.base_size = read32le(p + 4);
    info.component = (info.flags & kHasComponentSize) != 0;
    if (layout_.free_method_table
            ? mt == layout_.free_method_table
            : info.flags == kFreeObjectFlags && info.base_size == kArrayBaseSize &&
                  read64le(p + layout_.parent_offset) == 0) {
      info.valid = info.free = true;
      info.component_size = 1;
      return info;
    }
    uint64_t parent = read64le(p + layout_.parent_offset);
    if (info.component) {
      info.component_size = info.flags & 0xFFFF;
      info.array = (info.flags & kCategoryArrayMask) == kCategoryArray;
      if (info.component_size == 0 || parent == 0)
        return info;
      if (info.array) {
        // SZ arrays have base size 24; multi-dimensional ones add 8 bytes per rank.
        if (info.base_size < kArrayBaseSize || info.base_size > kArrayBaseSize + 8 * 32 ||
            info.base_size % 8 != 0)
          return info;
        if (layout_.element_type_offset + 8 <= 0x40) {
          if (const uint8_t *e = memory_.tryView(mt + layout_.element_type_offset, 8))
            info.element_type = read64le(e);
        }
      } else if (info.base_size < 20 || info.base_size > 64) { // strings: 22 (.NET Core)
        return info;
      }
    } else if (info.base_size < kMinObjectSize || info.base_size % 8 != 0 ||
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
    return info;
  }

  const AddressSpace &memory_;
  const Layout &layout_;
  VerdictCache<MtInfo, 15> cache_;
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

/// A compact record of one reported object, kept until type names are settled.
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
  CoreClrWalk(const AddressSpace &memory, Diagnostics &diags, const Layout &layout)
      : memory_(memory), diags_(diags), layout_(layout), mts_(memory, layout),
        bounds_(memory.snapshot()) {}

  /// Runs the whole walk; reports through `sink` after naming byte arrays.
  llvm::Expected<HeapWalkResult> run(AllocationSink sink);

private:
  /// Size of the object at `addr` whose MethodTable is `mt` (0 when its length is unreadable).
  uint64_t objectSize(const uint8_t *obj, const MtInfo &mt) const {
    if (!mt.component)
      return mt.base_size;
    return uint64_t(mt.base_size) +
           uint64_t(read32le(obj + kArrayLengthOffset)) * mt.component_size;
  }

  /// The MethodTable of a plausible object at `p` (inside a range ending at `end`), or an invalid
  /// MtInfo. `strict` also asks arrays for a zero pad word after the length.
  MtInfo objectAt(const uint8_t *p, const uint8_t *end, bool strict, uint64_t &size) {
    size = 0;
    if (end - p < 16)
      return {};
    uint64_t mt = read64le(p) & ~uint64_t(7);
    if (mt == 0 || !bounds_.contains(mt))
      return {};
    MtInfo info = mts_.get(mt);
    if (!info.valid)
      return {};
    size = objectSize(p, info);
    if (size > kMaxObjectSize || alignUp8(size) > uint64_t(end - p))
      return {};
    if (strict && info.array && read32le(p + kArrayLengthOffset + 4) != 0)
      return {};
    return info;
  }

  void findSegments();
  void walkSegment(const Segment &seg, uint32_t area);
  void scanRange(const ScanRange &range);
  void record(uint64_t addr, uint64_t size, uint64_t mt, const MtInfo &info, const uint8_t *obj,
              uint32_t area, bool loh);

  const AddressSpace &memory_;
  Diagnostics &diags_;
  const Layout &layout_;
  MethodTables mts_;
  CapturedBounds bounds_;
  std::vector<Segment> segments_;
  std::vector<HeapArea> areas_;
  std::vector<Found> found_;
  std::unordered_map<uint64_t, MtInfo> array_mts_; // every array MethodTable seen
  uint64_t objects_ = 0;
  uint64_t resyncs_ = 0;
  uint64_t ignored_records_ = 0;
};

void CoreClrWalk::findSegments() {
  std::vector<Segment> all;
  for (const ScanRange &r : heapCandidateRanges(memory_)) {
    for (uint64_t off = 0; off + 48 <= r.size; off += 8) {
      const uint8_t *w = r.bytes + off;
      uint64_t mem = read64le(w + 32);
      if (mem == 0 || (mem & 7) != 0)
        continue;
      uint64_t allocated = read64le(w);
      if (allocated <= mem)
        continue;
      uint64_t committed = read64le(w + 8), reserved = read64le(w + 16), flags = read64le(w + 40);
      if (committed < allocated || reserved < committed || flags >= 0x10000 ||
          reserved - mem > (uint64_t(1) << 40))
        continue;
      const uint8_t *obj = memory_.tryView(mem, 24);
      if (!obj)
        continue;
      uint64_t run = memory_.capturedRunFrom(mem);
      uint64_t size;
      if (!objectAt(obj, obj + std::min<uint64_t>(run, allocated - mem), false, size).valid)
        continue;
      all.push_back({r.start + off, mem, allocated, flags});
    }
  }
  // One record per segment. Segment headers (the record just before the objects) go first; other
  // records (.NET 7+ region tables) only where no header claimed the memory. A record-like run of
  // words inside an object is then ignored for overlapping a real segment.
  auto header = [](const Segment &s) { return s.record < s.mem && s.mem - s.record <= 0x10000; };
  std::sort(all.begin(), all.end(),
            [](const Segment &a, const Segment &b) { return a.mem < b.mem; });
  auto overlaps = [this](const Segment &s) {
    for (const Segment &k : segments_)
      if (s.mem < k.allocated && k.mem < s.allocated)
        return true;
    return false;
  };
  for (int pass = 0; pass < 2; ++pass)
    for (const Segment &s : all) {
      if (header(s) != (pass == 0))
        continue;
      if (overlaps(s)) {
        ++ignored_records_;
        continue;
      }
      segments_.push_back(s);
    }
  std::sort(segments_.begin(), segments_.end(),
            [](const Segment &a, const Segment &b) { return a.mem < b.mem; });
}

void CoreClrWalk::record(uint64_t addr, uint64_t size, uint64_t mt, const MtInfo &info,
                         const uint8_t *obj, uint32_t area, bool loh) {
  ++objects_;
  if (!info.array && !info.free)
    return;
  if (info.array)
    array_mts_.emplace(mt, info);
  found_.push_back({addr, size, mt, read32le(obj + kArrayLengthOffset), area, info.free, loh});
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
  bool loh = seg.flags & kSegmentFlagLoh;
  bool warned = false;
  const uint8_t *p = base;
  while (end - p >= 16) {
    uint64_t word = read64le(p);
    if (word == 0) { // allocation-context gap: zeroed memory not yet handed out
      p += 8;
      continue;
    }
    uint64_t size;
    MtInfo info = objectAt(p, end, false, size);
    if (info.valid) {
      record(seg.mem + (p - base), size, word & ~uint64_t(7), info, p, area, loh);
      p += alignUp8(size);
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
    for (p += 8; end - p >= 16; p += 8) {
      MtInfo again = objectAt(p, end, true, size);
      if (!again.valid)
        continue;
      const uint8_t *next = p + alignUp8(size);
      uint64_t nsize;
      if (next == end || read64le(next) == 0 || objectAt(next, end, false, nsize).valid)
        break;
    }
  }
}

void CoreClrWalk::scanRange(const ScanRange &range) {
  const uint8_t *base = range.bytes, *end = base + range.size;
  const uint8_t *chain_next = nullptr; // where the last accepted object ends
  std::optional<uint32_t> area;
  for (const uint8_t *p = base; end - p >= 16;) {
    uint64_t size;
    MtInfo info = objectAt(p, end, true, size);
    if (!info.valid) {
      p += 8;
      continue;
    }
    const uint8_t *next = p + alignUp8(size);
    bool accepted = p == chain_next || next == end;
    if (!accepted) {
      uint64_t nsize;
      accepted = objectAt(next, end, true, nsize).valid;
    }
    if (!accepted) {
      p += 8;
      continue;
    }
    if (!area) {
      area = static_cast<uint32_t>(areas_.size());
      areas_.push_back({"gc-heap", range.start, range.size, 0});
    }
    record(range.start + (p - base), size, read64le(p) & ~uint64_t(7), info, p, *area,
           size >= kLohThreshold);
    chain_next = next;
    p = next;
    while (end - p >= 8 && read64le(p) == 0) // a gap keeps the chain: zeroed, never-used memory
      p += 8;
    if (p != next)
      chain_next = nullptr;
  }
}

llvm::Expected<HeapWalkResult> CoreClrWalk::run(AllocationSink sink) {
  HeapWalkResult result;
  result.walker = "coreclr";
  findSegments();
  if (!segments_.empty()) {
    for (const Segment &s : segments_) {
      uint32_t area = static_cast<uint32_t>(areas_.size());
      areas_.push_back({s.kind().str(), s.mem, s.allocated - s.mem, s.record});
      walkSegment(s, area);
    }
    result.facts.push_back({"coreclr_discovery", "heap_segment records"});
    result.facts.push_back({"coreclr_segments", std::to_string(segments_.size())});
    if (ignored_records_)
      result.facts.push_back({"coreclr_segment_records_ignored", std::to_string(ignored_records_)});
    result.facts.push_back({"coreclr_loh", "from segment flags"});
  } else {
    for (const ScanRange &r : heapCandidateRanges(memory_))
      scanRange(r);
    result.facts.push_back({"coreclr_discovery", "object scan (no heap_segment found)"});
    result.facts.push_back({"coreclr_loh", "heuristic: object size >= 85000"});
  }
  if (objects_ == 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "no CoreCLR GC heap object found in writable private memory");

  // Name byte arrays. Flags alone tell byte[] from sbyte[] and bool[] apart not at all; the element
  // type with the most instances is taken as System.Byte (byte[] dominates every real heap).
  std::map<uint64_t, uint64_t> byte_like; // element type -> instances
  for (const Found &f : found_) {
    if (f.free)
      continue;
    const MtInfo &mt = array_mts_.at(f.method_table);
    if ((mt.flags & kByteLikeMask) == kByteLikeArray && mt.base_size == kArrayBaseSize)
      ++byte_like[mt.element_type];
  }
  uint64_t byte_element = 0, best = 0;
  for (auto [element, count] : byte_like)
    if (count > best)
      best = count, byte_element = element;
  result.facts.push_back({"coreclr_byte_like_element_types", std::to_string(byte_like.size())});
  if (byte_like.size() > 1)
    diags_.warn("coreclr", std::to_string(byte_like.size()) +
                               " kinds of 1-byte-element arrays (byte[], sbyte[], bool[]); the "
                               "most frequent is named byte[]");

  for (const HeapArea &a : areas_)
    result.areas.push_back(a);
  std::sort(result.areas.begin(), result.areas.end(),
            [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
  uint64_t arrays = 0;
  for (const Found &f : found_) {
    Allocation a;
    a.address = f.address;
    a.size = f.size;
    a.chunk_address = f.address;
    a.chunk_size = alignUp8(f.size);
    a.arena = f.area < areas_.size() ? areas_[f.area].arena : 0;
    a.data_offset = kArrayDataOffset;
    a.state = f.free ? AllocState::Free : AllocState::Used;
    if (!f.free) {
      const MtInfo &mt = array_mts_.at(f.method_table);
      ManagedArray m;
      m.method_table = f.method_table;
      m.length = f.length;
      m.element_size = mt.component_size;
      m.large_object_heap = f.loh;
      if (f.area < areas_.size() && areas_[f.area].kind != "gc-heap")
        m.heap_kind = areas_[f.area].kind;
      if ((mt.flags & kByteLikeMask) == kByteLikeArray && mt.base_size == kArrayBaseSize &&
          mt.element_type == byte_element)
        m.type_name = "byte[]";
      a.managed = std::move(m);
      ++arrays;
    }
    result.stats.add(a);
    sink(a);
  }
  result.facts.push_back({"coreclr_objects_walked", std::to_string(objects_)});
  result.facts.push_back({"coreclr_arrays", std::to_string(arrays)});
  result.facts.push_back({"coreclr_array_method_tables", std::to_string(array_mts_.size())});
  if (resyncs_)
    result.facts.push_back({"coreclr_resyncs", std::to_string(resyncs_)});
  result.facts.push_back({"coreclr_layout", layout_.source});
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
    if (isCoreClrModule(baseName(m.path)) && m.end > m.start)
      spans.push_back({m.start, m.end});
  for (const Region &r : snap.regions)
    if (!r.backing_file.empty() && isCoreClrModule(baseName(r.backing_file)))
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
          if (index && *index < pointer_count && memory.tryReadU64(pointers + 8 * *index, slot) &&
              memory.tryReadU64(slot, variable)) {
            uint32_t f = 0;
            // The slot holds either the variable's address or (older builds) the value itself.
            mt = memory.tryReadU32(slot, f) && f == kFreeObjectFlags ? slot : variable;
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

  bool detect(const AddressSpace &memory) const override {
    return hasModule(memory.snapshot(), isCoreClrModule);
  }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags) const override {
    if (memory.snapshot().system.pointer_size != 8)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the coreclr walker reads 64-bit processes only");
    Layout layout;
    std::string descriptor = applyContractDescriptor(memory, layout, diags);
    CoreClrWalk walk(memory, diags, layout);
    llvm::Expected<HeapWalkResult> result = walk.run(sink);
    if (result) {
      result->facts.push_back({"coreclr_contract_descriptor", descriptor});
      if (layout.free_method_table)
        result->facts.push_back(
            {"coreclr_free_method_table", hexAddress(layout.free_method_table)});
    }
    return result;
  }
};

} // namespace

std::unique_ptr<HeapWalker> makeCoreClrWalker() {
  return std::make_unique<CoreClrWalker>();
}

} // namespace dumpsift
