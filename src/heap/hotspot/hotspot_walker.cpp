// The "hotspot" walker: every Java primitive array in a HotSpot heap, found by a linear parse of
// each space from bottom to top, object by object, as the serviceability agent does
// (ObjectHeap.java), but reading only the dump. An object's class comes from its header; the
// class's layout helper sizes it (klass.hpp). docs/heap-hotspot.md describes it all.
#include "hotspot_walker.h"

#include "dumpsift/support/bytes.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "jvm.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <array>

namespace dumpsift {

namespace {

using namespace hotspot;

/// Verdicts cached per klass address: a real heap has a few thousand classes; a hostile one may
/// point at millions of addresses, whose verdicts are then recomputed instead of kept.
constexpr size_t kMaxCachedKlasses = 1 << 16;
/// Entries of the direct-mapped cache in front of them (a power of two).
constexpr size_t kRecentKlasses = 256;
/// Instances are never larger than this (the layout helper is an int).
constexpr uint64_t kMaxInstanceBytes = uint64_t(1) << 31;

/// What a Klass says about the objects of its class.
struct KlassInfo {
  enum Kind : uint8_t {
    Invalid,        // not a Klass
    Instance,       // size = layout helper
    Mirror,         // java.lang.Class: size in the object
    PrimitiveArray, // typeArrayOop: listed
    ObjectArray,    // objArrayOop: counted
    FillerArray,    // jdk.internal.vm.FillerElement[] (JDK 21+): free space
    FillerObject,   // jdk.internal.vm.FillerObject (JDK 21+): free space
    StackChunk,     // jdk.internal.vm.StackChunk (JDK 21+): cannot be sized here
  };
  Kind kind = Invalid;
  uint8_t header = 0;     // arrays: the element base offset
  uint8_t log2_elem = 0;  // arrays: log2 of the element size
  uint8_t basic_type = 0; // primitive arrays: T_BOOLEAN (4) ... T_LONG (11)
  uint32_t instance_bytes = 0;
};

/// The Java name of a primitive array of BasicType `t` (globalDefinitions.hpp: T_BOOLEAN = 4,
/// T_CHAR, T_FLOAT, T_DOUBLE, T_BYTE, T_SHORT, T_INT, T_LONG = 11), with its element size.
struct Primitive {
  const char *name;
  uint8_t log2_size;
};
constexpr Primitive kPrimitives[] = {{"boolean[]", 0}, {"char[]", 1}, {"float[]", 2},
                                     {"double[]", 3},  {"byte[]", 0}, {"short[]", 1},
                                     {"int[]", 2},     {"long[]", 3}};
constexpr uint8_t kFirstPrimitive = 4, kLastPrimitive = 11;

/// One object at an address, as its header and class size it.
struct Object {
  uint64_t klass = 0;
  KlassInfo info;
  uint64_t size = 0;
  uint64_t length = 0; // arrays
};

/// Views of the dump, one captured range at a time (the spaces lie in a few large ranges).
class HeapBytes {
public:
  explicit HeapBytes(const AddressSpace &memory) : memory_(memory) {}
  /// [addr, addr + len) when the dump holds all of it, else nullptr.
  const uint8_t *view(uint64_t addr, uint64_t len) {
    if (range_ && addr >= range_->start && addr < range_->end() && len <= range_->end() - addr)
      return range_->bytes.data() + (addr - range_->start);
    const MemoryRange *r = memory_.rangeContaining(addr);
    if (!r)
      return memory_.tryView(addr, len);
    range_ = r;
    if (len > r->end() - addr)
      return memory_.tryView(addr, len);
    return r->bytes.data() + (addr - r->start);
  }

private:
  const AddressSpace &memory_;
  const MemoryRange *range_ = nullptr;
};

/// One walk of one JVM's heap.
class HeapWalk {
public:
  HeapWalk(const AddressSpace &memory, const Jvm &jvm, AllocationSink sink, Diagnostics &diags)
      : memory_(memory), bytes_(memory), jvm_(jvm), layout_(jvm.layout), sink_(sink),
        diags_(diags) {}

  void run(HeapWalkResult &result) {
    size_t gap = 0;
    // Every object header is read, so the walk would map every page of the small objects'
    // spaces: the pages go once the walk has passed them (the spaces come in address order).
    ReleaseBehind behind(memory_, jvm_.spaces.empty() ? 0 : jvm_.spaces.front().bottom,
                         jvm_.spaces.empty() ? 0 : jvm_.spaces.back().end);
    behind_ = &behind;
    for (const Space &s : jvm_.spaces) {
      if (s.walk && s.top > s.bottom)
        walkSpace(s, gap);
      behind.passed(s.end);
    }
    behind_ = nullptr;
    result.stats = stats_;
    auto fact = [&](std::string key, std::string value) {
      result.facts.emplace_back(std::move(key), std::move(value));
    };
    fact("hotspot_objects", std::to_string(objects_));
    fact("hotspot_object_bytes", std::to_string(object_bytes_));
    fact("hotspot_primitive_arrays", std::to_string(arrays_));
    fact("hotspot_fillers", std::to_string(stats_.free_count));
    fact("hotspot_filler_arrays", std::to_string(filler_arrays_));
    fact("hotspot_filler_array_bytes", std::to_string(filler_array_bytes_));
    fact("hotspot_klasses", std::to_string(valid_klasses_));
    if (resyncs_)
      fact("hotspot_resyncs", std::to_string(resyncs_));
  }

private:
  /// The class of the object at `addr` from its header `h` (at least 16 bytes), or 0.
  uint64_t klassOf(uint64_t addr, const uint8_t *h) {
    if (layout_.compact_headers) {
      uint64_t mark = read64le(h);
      if ((mark & 3) == 2 && !layout_.monitor_table && layout_.monitor_header_offset) {
        // Inflated lock: the mark points at the ObjectMonitor, which keeps the header.
        uint64_t saved;
        if (!memory_.readU64((mark & ~uint64_t(3)) + *layout_.monitor_header_offset, saved))
          return 0;
        mark = saved;
      }
      (void)addr;
      return layout_.narrow_klass_base +
             ((mark >> layout_.mark_klass_shift) << layout_.narrow_klass_shift);
    }
    if (layout_.compressed_class_pointers) {
      const uint32_t narrow = read32le(h + layout_.klass_offset);
      return narrow ? layout_.narrow_klass_base + (uint64_t(narrow) << layout_.narrow_klass_shift)
                    : 0;
    }
    return read64le(h + layout_.klass_offset);
  }

  /// The verdict on `klass`, computed on first sight: a small direct-mapped cache in front of
  /// the map of every class seen (neighbouring objects alternate between a few classes).
  KlassInfo klassInfo(uint64_t klass) {
    Recent &slot = recent_[(klass >> 3) & (kRecentKlasses - 1)];
    if (slot.filled && slot.klass == klass)
      return slot.info;
    KlassInfo info;
    if (isReservedDenseKey(klass)) // no class: and no key of the map below
      return info;
    if (auto it = klasses_.find(klass); it != klasses_.end()) {
      info = it->second;
    } else {
      info = readKlass(klass);
      if (info.kind != KlassInfo::Invalid || klasses_.size() < kMaxCachedKlasses) {
        valid_klasses_ += info.kind != KlassInfo::Invalid;
        klasses_.try_emplace(klass, info);
      }
    }
    slot = {klass, info, true};
    return info;
  }

  /// Decides what `klass` is: a readable Klass whose C++ vtable's first entry is code in libjvm
  /// (the vtable itself is in libjvm, or cloned into the CDS archive), whose layout helper is an
  /// instance or array one (klass.hpp), and whose name is a readable Symbol.
  KlassInfo readKlass(uint64_t klass) {
    KlassInfo info;
    if (klass == 0 || (klass & 7))
      return info;
    uint64_t vtable, method, name;
    uint32_t lh_bits;
    if (!memory_.readU64(klass, vtable) || !memory_.readU64(vtable, method) ||
        !jvm_.libjvm.contains(method) ||
        !memory_.readU32(klass + layout_.klass_layout_helper, lh_bits) ||
        !memory_.readU64(klass + layout_.klass_name, name))
      return info;
    const uint8_t *len_bytes = memory_.tryView(name + layout_.symbol_length, 2);
    if (!len_bytes)
      return info;
    const uint16_t name_length = read16le(len_bytes);
    const char *body = reinterpret_cast<const char *>(
        memory_.tryView(name + layout_.symbol_body, std::max<uint16_t>(name_length, 1)));
    if (name_length == 0 || !body)
      return info;
    const llvm::StringRef symbol(body, name_length);
    const auto lh = static_cast<int32_t>(lh_bits);
    if (lh > 0) {
      const uint64_t bytes = static_cast<uint64_t>(lh) & ~uint64_t(7);
      if (bytes < 8 || bytes >= kMaxInstanceBytes)
        return info;
      info.instance_bytes = static_cast<uint32_t>(bytes);
      info.kind = symbol == "java/lang/Class"                ? KlassInfo::Mirror
                  : symbol == "jdk/internal/vm/FillerObject" ? KlassInfo::FillerObject
                  : symbol == "jdk/internal/vm/StackChunk"   ? KlassInfo::StackChunk
                                                             : KlassInfo::Instance;
      if (info.kind == KlassInfo::Mirror && !layout_.mirror_size_offset)
        info.kind = KlassInfo::Invalid;
      return info;
    }
    if (lh == 0)
      return info;
    // Array: [tag:2][header size:8][basic type:8][log2 element size:6] (Klass::_lh_*).
    const uint32_t tag = lh_bits >> 30;
    const uint32_t header = (lh_bits >> 16) & 0xff, basic_type = (lh_bits >> 8) & 0xff;
    const uint32_t log2_elem = lh_bits & 0x3f;
    if (header < 8 || header > 32 || log2_elem > 3 || symbol.front() != '[')
      return info;
    info.header = static_cast<uint8_t>(header);
    info.log2_elem = static_cast<uint8_t>(log2_elem);
    if (tag == 2) {
      info.kind = KlassInfo::ObjectArray;
      return info;
    }
    if (tag != 3 || basic_type < kFirstPrimitive || basic_type > kLastPrimitive ||
        kPrimitives[basic_type - kFirstPrimitive].log2_size != log2_elem)
      return info;
    info.basic_type = static_cast<uint8_t>(basic_type);
    info.kind = symbol == "[Ljdk/internal/vm/FillerElement;" ? KlassInfo::FillerArray
                                                             : KlassInfo::PrimitiveArray;
    return info;
  }

  /// The object at `addr` that must end by `limit` (or anywhere, when `limit` is 0), or false.
  bool parse(uint64_t addr, uint64_t limit, Object &o) {
    const uint8_t *h = bytes_.view(addr, layout_.length_offset + 4);
    if (!h)
      return false;
    o.klass = klassOf(addr, h);
    o.info = klassInfo(o.klass);
    const KlassInfo &k = o.info;
    switch (k.kind) {
    case KlassInfo::Invalid:
    case KlassInfo::StackChunk:
      return false;
    case KlassInfo::Instance:
    case KlassInfo::FillerObject:
      o.size = k.instance_bytes;
      break;
    case KlassInfo::Mirror: {
      const uint8_t *words = bytes_.view(addr + *layout_.mirror_size_offset, 4);
      if (!words)
        return false;
      o.size = uint64_t(read32le(words)) * 8;
      if (o.size < k.instance_bytes || o.size >= kMaxInstanceBytes)
        return false;
      break;
    }
    case KlassInfo::PrimitiveArray:
    case KlassInfo::ObjectArray:
    case KlassInfo::FillerArray: {
      const auto length = static_cast<int32_t>(read32le(h + layout_.length_offset));
      if (length < 0)
        return false;
      o.length = static_cast<uint64_t>(length);
      const uint64_t a = layout_.alignment;
      o.size = (k.header + (o.length << k.log2_elem) + a - 1) & ~(a - 1);
      break;
    }
    }
    return limit == 0 || o.size <= limit - addr;
  }

  /// Walks [s.bottom, s.top), skipping the TLAB gaps that start inside it; `gap` indexes the
  /// first gap not yet passed (spaces come in address order). A gap ends at the space's top at the
  /// latest: no TLAB crosses a space.
  void walkSpace(const Space &s, size_t &gap) {
    const std::vector<TlabGap> &gaps = jvm_.tlab_gaps;
    const bool humongous = s.kind == "humongous";
    bool warned = false;
    while (gap < gaps.size() && gaps[gap].start < s.bottom)
      ++gap;
    // Every page of a space of small objects is read: from the file in large requests ahead of
    // the walk. A humongous object's: its header only.
    std::optional<ReadAhead> ahead;
    if (!humongous)
      ahead.emplace(memory_, s.bottom, s.top);
    uint64_t p = s.bottom;
    while (p < s.top) {
      if (ahead)
        ahead->reached(p);
      while (gap < gaps.size() && gaps[gap].start < s.top && gaps[gap].end <= p)
        ++gap;
      const bool in_space = gap < gaps.size() && gaps[gap].start < s.top;
      if (in_space && gaps[gap].start <= p) {
        p = std::max(p, std::min(gaps[gap].end, s.top));
        ++gap;
        continue;
      }
      const uint64_t limit = in_space ? gaps[gap].start : s.top;
      Object o;
      // A humongous object starts its region and runs on into the next ones.
      if (parse(p, humongous ? 0 : limit, o)) {
        emit(s, humongous, p, o);
        if (o.size >= s.top - p) // ends the space (a humongous object passes its top)
          break;
        p += o.size;
        behind_->passed(p);
        continue;
      }
      const uint64_t next = resync(p + 8, limit);
      if (!warned) {
        warned = true;
        diags_.warn(
            hexAddress(p),
            ("no valid object in the " + s.kind + " space at " + hexAddress(s.bottom) +
             " (class word " + hexAddress(o.klass) + "); the walk " +
             (next < limit ? "resumed at " + hexAddress(next) : "skipped to " + hexAddress(limit)))
                .str());
      }
      ++resyncs_;
      p = next;
    }
  }

  /// The first address from `from` (8-aligned steps, below `limit`) that holds a valid object
  /// followed by another valid object or by `limit` itself; `limit` when there is none.
  uint64_t resync(uint64_t from, uint64_t limit) {
    for (uint64_t q = from; q < limit; q += 8) {
      Object o, next;
      if (!parse(q, limit, o))
        continue;
      if (q + o.size == limit || parse(q + o.size, limit, next))
        return q;
    }
    return limit;
  }

  void emit(const Space &s, bool humongous, uint64_t addr, const Object &o) {
    const KlassInfo &k = o.info;
    ++objects_;
    object_bytes_ += o.size;
    const bool filler = k.kind == KlassInfo::FillerArray || k.kind == KlassInfo::FillerObject;
    if (filler) {
      if (k.kind == KlassInfo::FillerArray) {
        ++filler_arrays_;
        filler_array_bytes_ += o.size;
      }
      ++stats_.free_count;
      stats_.free_bytes += o.size;
      return;
    }
    ++stats_.used_count;
    stats_.used_bytes += o.size;
    if (k.kind != KlassInfo::PrimitiveArray)
      return;
    ++arrays_;
    // One Allocation per element type, reused: its strings change only with the space.
    Allocation &a = arrays_by_type_[k.basic_type - kFirstPrimitive];
    if (!a.managed) {
      a.managed.emplace();
      a.managed->type_name = kPrimitives[k.basic_type - kFirstPrimitive].name;
      a.managed->element_size = 1u << k.log2_elem;
      a.state = AllocState::Used;
    }
    ManagedArray &m = *a.managed;
    a.address = a.chunk_address = addr;
    a.size = a.chunk_size = o.size;
    a.arena = s.bottom;
    a.data_offset = k.header;
    m.method_table = o.klass;
    m.length = o.length;
    m.large_object_heap = humongous;
    if (m.heap_kind != s.kind)
      m.heap_kind = s.kind.str();
    sink_(0, a); // one thread: lane 0
  }

  const AddressSpace &memory_;
  HeapBytes bytes_;
  ReleaseBehind *behind_ = nullptr; // set while run() walks the spaces
  const Jvm &jvm_;
  const ObjectLayout &layout_;
  AllocationSink sink_;
  Diagnostics &diags_;
  struct Recent {
    uint64_t klass = 0;
    KlassInfo info;
    bool filled = false;
  };
  std::array<Recent, kRecentKlasses> recent_{};
  llvm::DenseMap<uint64_t, KlassInfo> klasses_;
  std::array<Allocation, kLastPrimitive - kFirstPrimitive + 1> arrays_by_type_;
  HeapStats stats_;
  uint64_t objects_ = 0, object_bytes_ = 0, arrays_ = 0, resyncs_ = 0, valid_klasses_ = 0;
  uint64_t filler_arrays_ = 0, filler_array_bytes_ = 0;
};

/// Areas for the report: runs of neighbouring spaces of one kind (G1 regions merge).
std::vector<HeapArea> areasOf(const Jvm &jvm) {
  std::vector<HeapArea> areas;
  for (const Space &s : jvm.spaces) {
    if (!areas.empty() && areas.back().kind == s.kind &&
        areas.back().start + areas.back().size == s.bottom)
      areas.back().size += s.end - s.bottom;
    else
      areas.push_back({s.kind.str(), s.bottom, s.end - s.bottom, 0});
  }
  return areas;
}

/// The handles for the holders pass, and their facts. Only when a strong storage was found: a
/// JVM whose storages dumpsift could not read keeps every native word as a possible holder.
void handlesOf(const Jvm &jvm, HeapWalkResult &result) {
  uint64_t strong = 0, weak = 0, strong_handles = 0;
  for (const HandleStorage &s : jvm.storages) {
    (s.weak ? weak : strong) += 1;
    if (!s.weak)
      strong_handles += s.handles;
  }
  result.facts.push_back({"hotspot_handle_storages",
                          std::to_string(strong) + " strong, " + std::to_string(weak) + " weak"});
  result.facts.push_back({"hotspot_strong_handles", std::to_string(strong_handles)});
  if (strong == 0)
    return;
  result.held_through_handles = true;
  for (auto [start, end] : jvm.strong_handles)
    result.handles.push_back({"oop-handle", start, end - start, 0});
}

class HotSpotWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "hotspot"; }

  /// 64-bit little-endian processes (the LP64 layouts of vmStructs' entries) that map
  /// libjvm.so; object sizes say nothing of a request.
  const WalkerTraits &traits() const override {
    static const WalkerTraits traits{.platforms = Platforms::littleEndian64(),
                                     .modules = {std::begin(kLibjvmNames), std::end(kLibjvmNames)},
                                     .requests = nullptr,
                                     .thresholds = {},
                                     // Primitive arrays only, held by narrow oops.
                                     .listing = BlockListing::Partial};
    return traits;
  }

  bool detect(const AddressSpace &memory) const override {
    return findLibjvm(memory.snapshot()).has_value();
  }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions & /*one thread*/) const override {
    auto libjvm = findLibjvm(memory.snapshot());
    if (!libjvm)
      return createError("hotspot: no libjvm.so is mapped in this process");
    auto jvm = readJvm(memory, *libjvm, diags);
    if (!jvm)
      return jvm.takeError();
    HeapWalkResult result;
    const ObjectLayout &l = jvm->layout;
    auto onOff = [](bool b) { return std::string(b ? "on" : "off"); };
    result.facts = {
        {"hotspot_gc", collectorName(jvm->gc).str()},
        {"hotspot_heap", hexAddress(jvm->reserved_start) + "-" + hexAddress(jvm->reserved_end)},
        {"hotspot_compressed_oops", onOff(l.compressed_oops)},
        {"hotspot_compressed_class_pointers", onOff(l.compressed_class_pointers)},
        {"hotspot_compact_headers", onOff(l.compact_headers)},
        {"hotspot_object_alignment", std::to_string(l.alignment)},
        {"hotspot_vmstructs", std::to_string(jvm->vm_fields) + " fields, " +
                                  std::to_string(jvm->vm_types) + " types, " +
                                  std::to_string(jvm->vm_constants) + " constants"},
        {"hotspot_spaces", std::to_string(jvm->spaces.size())},
        {"hotspot_threads", std::to_string(jvm->threads)},
        {"hotspot_tlabs", std::to_string(jvm->tlab_gaps.size())}};
    if (jvm->region_bytes)
      result.facts.push_back({"hotspot_region_bytes", std::to_string(jvm->region_bytes)});
    result.areas = areasOf(*jvm);
    handlesOf(*jvm, result);
    HeapWalk(memory, *jvm, sink, diags).run(result);
    return result;
  }
};

} // namespace

std::unique_ptr<HeapWalker> makeHotSpotWalker() {
  return std::make_unique<HotSpotWalker>();
}

} // namespace dumpsift
