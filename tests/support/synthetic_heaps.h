// Hand-laid process memory for the synthetic heap tests and the fuzz seeds made from the same
// shapes: regions that writes fill in, and the CoreCLR, Mono and Go runtime structures written
// field by field from the layouts in docs/heap-managed.md and docs/heap-go.md (not from the
// walkers' own tables). Header-only and free of Catch2, so tests/fuzz/make_seeds.cpp can use it
// too.
#pragma once

#include "dumpsift/dump/snapshot.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
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

/// A snapshot over hand-laid regions, each captured whole (zeros past the bytes written); a
/// region with a file is an image and a module.
class FakeProcess : public FakeMemory {
public:
  void addRegion(uint64_t start, uint64_t size, const std::string &file = "") {
    FakeMemory::addRegion(start, size);
    files_[start] = file;
  }

  /// The process's OS and architecture (default: none named).
  SystemInfo system;

  /// The snapshot over the regions as they are now (bytes are not copied).
  const Snapshot &snapshot() {
    snap_ = Snapshot();
    snap_.system = system;
    for (auto &[start, region] : regions()) {
      region.bytes.resize(region.size);
      Region r;
      r.start = start;
      r.size = region.size;
      r.captured = region.size;
      r.perms.read = r.perms.write = true;
      auto file = files_.find(start);
      r.backing_file = file == files_.end() ? "" : file->second;
      r.cls = r.backing_file.empty() ? RegionClass::Anonymous : RegionClass::Image;
      snap_.regions.push_back(r);
      snap_.memory.push_back({start, llvm::ArrayRef<uint8_t>(region.bytes)});
      if (!r.backing_file.empty())
        snap_.modules.push_back({r.backing_file, r.start, r.end(), ""});
    }
    return snap_;
  }

private:
  std::map<uint64_t, std::string> files_;
  Snapshot snap_;
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
