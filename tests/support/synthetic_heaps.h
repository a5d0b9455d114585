// Hand-laid process memory for the synthetic managed-heap tests and the fuzz seeds made from the
// same shapes: regions that writes fill in, and the CoreCLR, Mono and HotSpot structures written
// field by field from the layouts in docs/heap-managed.md and docs/heap-hotspot.md (not from the
// walkers' own tables). Header-only and free of Catch2, so tests/fuzz/make_seeds.cpp can use it
// too.
#pragma once

#include "dumpsift/dump/snapshot.h"

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

/// A snapshot over hand-laid regions, each captured whole (zeros past the bytes written) and
/// writable; a region with a file is an image and a module.
class FakeProcess : public FakeMemory {
public:
  void addRegion(uint64_t start, uint64_t size, const std::string &file = "") {
    FakeMemory::addRegion(start, size);
    files_[start] = file;
  }
  /// Names the file of the region that starts at `start`.
  void setFile(uint64_t start, const std::string &file) { files_[start] = file; }

  /// The snapshot over the regions as they are now (bytes are not copied).
  const Snapshot &snapshot() {
    snap_ = Snapshot();
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
/// as libjvm's in the snapshot.
inline HotSpotG1Heap putHotSpotG1Heap(FakeMemory &m) {
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
  region(0, 16, array(h.ints_old, int_array, 50, 2));
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

} // namespace dumpsift::test
