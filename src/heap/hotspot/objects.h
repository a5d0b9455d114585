// How the hotspot walker and its object finder read one Java object: its class from the header,
// the class's verdict from its Klass (cached), its size from the layout helper (klass.hpp).
// Private to src/heap/hotspot; docs/heap-hotspot.md describes it.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/support/bytes.h"
#include "jvm.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace dumpsift::hotspot {

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

/// Reads objects of one JVM's heap. Not thread-safe: it caches what it learns of each class.
class ObjectParser {
public:
  ObjectParser(const AddressSpace &memory, const Jvm &jvm)
      : memory_(memory), bytes_(memory), jvm_(jvm), layout_(jvm.layout) {}

  /// Classes found valid so far.
  uint64_t validKlasses() const { return valid_klasses_; }

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

private:
  const AddressSpace &memory_;
  HeapBytes bytes_;
  const Jvm &jvm_;
  const ObjectLayout &layout_;
  struct Recent {
    uint64_t klass = 0;
    KlassInfo info;
    bool filled = false;
  };
  std::array<Recent, kRecentKlasses> recent_{};
  llvm::DenseMap<uint64_t, KlassInfo> klasses_;
  uint64_t valid_klasses_ = 0;
};

} // namespace dumpsift::hotspot
