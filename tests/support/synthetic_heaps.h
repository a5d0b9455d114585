// The CoreCLR and Mono structures of the synthetic managed-heap tests and of the fuzz seeds made
// from the same shapes, written field by field into a FakeMemory (byte_builder.h) from the layouts
// in docs/heap-managed.md, not from the walkers' own tables. Header-only and free of Catch2, so
// tests/fuzz/make_seeds.cpp can use it too.
#pragma once

#include "support/byte_builder.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace dumpsift::test {

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
