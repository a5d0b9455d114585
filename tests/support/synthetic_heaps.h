// Hand-laid process memory for the synthetic heap tests and the fuzz seeds made from the same
// shapes: a process over FakeMemory (byte_builder.h) with a snapshot over it, and the CoreCLR,
// Mono, HotSpot, Go runtime and musl mallocng structures written field by field from the layouts in
// docs/heap-managed.md, docs/heap-hotspot.md, docs/heap-go.md and docs/heap-musl.md (not from the
// walkers' own tables). Header-only and free of Catch2, so tests/fuzz/make_seeds.cpp can use it
// too.
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "support/byte_builder.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dumpsift::test {

/// A snapshot over hand-laid regions (FakeMemory), each captured whole (zeros past the bytes
/// written) and writable; a region with a file is an image and a module.
class FakeProcess : public FakeMemory {
public:
  void addRegion(uint64_t start, uint64_t size, const std::string &file = "") {
    FakeMemory::addRegion(start, size, FakeRegion{true, file, {}, UINT64_MAX, !file.empty()});
  }
  /// Adds an auxiliary vector entry (AT_ENTRY = 9 tells the executable).
  void addAuxv(uint64_t type, uint64_t value) { auxv_.emplace_back(type, value); }
  /// Names the file behind the region at `start` (its bytes stay).
  void nameFile(uint64_t start, const std::string &file) {
    FakeRegion &options = regions().at(start).options;
    options.file = file;
    options.module = !file.empty();
  }

  /// The process's OS and architecture (default: none named).
  SystemInfo system;

  /// The snapshot over the regions as they are now (bytes are not copied).
  const Snapshot &snapshot() {
    snap_ = FakeMemory::snapshot();
    snap_->auxv = auxv_;
    snap_->system = system;
    return *snap_;
  }

private:
  std::vector<std::pair<uint64_t, uint64_t>> auxv_;
  std::unique_ptr<Snapshot> snap_;
};

// --- CoreCLR ---------------------------------------------------------------------------------

/// Where putCoreClrTypes put each MethodTable.
struct CoreClrTypes {
  uint64_t object, array, byte, byte_array, int_array, free_object;
};

/// One page at `types` of CoreCLR MethodTables {u32 flags, u32 base size, +0x10 parent, +0x30
/// element type} for object, array, byte, byte[], int[] and the free object (whose parent is
/// `free_parent`); the whole page is written (walkers read fields past those set).
inline CoreClrTypes putCoreClrTypes(FakeMemory &m, uint64_t types, uint64_t free_parent = 0) {
  const CoreClrTypes t{types,         types + 0x100, types + 0x200,
                       types + 0x300, types + 0x400, types + 0x500};
  m.addRegion(types, 0x1000);
  m.put32(t.object + 4, 24);
  m.put32(t.array + 4, 24), m.put64(t.array + 0x10, t.object);
  m.put32(t.byte, 0x00070000), m.put32(t.byte + 4, 24), m.put64(t.byte + 0x10, t.object);
  m.put32(t.byte_array, 0x800A0001), m.put32(t.byte_array + 4, 24);
  m.put64(t.byte_array + 0x10, t.array), m.put64(t.byte_array + 0x30, t.byte);
  m.put32(t.int_array, 0x800A0004), m.put32(t.int_array + 4, 24);
  m.put64(t.int_array + 0x10, t.array);
  m.put32(t.free_object, 0x80000001), m.put32(t.free_object + 4, 24);
  m.put64(t.free_object + 0x10, free_parent);
  m.put8(types + 0xfff, 0);
  return t;
}

/// A CoreCLR array object at `addr`: MethodTable, u32 length, u32 pad, then `length` elements of
/// `elem` bytes. Returns where the next object starts.
inline uint64_t putCoreClrArray(FakeMemory &m, uint64_t addr, uint64_t mt, uint32_t length,
                                uint32_t elem) {
  m.put64(addr, mt);
  m.put32(addr + 8, length);
  return addr + ((24 + uint64_t(length) * elem + 7) & ~uint64_t(7));
}

// --- .NET Framework and 32-bit processes -----------------------------------------------------

/// A pointer of `ptr` (4 or 8) bytes at `addr`.
inline void putPointer(FakeMemory &m, uint64_t addr, uint64_t v, unsigned ptr) {
  if (ptr == 8)
    m.put64(addr, v);
  else
    m.put32(addr, static_cast<uint32_t>(v));
}

/// Where putClrTypes put each MethodTable, and the layout it used.
struct ClrTypes {
  uint64_t object, array, byte, byte_array, int_array, object_array, free_object;
  unsigned ptr;         // pointer size
  uint32_t array_base;  // base size of an SZ array of values: ObjHeader + MethodTable* + length
  uint32_t object_base; // base size of object[]: CLR 2 adds the element type handle
};

/// One page at `types` of MethodTables for object, array, byte, byte[], int[], object[] and the
/// free object of CLR `generation` 4 (clr.dll; CoreCLR's layout) or 2 (mscorwks.dll) with
/// `ptr`-byte pointers, written from docs/heap-managed.md: u32 flags at 0, u32 base size at 4,
/// the parent at 0x10, and (CLR 4) the element type at 0x30 (0x20 when 32-bit). CLR 4 flags:
/// bit 31 has-component-size, category array 0x80000, SZ 0x20000, pointers 0x1000000; CLR 2:
/// array 0x10000, SZ 0x20000, shared by reference types 0x40000, pointers 0x80000, and (set on
/// mscorlib's types) domain neutral 0x2000000 and marshalable 0x200000.
inline ClrTypes putClrTypes(FakeMemory &m, uint64_t types, int generation, unsigned ptr) {
  const uint32_t base = 3 * ptr;
  const ClrTypes t{types,         types + 0x100,
                   types + 0x200, types + 0x300,
                   types + 0x400, types + 0x500,
                   types + 0x600, ptr,
                   base,          generation == 2 ? base + ptr : base};
  const uint64_t element = ptr == 8 ? 0x30 : 0x20;
  m.addRegion(types, 0x1000);
  m.put32(t.object + 4, base);
  m.put32(t.array + 4, base), putPointer(m, t.array + 0x10, t.object, ptr);
  m.put32(t.byte + 4, base), putPointer(m, t.byte + 0x10, t.object, ptr);
  if (generation == 4) {
    m.put32(t.byte, 0x00070000);
    m.put32(t.byte_array, 0x800A0001);
    m.put32(t.int_array, 0x800A0004);
    m.put32(t.object_array, 0x810A0000 | ptr);
    m.put32(t.free_object, 0x80000001);
    putPointer(m, t.byte_array + element, t.byte, ptr);
    putPointer(m, t.object_array + element, t.object, ptr);
  } else {
    m.put32(t.byte, 0x02020000);
    m.put32(t.byte_array, 0x02230001);
    m.put32(t.int_array, 0x02230004);
    m.put32(t.object_array, 0x020F0000 | ptr);
    m.put32(t.free_object, 0x00010001);
  }
  for (uint64_t mt : {t.byte_array, t.int_array})
    m.put32(mt + 4, base), putPointer(m, mt + 0x10, t.array, ptr);
  m.put32(t.object_array + 4, t.object_base), putPointer(m, t.object_array + 0x10, t.array, ptr);
  m.put32(t.free_object + 4, base);
  m.put8(types + 0xfff, 0);
  return t;
}

/// An array object of the layout `t` at `addr`: MethodTable, u32 length, then `length` elements
/// of `elem` bytes after the base size. Returns where the next object starts: the size rounded
/// up to `align` (the pointer size on the small object heap, 8 on the LOH).
inline uint64_t putClrArray(FakeMemory &m, const ClrTypes &t, uint64_t addr, uint64_t mt,
                            uint32_t length, uint32_t elem, unsigned align) {
  putPointer(m, addr, mt, t.ptr);
  m.put32(addr + t.ptr, length);
  const uint64_t base = mt == t.object_array ? t.object_base : t.array_base;
  return addr + ((base + uint64_t(length) * elem + align - 1) & ~uint64_t(align - 1));
}

/// A heap_segment record at `at`: allocated, committed, reserved, used, mem, flags as its first
/// six `ptr`-byte words (gc/gcpriv.h).
inline void putClrSegment(FakeMemory &m, uint64_t at, unsigned ptr, uint64_t mem,
                          uint64_t allocated, uint64_t reserved, uint64_t flags) {
  const uint64_t words[6] = {allocated, reserved, reserved, allocated, mem, flags};
  for (int i = 0; i < 6; ++i)
    putPointer(m, at + i * ptr, words[i], ptr);
}

// --- Mono ------------------------------------------------------------------------------------

/// Where putMonoByteArrayTypes put byte[]'s structures.
struct MonoTypes {
  uint64_t vtable, array_class, byte_class, name;
};

/// One page at `types`: byte[]'s MonoVTable {klass @0, rank @44} and MonoClass {element_class @0,
/// rank @26, class_kind @27, name @64, element_size @136, byval data @176, byval type @186}, the
/// byte class and the name "Byte[]"; the whole page is written.
inline MonoTypes putMonoByteArrayTypes(FakeMemory &m, uint64_t types) {
  const MonoTypes t{types, types + 0x100, types + 0x300, types + 0x500};
  m.addRegion(types, 0x1000);
  m.put64(t.vtable, t.array_class), m.put8(t.vtable + 44, 1);
  m.put64(t.array_class, t.byte_class), m.put8(t.array_class + 26, 1);
  m.put8(t.array_class + 27, 5), m.put64(t.array_class + 64, t.name);
  m.put32(t.array_class + 136, 1), m.put64(t.array_class + 176, t.byte_class);
  m.put8(t.array_class + 186, 0x1d);
  m.put8(t.byte_class + 27, 1), m.put8(t.byte_class + 186, 0x05);
  m.putBytes(t.name, llvm::StringRef("Byte[]\0", 7));
  m.put8(types + 0xfff, 0);
  return t;
}

/// A LOSObject {next, size, cardtable} at `header` followed by a byte[] {vtable (with a GC tag bit
/// set), sync, bounds, u32 length}.
inline void putMonoLosArray(FakeMemory &m, uint64_t header, uint64_t next, uint32_t length,
                            uint64_t vtable) {
  m.put64(header, next);
  m.put64(header + 8, (32 + uint64_t(length) + 7) & ~uint64_t(7));
  m.put64(header + 24, vtable | 2);
  m.put32(header + 48, length);
}

// --- musl mallocng ---------------------------------------------------------------------------
// musl 1.2.3 src/malloc/mallocng/meta.h, x86-64 (docs/heap-musl.md): malloc_context {secret @0,
// init_done @8, meta_area_head @0x38, meta_area_tail @0x40; 0x3a0 bytes}; meta_area {check @0,
// next @8, nslots @0x10, 101 metas of 40 bytes from @0x18}; meta {prev @0, next @8, mem @0x10,
// avail_mask @0x18, freed_mask @0x1c, last_idx:5 freeable:1 sizeclass:6 maplen:52 @0x20}; group
// {meta @0, active_idx @8, slots from @16}; a slot's 4-byte in-band header before its user pointer.

inline void putMusl16(FakeMemory &m, uint64_t addr, uint16_t v) {
  m.put8(addr, uint8_t(v)), m.put8(addr + 1, uint8_t(v >> 8));
}

/// musl's malloc_context at `ctx`, initialised, with its meta-area chain from `head` to `tail`.
inline void putMuslContext(FakeMemory &m, uint64_t ctx, uint64_t secret, uint64_t head,
                           uint64_t tail) {
  m.put64(ctx, secret), m.put32(ctx + 8, 1);
  m.put64(ctx + 0x38, head), m.put64(ctx + 0x40, tail);
  m.put8(ctx + 0x39f, 0);
}

/// A 4 KiB meta area at `area` (the whole page written) whose chain goes on at `next`.
inline void putMuslMetaArea(FakeMemory &m, uint64_t area, uint64_t secret, uint64_t next) {
  m.put64(area, secret), m.put64(area + 8, next), m.put32(area + 0x10, 101);
  m.put8(area + 0xfff, 0);
}

/// The struct meta at `meta` of a group at `mem` (slots 0..last_idx), and the group's header,
/// which points back at it.
inline void putMuslGroup(FakeMemory &m, uint64_t meta, uint64_t mem, uint32_t avail, uint32_t freed,
                         unsigned last_idx, bool freeable, unsigned sizeclass, uint64_t maplen) {
  m.put64(meta, meta), m.put64(meta + 8, meta); // alone on its active list
  m.put64(meta + 0x10, mem);
  m.put32(meta + 0x18, avail), m.put32(meta + 0x1c, freed);
  m.put64(meta + 0x20,
          last_idx | uint64_t(freeable) << 5 | uint64_t(sizeclass) << 6 | maplen << 12);
  m.put64(mem, meta), m.put8(mem + 8, uint8_t(last_idx));
}

/// Slot `index` of the group at `mem`, [start, end + 4), holding `n` bytes from the user pointer
/// `p`, as enframe, aligned_alloc and set_size write it: an offset header at the slot start when
/// p is not it (the distance in units, truncated to 16 bits), the offset from the group's storage
/// at p-2 (or as a u32 at p-8 with p[-4] = 1 when it needs more than 16 bits), the index and the
/// reserved count at p-3 (the count as a u32 at end-4 when it is 5 or more), zero at end.
inline void putMuslUsedSlot(FakeMemory &m, uint64_t mem, unsigned index, uint64_t start,
                            uint64_t end, uint64_t p, uint64_t n) {
  if (p != start) {
    m.put8(start - 3, 7 << 5);
    putMusl16(m, start - 2, uint16_t((p - start) / 16));
  }
  const uint64_t units = (p - mem - 16) / 16;
  if (units > 0xffff) {
    m.put8(p - 4, 1), m.put32(p - 8, uint32_t(units)), putMusl16(m, p - 2, 0);
  } else {
    m.put8(p - 4, 0), putMusl16(m, p - 2, uint16_t(units));
  }
  uint64_t reserved = end - p - n;
  if (reserved >= 5) {
    m.put32(end - 4, uint32_t(reserved)), m.put8(end - 5, 0);
    reserved = 5;
  }
  m.put8(p - 3, uint8_t(index | reserved << 5));
  m.put8(end, 0);
}

/// A slot freed at the user pointer `p`: free() marks p[-3] 0xff and zeroes the offset at p-2;
/// an offset header at the slot start, if any, stays.
inline void putMuslFreedSlot(FakeMemory &m, uint64_t start, uint64_t end, uint64_t p) {
  if (p != start) {
    m.put8(start - 3, 7 << 5);
    putMusl16(m, start - 2, uint16_t((p - start) / 16));
  }
  m.put8(p - 3, 0xff), putMusl16(m, p - 2, 0);
  m.put8(end, 0);
}

/// One slot as the musl walker must report it.
struct MuslSlot {
  uint64_t address, size;
  bool used, mmapped;
};

/// Where putMuslHeap put things, and every slot it laid, in address order.
struct MuslHeap {
  static constexpr uint64_t kData = 0x400000; // the executable's data page: ctx, a donated group
  static constexpr uint64_t kCtx = kData + 0x100;
  static constexpr uint64_t kDonated = kData + 0x800;
  static constexpr uint64_t kAreas = 0x10000000;   // two meta areas (a brk heap)
  static constexpr uint64_t kGroup = 0x20000000;   // a mapping: 5 slots of 288 bytes, one nested
  static constexpr uint64_t kMmapped = 0x30000000; // an 8000-byte malloc in its own mapping
  static constexpr uint64_t kSecret = 0x5ec7e75ec7e75ec7;
  uint64_t nested = 0; // the group in the last slot of kGroup
  uint64_t group_meta = 0, nested_meta = 0;
  std::vector<MuslSlot> slots;
};

/// A small musl heap covering each kind of group and slot: a group in its own mapping (used slots
/// at the slot start and behind an offset header, with reserved counts in the header and at the
/// slot end; a slot freed behind an offset header; a never-used slot) whose last slot holds a
/// nested group of a smaller class (used and freed slots); an individually mmapped allocation at
/// a cycled offset; a donated group in the executable's data; a freed meta. The regions are
/// anonymous: the caller may name a file for MuslHeap::kData.
inline MuslHeap putMuslHeap(FakeMemory &m) {
  MuslHeap h;
  const uint64_t area_a = MuslHeap::kAreas, area_b = MuslHeap::kAreas + 0x1000;
  m.addRegion(MuslHeap::kData, 0x1000);
  m.addRegion(MuslHeap::kAreas, 0x2000);
  m.addRegion(MuslHeap::kGroup, 0x1000);
  m.addRegion(MuslHeap::kMmapped, 0x2000);
  putMuslContext(m, MuslHeap::kCtx, MuslHeap::kSecret, area_a, area_b);
  putMuslMetaArea(m, area_a, MuslHeap::kSecret, area_b);
  putMuslMetaArea(m, area_b, MuslHeap::kSecret, 0);
  auto meta = [&](unsigned i) { return area_a + 0x18 + 40 * uint64_t(i); };

  // The donated group: class 3 (64-byte slots), one slot, never used (free since donate()).
  const uint64_t d = MuslHeap::kDonated;
  putMuslGroup(m, meta(3), d, 0, 1, 0, false, 3, 0);
  putMuslFreedSlot(m, d + 16, d + 16 + 60, d + 16);
  h.slots.push_back({d + 16, 60, false, false});

  // The mapped group: class 12 (288-byte slots), slots 0-4; 2 freed, 3 available, 4 nested.
  const uint64_t g = MuslHeap::kGroup, stride = 288;
  h.group_meta = meta(0);
  putMuslGroup(m, h.group_meta, g, 1u << 3, 1u << 2, 4, true, 12, 1);
  auto slot = [&](unsigned i) { return g + 16 + stride * i; };
  putMuslUsedSlot(m, g, 0, slot(0), slot(1) - 4, slot(0), 100); // reserved 184: at the end
  h.slots.push_back({slot(0), 100, true, false});
  putMuslUsedSlot(m, g, 1, slot(1), slot(2) - 4, slot(1) + 32, 250); // reserved 2: in the header
  h.slots.push_back({slot(1) + 32, 250, true, false});
  putMuslFreedSlot(m, slot(2), slot(3) - 4, slot(2) + 16);
  h.slots.push_back({slot(2) + 16, stride - 4 - 16, false, false});
  h.slots.push_back({slot(3), stride - 4, false, false});
  // Slot 4 holds a group of class 2 (48-byte slots), slots 0-2: used, used, freed.
  h.nested = slot(4);
  h.nested_meta = meta(1);
  m.put8(h.nested - 4, 0), m.put8(h.nested - 3, 4 | 6 << 5), putMusl16(m, h.nested - 2, 4 * 18);
  putMuslGroup(m, h.nested_meta, h.nested, 0, 1u << 2, 2, true, 2, 0);
  auto inner = [&](unsigned i) { return h.nested + 16 + 48 * i; };
  putMuslUsedSlot(m, h.nested, 0, inner(0), inner(1) - 4, inner(0), 44); // fills the slot
  h.slots.push_back({inner(0), 44, true, false});
  putMuslUsedSlot(m, h.nested, 1, inner(1), inner(2) - 4, inner(1), 10);
  h.slots.push_back({inner(1), 10, true, false});
  putMuslFreedSlot(m, inner(2), inner(3) - 4, inner(2));
  h.slots.push_back({inner(2), 44, false, false});

  // The mmapped allocation (class 63, 2 pages): 8000 bytes 48 bytes into its one slot.
  const uint64_t big = MuslHeap::kMmapped;
  putMuslGroup(m, meta(2), big, 0, 0, 0, true, 63, 2);
  putMuslUsedSlot(m, big, 0, big + 16, big + 0x2000 - 4, big + 16 + 48, 8000);
  h.slots.push_back({big + 16 + 48, 8000, true, true});

  // A freed meta: zeroed, then queued on free_meta_head.
  m.put64(meta(4), meta(4)), m.put64(meta(4) + 8, meta(4));
  return h;
}

// --- HotSpot ---------------------------------------------------------------------------------

/// A hand-laid JVM: libjvm's mappings (code, read-only names, data holding the vmStructs tables,
/// the flag table and the static fields), metaspace (Klasses, Symbols, threads, GC structures) and
/// whatever heap the caller lays out. The caller spells each entry as the JDK release it imitates
/// does (vmStructs.cpp of that release); the entry layouts are those of vmStructs.hpp:
/// VMStructEntry {typeName, fieldName, typeString, int32 isStatic, uint64 offset, address} (48
/// bytes), VMTypeEntry {typeName, superclassName, int32 x3, uint64 size} (40), constants {name,
/// value} (16), each table ended by a null name. finish() writes the tables.
class HotSpotBuilder {
public:
  static constexpr uint64_t kText = 0x7f0000000000, kNames = kText + 0x100000;
  static constexpr uint64_t kData = kText + 0x200000, kStatics = kData + 0x2000;
  static constexpr uint64_t kMeta = 0x800000000;
  static constexpr const char *kLibjvm = "/usr/lib/jvm/java/lib/server/libjvm.so";

  /// Maps libjvm (three regions named kLibjvm in `p`) and a 1 MiB metaspace.
  explicit HotSpotBuilder(FakeMemory &m) : m_(m) {
    m_.addRegion(kText, 0x1000);
    m_.addRegion(kNames, 0x10000);
    m_.addRegion(kData, 0x10000);
    m_.addRegion(kMeta, 0x100000);
    m_.put64(kText + 0xff8, 0);
    m_.put64(kNames + 0xfff8, 0);
    // One C++ vtable for every Klass, in the read-only data: its first entry is code in libjvm.
    m_.put64(vtable_, kText + 0x40);
  }
  /// The starts of the regions that are libjvm's.
  static std::vector<uint64_t> libjvmRegions() { return {kText, kNames, kData}; }

  /// A NUL-terminated string in libjvm's read-only data.
  uint64_t name(llvm::StringRef s) {
    const uint64_t at = names_;
    m_.putBytes(at, s);
    m_.put8(at + s.size(), 0);
    names_ += s.size() + 1;
    return at;
  }
  /// 8-aligned space in libjvm's data for a static field.
  uint64_t staticSlot(uint64_t bytes = 8) {
    const uint64_t at = statics_;
    statics_ += (bytes + 7) & ~uint64_t(7);
    m_.put64(at, 0);
    return at;
  }
  /// 8-aligned space in metaspace.
  uint64_t meta(uint64_t bytes) {
    const uint64_t at = meta_;
    meta_ += (bytes + 15) & ~uint64_t(15);
    return at;
  }

  void field(llvm::StringRef type, llvm::StringRef field, uint64_t offset,
             llvm::StringRef type_string = "") {
    fields_.push_back({type.str(), field.str(), type_string.str(), false, offset});
  }
  /// A static field: its slot in libjvm's data (returned), holding `value`.
  uint64_t staticField(llvm::StringRef type, llvm::StringRef field, uint64_t value,
                       uint64_t bytes = 8) {
    const uint64_t at = staticSlot(bytes);
    if (bytes == 4)
      m_.put32(at, static_cast<uint32_t>(value));
    else
      m_.put64(at, value);
    fields_.push_back({type.str(), field.str(), "", true, at});
    return at;
  }
  void type(llvm::StringRef name, uint64_t size) { types_.push_back({name.str(), size}); }
  void constant(llvm::StringRef name, uint64_t value) { constants_.push_back({name.str(), value}); }

  /// A flag: its name and its value (`bytes` long) in libjvm's data.
  void flag(llvm::StringRef name, uint64_t value, uint64_t bytes = 1) {
    const uint64_t at = staticSlot(8);
    if (bytes == 1)
      m_.put8(at, static_cast<uint8_t>(value));
    else
      m_.put64(at, value);
    flags_.push_back({name.str(), at});
  }
  /// The flag table as JVMFlag records (`stride` bytes, name and value address at the given
  /// offsets) and the statics JVMFlag::flags and JVMFlag::numFlags.
  void flagTable(uint64_t stride, uint64_t name_offset, uint64_t addr_offset) {
    const uint64_t table = meta(stride * flags_.size());
    for (size_t i = 0; i < flags_.size(); ++i) {
      m_.put64(table + i * stride + name_offset, name(flags_[i].first));
      m_.put64(table + i * stride + addr_offset, flags_[i].second);
    }
    staticField("JVMFlag", "flags", table);
    staticField("JVMFlag", "numFlags", flags_.size());
  }

  /// A Symbol {u16 length at `length_offset`, body at `body_offset`} in metaspace.
  uint64_t symbol(llvm::StringRef text, uint64_t length_offset, uint64_t body_offset) {
    const uint64_t at = meta(body_offset + text.size());
    m_.put8(at + length_offset, static_cast<uint8_t>(text.size()));
    m_.put8(at + length_offset + 1, static_cast<uint8_t>(text.size() >> 8));
    m_.putBytes(at + body_offset, text);
    return at;
  }
  /// A Klass {vtable, s32 layout helper @8, Symbol* name @24} in metaspace, 256 bytes, aligned so
  /// that a narrow klass pointer with shift up to 10 can name it.
  uint64_t klass(int32_t layout_helper, uint64_t symbol) {
    meta_ = (meta_ + 1023) & ~uint64_t(1023);
    const uint64_t at = meta(256);
    m_.put64(at, vtable_);
    m_.put32(at + 8, static_cast<uint32_t>(layout_helper));
    m_.put64(at + 24, symbol);
    m_.put64(at + 248, 0);
    return at;
  }

  /// Writes the tables into libjvm's data; call once, after every entry.
  void finish() {
    uint64_t at = kData;
    for (const Field &f : fields_) {
      m_.put64(at, name(f.type)), m_.put64(at + 8, name(f.field));
      m_.put64(at + 16, f.type_string.empty() ? 0 : name(f.type_string));
      m_.put32(at + 24, f.is_static ? 1 : 0);
      m_.put64(at + 32, f.is_static ? 0 : f.value), m_.put64(at + 40, f.is_static ? f.value : 0);
      at += 48;
    }
    m_.put64(at, 0), m_.put64(at + 40, 0);
    at += 48 + 64;
    for (const auto &[type, size] : types_) {
      m_.put64(at, name(type)), m_.put64(at + 8, 0), m_.put64(at + 16, 0), m_.put64(at + 24, 0);
      m_.put64(at + 32, size);
      at += 40;
    }
    m_.put64(at, 0), m_.put64(at + 32, 0);
    at += 40 + 64;
    for (const auto &[constant, value] : constants_) {
      m_.put64(at, name(constant)), m_.put64(at + 8, value);
      at += 16;
    }
    m_.put64(at, 0), m_.put64(at + 8, 0);
  }

private:
  struct Field {
    std::string type, field, type_string;
    bool is_static;
    uint64_t value;
  };
  FakeMemory &m_;
  uint64_t vtable_ = kNames, names_ = kNames + 16, statics_ = kStatics, meta_ = kMeta;
  std::vector<Field> fields_;
  std::vector<std::pair<std::string, uint64_t>> types_, constants_;
  std::vector<std::pair<std::string, uint64_t>> flags_;
};

/// A Java array object at `addr` of a JVM without compact headers: mark word 1, the class (narrow
/// at +8 when `narrow_klass` is not 0, else the Klass* `klass`), the length at `length_offset`.
/// Returns where the next object starts: `addr` + align8(`header` + length << `log2_elem`).
inline uint64_t putJavaArray(FakeMemory &m, uint64_t addr, uint64_t klass, uint32_t narrow_klass,
                             uint32_t length, uint64_t length_offset, uint64_t header,
                             unsigned log2_elem) {
  m.put64(addr, 1);
  if (narrow_klass)
    m.put32(addr + 8, narrow_klass);
  else
    m.put64(addr + 8, klass);
  m.put32(addr + length_offset, length);
  return addr + ((header + (uint64_t(length) << log2_elem) + 7) & ~uint64_t(7));
}

/// Where putHotSpotG1Heap put its arrays.
struct HotSpotG1Heap {
  uint64_t heap = 0, bytes_old = 0, ints_old = 0, bytes_eden = 0;
  uint64_t collected_heap = 0, region_table = 0, thread_list = 0, thread = 0;
};

/// A small JVM as JDK 17 spells it: G1 with compressed class pointers, two 64 KiB regions (old:
/// byte[3000], int[50]; eden: a TLAB's unformatted tail, then byte[900]), one Java thread. The
/// fuzz seed `hotspot_g1.proc` and a synthetic test share it. Mark `HotSpotBuilder::libjvmRegions`
/// as libjvm's in the snapshot. `more_old` may lay out more objects in the old region from the
/// address it is given (after the int[]); it returns where they end (the region's top).
inline HotSpotG1Heap
putHotSpotG1Heap(FakeMemory &m,
                 const std::function<uint64_t(HotSpotBuilder &, uint64_t)> &more_old = {}) {
  HotSpotBuilder b(m);
  for (auto [name, value] : {std::pair<const char *, uint64_t>{"UseG1GC", 1},
                             {"UseCompressedOops", 1},
                             {"UseCompressedClassPointers", 1},
                             {"UseTLAB", 1}})
    b.flag(name, value);
  b.flag("ObjectAlignmentInBytes", 8, 8);
  b.flagTable(24, 8, 0);
  b.field("JVMFlag", "_addr", 0), b.field("JVMFlag", "_name", 8);
  b.type("JVMFlag", 24);
  for (int i = 0; i < 8; ++i) // a real table has hundreds of entries
    b.type("Type" + std::to_string(i), 8), b.constant("Constant" + std::to_string(i), i);
  b.field("Klass", "_layout_helper", 8), b.field("Klass", "_name", 24);
  b.field("Symbol", "_length", 4), b.field("Symbol", "_body", 6);
  b.field("oopDesc", "_metadata._compressed_klass", 8);
  const uint64_t base = HotSpotBuilder::kMeta;
  b.staticField("CompressedKlassPointers", "_narrow_klass._base", base);
  b.staticField("CompressedKlassPointers", "_narrow_klass._shift", 0, 4);
  const uint64_t byte_array = b.klass(static_cast<int32_t>(0xc0100800), b.symbol("[B", 4, 6));
  const uint64_t int_array = b.klass(static_cast<int32_t>(0xc0100a02), b.symbol("[I", 4, 6));
  HotSpotG1Heap h;
  h.heap = 0x7e000000;
  constexpr uint64_t grain = 0x10000;
  m.addRegion(h.heap, grain); // one mapping per G1 region: the seed keeps only what is written
  m.addRegion(h.heap + grain, grain);
  const uint64_t g1h = b.meta(1024), regions = b.meta(16);
  b.staticField("Universe", "_collectedHeap", g1h);
  b.field("CollectedHeap", "_reserved", 32), b.field("MemRegion", "_start", 0);
  b.field("MemRegion", "_word_size", 8);
  m.put64(g1h + 32, h.heap), m.put64(g1h + 40, 2 * grain / 8);
  b.field("G1CollectedHeap", "_hrm", 304, "HeapRegionManager");
  b.field("HeapRegionManager", "_regions", 96);
  b.field("G1HeapRegionTable", "_base", 16), b.field("G1HeapRegionTable", "_length", 24);
  m.put64(g1h + 304 + 96 + 16, regions), m.put64(g1h + 304 + 96 + 24, 2);
  b.field("HeapRegion", "_bottom", 0), b.field("HeapRegion", "_end", 8);
  b.field("HeapRegion", "_top", 16), b.field("HeapRegion", "_type", 188);
  b.field("HeapRegionType", "_tag", 0);
  b.staticField("HeapRegion", "GrainBytes", grain);
  b.constant("HeapRegionType::FreeTag", 0), b.constant("HeapRegionType::EdenTag", 2);
  b.constant("HeapRegionType::OldMask", 16);
  auto region = [&](int i, uint32_t tag, uint64_t top) {
    const uint64_t hr = b.meta(296);
    m.put64(regions + 8 * i, hr);
    m.put64(hr, h.heap + i * grain), m.put64(hr + 8, h.heap + (i + 1) * grain);
    m.put64(hr + 16, top), m.put32(hr + 188, tag);
  };
  auto array = [&](uint64_t at, uint64_t klass, uint32_t length, unsigned log2) {
    return putJavaArray(m, at, 0, static_cast<uint32_t>(klass - base), length, 12, 16, log2);
  };
  h.bytes_old = h.heap;
  h.ints_old = array(h.bytes_old, byte_array, 3000, 0);
  const uint64_t ints_end = array(h.ints_old, int_array, 50, 2);
  region(0, 16, more_old ? more_old(b, ints_end) : ints_end);
  // The thread's empty TLAB [bottom, +1 KiB - 2 words): up to its end plus 2 words (an int[]'s
  // header; no prefetch reserve) nothing is formatted (a stale header lies there).
  const uint64_t eden = h.heap + grain, list = b.meta(32), threads = b.meta(8),
                 thread = b.meta(512);
  array(eden + 64, byte_array, 200, 0);
  b.field("Thread", "_tlab", 256), b.field("ThreadLocalAllocBuffer", "_start", 0);
  b.field("ThreadLocalAllocBuffer", "_top", 8), b.field("ThreadLocalAllocBuffer", "_end", 24);
  b.field("ThreadsList", "_length", 4), b.field("ThreadsList", "_threads", 16);
  b.staticField("ThreadsSMRSupport", "_java_thread_list", list);
  m.put32(list + 4, 1), m.put64(list + 16, threads), m.put64(threads, thread);
  m.put64(thread + 256, eden), m.put64(thread + 264, eden);
  h.collected_heap = g1h, h.region_table = regions, h.thread_list = list, h.thread = thread;
  m.put64(thread + 280, eden + 0x400 - 16);
  h.bytes_eden = eden + 0x400;
  region(1, 2, array(h.bytes_eden, byte_array, 900, 0));
  b.finish();
  return h;
}

// --- Go --------------------------------------------------------------------------------------

/// The offsets of one Go version's runtime structures (linux/amd64), copied from the table of
/// facts in docs/heap-go.md (the DWARF of Debian's toolchains), not from the walker's tables.
struct GoRuntimeLayout {
  const char *version; // the build info's version string
  // runtime.mheap_
  uint64_t mheap_sweepgen, mheap_allspans, mheap_arenas, mheap_all_arenas;
  uint64_t arena_spans; // heapArena.spans
  // runtime.mspan
  uint64_t start_addr, npages, freeindex, nelems;
  unsigned index_bytes; // freeindex and nelems: 8 (uintptr) or 2 (uint16, Go 1.22+)
  uint64_t alloc_bits, gcmark_bits, sweepgen, alloc_count, spanclass, state, elemsize;
  uint64_t mspan_size;
  bool inline_marks; // Go 1.26+ (Green Tea): 16-512-byte spans' marks at the first page's end
};

inline constexpr GoRuntimeLayout kGo119 = {"go1.19.8", 65848, 65856, 65936, 66016, 2097152, 24,
                                           32,         48,    56,    8,     72,    80,      88,
                                           96,         98,    99,    104,   144,   false};
inline constexpr GoRuntimeLayout kGo122 = {"go1.22.12", 65856, 65864, 66008, 66096, 0,    24,
                                           32,          48,    50,    2,     64,    72,   88,
                                           96,          98,    99,    104,   160,   false};
inline constexpr GoRuntimeLayout kGo126 = {"go1.26.0", 65856, 65864, 66008, 66096, 0,   24,
                                           32,         48,    50,    2,     64,    72,  88,
                                           96,         98,    99,    104,   160,   true};

/// One mspan to lay out.
struct GoSpan {
  uint64_t start = 0; // its first page's address (8 KiB aligned)
  uint64_t npages = 1;
  uint8_t spanclass = 0; // size class << 1 | noscan
  uint8_t state = 1;     // 0 dead, 1 in use, 2 manual
  uint64_t elemsize = 0, nelems = 0, freeindex = 0;
  uint16_t alloc_count = 0;
  uint32_t sweepgen = 0;
  std::vector<uint8_t> alloc_bits, mark_bits; // gcBits (bit i of byte i/8); empty: a null pointer
};

/// A Go runtime heap laid out by hand in a FakeMemory: the executable's build info, mheap_ (its
/// sweepgen, allspans, arenas and allArenas fields) in the anonymous mapping right after the
/// executable's data, the arena index table, heapArenas with their span tables, mspans and their
/// bitmaps, each in a small region of its own far from the others.
class GoHeap {
public:
  static constexpr uint64_t kPage = 8192, kPagesPerArena = 8192, kArenaBytes = kPage * 8192;
  static constexpr uint64_t kArenaTable = 0x7f0000000000; // mheap_.arenas[0]
  static constexpr uint64_t kHeapArenas = 0x7f1000000000, kSpans = 0x7f2000000000;
  static constexpr uint64_t kBits = 0x7f3000000000, kAllspans = 0x7f4000000000;
  static constexpr uint64_t kAllArenas = 0x7f5000000000;
  static constexpr uint64_t kListCap = 1024, kSpanStride = 256, kRegionBytes = 0x40000;

  /// Writes the build info (naming layout.version) at `exe_data`, the start of a region the
  /// caller added as the executable's writable mapping, and adds the anonymous region after it
  /// that holds mheap_'s fields, with mheap_.sweepgen = `sweepgen`.
  GoHeap(FakeMemory &m, const GoRuntimeLayout &layout, uint64_t exe_data, uint32_t sweepgen)
      : m_(m), l_(layout) {
    m_.putBytes(exe_data, llvm::StringRef("\xff Go buildinf:", 14));
    m_.put8(exe_data + 14, 8); // pointer size
    m_.put8(exe_data + 15, 2); // flags: inline strings
    const llvm::StringRef version(layout.version);
    m_.put8(exe_data + 32, static_cast<uint8_t>(version.size()));
    m_.putBytes(exe_data + 33, version);
    const uint64_t bss = exe_data + m_.regions().at(exe_data).size;
    m_.addRegion(bss, 0x400);
    allspans_ = bss + 0x40;
    mheap_ = allspans_ - l_.mheap_allspans;
    m_.put32(field(l_.mheap_sweepgen), sweepgen);
    m_.put64(field(l_.mheap_arenas), kArenaTable);
    for (uint64_t r : {kSpans, kBits, kAllspans, kAllArenas})
      m_.addRegion(r, kRegionBytes);
    finish();
  }

  /// The address of mheap_'s field at `offset`.
  uint64_t field(uint64_t offset) const { return mheap_ + offset; }
  uint64_t mheap() const { return mheap_; }
  const GoRuntimeLayout &layout() const { return l_; }

  /// The arena index of address `p` (mheap.go arenaIndex on amd64).
  static uint64_t arenaIndex(uint64_t p) { return (p + (uint64_t(1) << 47)) / kArenaBytes; }

  /// Adds the arena holding `base` to the index table and to allArenas: its heapArena's span
  /// table is a region of its own. Returns the heapArena's address.
  uint64_t addArena(uint64_t base) {
    const uint64_t index = arenaIndex(base);
    const uint64_t heap_arena = kHeapArenas + arenas_.size() * 0x1000000;
    const uint64_t entry = kArenaTable + 8 * index;
    if (m_.regions().count(entry & ~uint64_t(0xfff)) == 0)
      m_.addRegion(entry & ~uint64_t(0xfff), 0x1000);
    m_.put64(entry, heap_arena);
    m_.addRegion(heap_arena + l_.arena_spans, kPagesPerArena * 8);
    m_.put64(heap_arena + l_.arena_spans + kPagesPerArena * 8 - 8, 0); // the whole table
    listArena(index, heap_arena);
    return heap_arena;
  }

  /// The address of the span table entry of the page at `page_address` (its arena must be added).
  uint64_t spanTableEntry(uint64_t page_address) const {
    const uint64_t index = arenaIndex(page_address);
    for (const auto &[i, heap_arena] : arenas_)
      if (i == index)
        return heap_arena + l_.arena_spans + 8 * ((page_address % kArenaBytes) / kPage);
    llvm::report_fatal_error("GoHeap: no arena holds that page");
  }

  /// Writes the mspan `s`, lists it in allspans, and points the span table entries of its pages
  /// at it (a dead span's first and last page only, as the runtime leaves free spans). Returns the
  /// mspan's address.
  uint64_t addSpan(const GoSpan &s) {
    const uint64_t at = spanAddress(spans_++);
    m_.put64(at + l_.start_addr, s.start);
    m_.put64(at + l_.npages, s.npages);
    putIndex(at + l_.freeindex, s.freeindex);
    putIndex(at + l_.nelems, s.nelems);
    m_.put64(at + l_.alloc_bits, putBits(s.alloc_bits));
    m_.put64(at + l_.gcmark_bits, putBits(s.mark_bits));
    m_.put32(at + l_.sweepgen, s.sweepgen);
    m_.put8(at + l_.alloc_count, static_cast<uint8_t>(s.alloc_count));
    m_.put8(at + l_.alloc_count + 1, static_cast<uint8_t>(s.alloc_count >> 8));
    m_.put8(at + l_.spanclass, s.spanclass);
    m_.put8(at + l_.state, s.state);
    m_.put64(at + l_.elemsize, s.elemsize);
    m_.put8(at + l_.mspan_size - 1, 0);
    for (uint64_t p = 0; p < s.npages; ++p)
      if (s.state != 0 || p == 0 || p + 1 == s.npages)
        m_.put64(spanTableEntry(s.start + p * kPage), at);
    m_.put64(kAllspans + 8 * listed_++, at);
    finish();
    return at;
  }

  /// Lists arena `index` in allArenas without a heapArena behind it.
  void listArenaIndex(uint64_t index) { listArena(index, 0); }

  /// The address of the `n`th mspan added.
  static uint64_t spanAddress(uint64_t n) { return kSpans + kSpanStride * n; }

  /// Green Tea (1.26+): writes the marks of the 16-512-byte span at `start` where the runtime
  /// keeps them, in the last 128 bytes of its first page (marks at +64), which it maps.
  void putInlineMarks(uint64_t start, const std::vector<uint8_t> &marks) {
    if (m_.regions().count(start) == 0)
      m_.addRegion(start, kPage);
    for (size_t i = 0; i < marks.size(); ++i)
      m_.put8(start + kPage - 64 + i, marks[i]);
  }

private:
  void putIndex(uint64_t addr, uint64_t v) {
    if (l_.index_bytes == 8)
      m_.put64(addr, v);
    else
      m_.put8(addr, static_cast<uint8_t>(v)), m_.put8(addr + 1, static_cast<uint8_t>(v >> 8));
  }
  uint64_t putBits(const std::vector<uint8_t> &bits) {
    if (bits.empty())
      return 0;
    const uint64_t at = kBits + bits_;
    for (size_t i = 0; i < bits.size(); ++i)
      m_.put8(at + i, bits[i]);
    bits_ += (bits.size() + 7) & ~size_t(7);
    return at;
  }
  void listArena(uint64_t index, uint64_t heap_arena) {
    m_.put64(kAllArenas + 8 * arenas_.size(), index);
    arenas_.push_back({index, heap_arena});
    finish();
  }
  /// Rewrites the slice headers of allspans and allArenas (capacity at least kListCap, as the
  /// runtime's).
  void finish() {
    m_.put64(allspans_, kAllspans), m_.put64(allspans_ + 8, listed_);
    m_.put64(allspans_ + 16, std::max(kListCap, listed_));
    const uint64_t all = field(l_.mheap_all_arenas), arenas = arenas_.size();
    m_.put64(all, kAllArenas), m_.put64(all + 8, arenas);
    m_.put64(all + 16, std::max(kListCap, arenas));
  }

  FakeMemory &m_;
  const GoRuntimeLayout l_;
  uint64_t mheap_ = 0, allspans_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> arenas_; // index, heapArena
  uint64_t spans_ = 0, listed_ = 0, bits_ = 0;
};

} // namespace dumpsift::test
