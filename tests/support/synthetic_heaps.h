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
