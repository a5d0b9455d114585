// Hand-laid process memory for the synthetic managed-heap tests and the fuzz seeds made from the
// same shapes: regions that writes fill in, and the CoreCLR and Mono structures written field by
// field from the layouts in docs/heap-managed.md (not from the walkers' own tables). Header-only
// and free of Catch2, so tests/fuzz/make_seeds.cpp can use it too.
#pragma once

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace dumpsift::test {

/// Regions of memory under construction. Each region (a Block) has a size; its bytes are those
/// written so far, up to the last one (reads of a region past them see zeros, or nothing: the user
/// decides).
class FakeMemory {
public:
  /// Adds the region [start, start + size), replacing one at the same start.
  void addRegion(uint64_t start, uint64_t size) {
    if (regions_.count(start) == 0)
      added_.push_back(start);
    regions_[start] = Block{size, {}};
  }

  void put64(uint64_t addr, uint64_t v) { std::memcpy(at(addr, 8), &v, 8); }
  void put32(uint64_t addr, uint32_t v) { std::memcpy(at(addr, 4), &v, 4); }
  void put8(uint64_t addr, uint8_t v) { *at(addr, 1) = v; }
  void putBytes(uint64_t addr, llvm::StringRef s) {
    std::memcpy(at(addr, s.size()), s.data(), s.size());
  }

  struct Block {
    uint64_t size = 0;
    std::vector<uint8_t> bytes; // written so far: at most `size`
  };
  /// The regions by start address.
  std::map<uint64_t, Block> &regions() { return regions_; }
  const std::map<uint64_t, Block> &regions() const { return regions_; }
  /// The regions' start addresses in the order they were first added.
  const std::vector<uint64_t> &addedOrder() const { return added_; }

private:
  /// The bytes at [addr, addr + len), which one region must hold (anything else is a bug in the
  /// test, and ends the program with a message).
  uint8_t *at(uint64_t addr, uint64_t len) {
    auto it = regions_.upper_bound(addr);
    if (it == regions_.begin() || addr - std::prev(it)->first + len > std::prev(it)->second.size)
      llvm::report_fatal_error(llvm::Twine("FakeMemory: no region holds the write at 0x") +
                               llvm::utohexstr(addr));
    --it;
    Block &r = it->second;
    const uint64_t end = addr - it->first + len;
    if (r.bytes.size() < end)
      r.bytes.resize(end);
    return r.bytes.data() + (addr - it->first);
  }

  std::map<uint64_t, Block> regions_;
  std::vector<uint64_t> added_;
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

} // namespace dumpsift::test
