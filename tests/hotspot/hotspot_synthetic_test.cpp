// The hotspot walker on hand-laid JVMs of the releases no runtime here can show: JDK 11 (G1 with
// its Space-based regions, the old flag and thread lists), JDK 21 (filler objects, the new region
// tags, no compressed class pointers) and JDK 25 (Serial with compact object headers, an inflated
// lock), and on damage (a klass pointer into unmapped memory, a region top past its end). Each
// vmStructs entry is spelled as that release's vmStructs.cpp does, with the offsets its tables
// give (docs/heap-hotspot.md); objects are laid out from the object layout, not from the walker.
#include "../../src/heap/hotspot/java_objects.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "support/synthetic_heaps.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <map>

using namespace dumpsift;
using test::HotSpotBuilder;

namespace {

/// Layout helper of a primitive array (klass.hpp): tag 0b11, header size, BasicType, log2 size.
int32_t arrayLayoutHelper(uint32_t header, uint32_t basic_type, uint32_t log2_elem) {
  return static_cast<int32_t>(0xC0000000u | header << 16 | basic_type << 8 | log2_elem);
}
constexpr uint32_t T_BOOLEAN = 4, T_CHAR = 5, T_BYTE = 8, T_INT = 10, T_LONG = 11;

struct Walked {
  std::vector<Allocation> arrays;
  HeapWalkResult result;
  std::vector<Diagnostic> warnings;
  std::string error;
  std::string fact(const std::string &key) const {
    for (const auto &[k, v] : result.facts)
      if (k == key)
        return v;
    return "";
  }
  const Allocation *at(uint64_t address) const {
    for (const Allocation &a : arrays)
      if (a.address == address)
        return &a;
    return nullptr;
  }
  bool warned(const std::string &text) const {
    for (const Diagnostic &d : warnings)
      if ((d.where + ": " + d.message).find(text) != std::string::npos)
        return true;
    return false;
  }
};

Walked walk(test::FakeProcess &p) {
  for (uint64_t start : HotSpotBuilder::libjvmRegions())
    p.nameFile(start, HotSpotBuilder::kLibjvm);
  const Snapshot &snap = p.snapshot();
  AddressSpace memory(snap);
  const HeapWalker *walker = nullptr;
  for (const auto &w : heapWalkers())
    if (w->name() == "hotspot")
      walker = w.get();
  REQUIRE(walker != nullptr);
  REQUIRE(walker->detect(memory));
  Walked w;
  Diagnostics diags;
  auto r = walker->walk(
      memory, [&](const Allocation &a) { w.arrays.push_back(a); }, diags);
  if (r)
    w.result = std::move(*r);
  else
    w.error = llvm::toString(r.takeError());
  w.warnings = diags.warnings();
  for (const Diagnostic &d : w.warnings)
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  return w;
}

void checkArray(const Walked &w, uint64_t address, const char *type, uint64_t length,
                uint32_t element_size, uint32_t header, const char *heap_kind) {
  INFO(type << " at 0x" << std::hex << address);
  const Allocation *a = w.at(address);
  REQUIRE(a != nullptr);
  REQUIRE(a->managed);
  CHECK(a->managed->type_name == type);
  CHECK(a->managed->length == length);
  CHECK(a->managed->element_size == element_size);
  CHECK(a->data_offset == header);
  CHECK(a->size == ((header + length * element_size + 7) & ~uint64_t(7)));
  CHECK(a->state == AllocState::Used);
  CHECK(a->managed->heap_kind == heap_kind);
  CHECK(a->managed->large_object_heap == (std::string(heap_kind) == "humongous"));
}

/// The flags every case sets (name, value, bytes), then the table.
void putFlags(HotSpotBuilder &b, const char *gc, bool compressed_class_pointers,
              bool compact_headers) {
  b.flag(gc, 1);
  b.flag("UseCompressedOops", 1);
  b.flag("UseCompressedClassPointers", compressed_class_pointers ? 1 : 0);
  b.flag("UseCompactObjectHeaders", compact_headers ? 1 : 0);
  b.flag("UseTLAB", 1);
  b.flag("ObjectAlignmentInBytes", 8, 8);
}

/// Padding entries: a real table has hundreds; the walker wants at least a few.
void putPadding(HotSpotBuilder &b) {
  for (int i = 0; i < 8; ++i) {
    b.field("Padding", "_field" + std::to_string(i), 8 * i, "int");
    b.type("PaddingType" + std::to_string(i), 8);
    b.constant("Padding::constant" + std::to_string(i), i);
  }
}

/// The G1 region table of a hand-laid heap: `count` regions of `grain` bytes from `heap`, region
/// records with the release's field offsets.
struct G1Regions {
  test::FakeProcess &p;
  HotSpotBuilder &b;
  uint64_t heap, grain, table;
  uint64_t bottom_offset, end_offset, top_offset, tag_offset;

  /// Region `i` (a record in metaspace) with type `tag` and objects up to `top`.
  void set(int i, uint32_t tag, uint64_t top) {
    const uint64_t hr = b.meta(512), bottom = heap + i * grain;
    p.put64(table + 8 * i, hr);
    p.put64(hr + bottom_offset, bottom), p.put64(hr + end_offset, bottom + grain);
    p.put64(hr + top_offset, top), p.put32(hr + tag_offset, tag);
  }
  uint64_t bottom(int i) const { return heap + i * grain; }
};

/// Thread `t` (in metaspace) with a TLAB {_start @0, _top @8, _end @24} at `tlab_offset`.
void putTlab(test::FakeProcess &p, uint64_t thread, uint64_t tlab_offset, uint64_t start,
             uint64_t top, uint64_t end) {
  p.put64(thread + tlab_offset, start), p.put64(thread + tlab_offset + 8, top);
  p.put64(thread + tlab_offset + 24, end);
}

void putTlabFields(HotSpotBuilder &b, uint64_t tlab_offset, uint32_t prefetch_words) {
  b.field("Thread", "_tlab", tlab_offset, "ThreadLocalAllocBuffer");
  b.field("ThreadLocalAllocBuffer", "_start", 0, "HeapWord*");
  b.field("ThreadLocalAllocBuffer", "_top", 8, "HeapWord*");
  b.field("ThreadLocalAllocBuffer", "_end", 24, "HeapWord*");
  b.staticField("ThreadLocalAllocBuffer", "_reserve_for_allocation_prefetch", prefetch_words, 4);
}

void putKlassFields(HotSpotBuilder &b, uint64_t symbol_length) {
  b.field("Klass", "_layout_helper", 8, "jint");
  b.field("Klass", "_name", 24, "Symbol*");
  b.field("Symbol", "_length", symbol_length, "unsigned short");
  b.field("Symbol", "_body", 6);
}

/// CollectedHeap::_reserved at `offset` of the heap object `heap_object`: [start, start + bytes).
void putReserved(test::FakeProcess &p, HotSpotBuilder &b, uint64_t heap_object, uint64_t offset,
                 uint64_t start, uint64_t bytes) {
  b.staticField("Universe", "_collectedHeap", heap_object);
  b.field("CollectedHeap", "_reserved", offset, "MemRegion");
  b.field("MemRegion", "_start", 0, "HeapWord*");
  b.field("MemRegion", "_word_size", 8, "size_t");
  p.put64(heap_object + offset, start), p.put64(heap_object + offset + 8, bytes / 8);
}

// --- JDK 11: G1 ------------------------------------------------------------------------------

TEST_CASE("hotspot walker reads a JDK 11 G1 heap: Space-based regions, humongous, archive, TLAB") {
  test::FakeProcess p;
  HotSpotBuilder b(p);
  putPadding(b);
  // JDK 11 JVMFlag {const char* _type @0, _name @8, void* _addr @16, _flags @24}, 40 bytes.
  putFlags(b, "UseG1GC", true, false);
  b.flagTable(40, 8, 16);
  b.field("JVMFlag", "_name", 8, "const char*");
  b.field("JVMFlag", "_addr", 16, "void*");
  b.type("JVMFlag", 40);
  putKlassFields(b, 0); // 11: Symbol {u2 _length @0, s2 _refcount, s2 _identity_hash, _body @6}
  b.field("oopDesc", "_metadata._compressed_klass", 8, "narrowKlass");
  const uint64_t byte_array = b.klass(arrayLayoutHelper(16, T_BYTE, 0), b.symbol("[B", 0, 6));
  const uint64_t int_array = b.klass(arrayLayoutHelper(16, T_INT, 2), b.symbol("[I", 0, 6));
  const uint64_t object = b.klass(16, b.symbol("java/lang/Object", 0, 6));
  const uint64_t mirror = b.klass(0x71, b.symbol("java/lang/Class", 0, 6));
  b.staticField("java_lang_Class", "_oop_size_offset", 100, 4);
  // Universe::_narrow_klass (11; CompressedKlassPointers from 12 on).
  const uint64_t base = HotSpotBuilder::kMeta;
  b.staticField("Universe", "_narrow_klass._base", base);
  b.staticField("Universe", "_narrow_klass._shift", 3, 4);
  auto narrow = [&](uint64_t k) { return static_cast<uint32_t>((k - base) >> 3); };
  auto array = [&](uint64_t at, uint64_t klass, uint32_t length, unsigned log2) {
    return test::putJavaArray(p, at, 0, narrow(klass), length, 12, 16, log2);
  };

  // 8 regions of 64 KiB; CollectedHeap::_reserved @16 (11); the region manager embedded @664.
  constexpr uint64_t heap = 0x7e000000, grain = 0x10000;
  p.addRegion(heap, 8 * grain);
  const uint64_t g1h = b.meta(1024);
  putReserved(p, b, g1h, 16, heap, 8 * grain);
  b.field("G1CollectedHeap", "_hrm", 664, "HeapRegionManager");
  b.field("HeapRegionManager", "_regions", 0, "G1HeapRegionTable");
  b.field("G1HeapRegionTable", "_base", 16, "address");
  b.field("G1HeapRegionTable", "_length", 24, "size_t");
  // HeapRegion derives from G1ContiguousSpace (vtable @0): _bottom @8, _end @16, _top @80.
  b.field("Space", "_bottom", 8, "HeapWord*");
  b.field("Space", "_end", 16, "HeapWord*");
  b.field("G1ContiguousSpace", "_top", 80, "HeapWord*");
  b.field("HeapRegion", "_type", 260, "HeapRegionType");
  b.field("HeapRegionType", "_tag", 0, "HeapRegionType::Tag");
  b.staticField("HeapRegion", "GrainBytes", grain);
  for (auto [name, value] : std::map<std::string, int>{{"FreeTag", 0},
                                                       {"EdenTag", 2},
                                                       {"SurvTag", 3},
                                                       {"StartsHumongousTag", 12},
                                                       {"ContinuesHumongousTag", 13},
                                                       {"OldMask", 16},
                                                       {"ArchiveMask", 32}})
    b.constant("HeapRegionType::" + name, value);
  const uint64_t region_table = b.meta(8 * 8);
  p.put64(g1h + 664 + 16, region_table), p.put64(g1h + 664 + 24, 8);
  G1Regions r{p, b, heap, grain, region_table, 8, 16, 80, 260};

  // 11's thread list: Threads::_thread_list, linked by JavaThread::_next @792; _tlab @272.
  putTlabFields(b, 272, 72);
  b.field("JavaThread", "_next", 792, "JavaThread*");
  const uint64_t thread1 = b.meta(1024), thread2 = b.meta(1024);
  b.staticField("Threads", "_thread_list", thread1);
  p.put64(thread1 + 792, thread2), p.put64(thread2 + 792, 0);

  // Region 0, eden: byte[1000], an Object, a 26-word mirror, int[100]; then thread1's TLAB,
  // whose unformatted tail holds a stale byte[] header; past its hard end (end + 72 words),
  // byte[3000].
  uint64_t a = r.bottom(0);
  const uint64_t bytes1000 = a;
  a = array(a, byte_array, 1000, 0);
  p.put64(a, 1), p.put32(a + 8, narrow(object));
  a += 16;
  p.put64(a, 1), p.put32(a + 8, narrow(mirror)), p.put32(a + 100, 26);
  a += 26 * 8;
  const uint64_t ints100 = a;
  a = array(a, int_array, 100, 2);
  array(a, byte_array, 500, 0); // stale
  putTlab(p, thread1, 272, a - 64, a, a + 0x1000);
  putTlab(p, thread2, 272, 0, 0, 0); // no TLAB
  const uint64_t bytes3000 = a + 0x1000 + 576;
  r.set(0, 2, array(bytes3000, byte_array, 3000, 0));
  // Region 1, old: byte[20000]. Region 2, survivor: int[10].
  r.set(1, 16, array(r.bottom(1), byte_array, 20000, 0));
  r.set(2, 3, array(r.bottom(2), int_array, 10, 2));
  // Regions 3-4: one humongous byte[100000] (starts humongous, continues humongous).
  const uint64_t end = array(r.bottom(3), byte_array, 100000, 0);
  r.set(3, 12, r.bottom(4));
  r.set(4, 13, end);
  array(r.bottom(4) + 0x100, byte_array, 64, 0); // inside the humongous array: not an object
  // Region 5: free, holding a stale array. Region 6: an open archive region (56 = Archive|Pinned|
  // Old in 11). Region 7 is not committed (no record).
  array(r.bottom(5), byte_array, 777, 0);
  r.set(5, 0, r.bottom(5));
  r.set(6, 56, array(r.bottom(6), byte_array, 40, 0));
  b.finish();

  Walked w = walk(p);
  REQUIRE(w.error.empty());
  CHECK(w.warnings.empty());
  CHECK(w.fact("hotspot_gc") == "G1");
  CHECK(w.fact("hotspot_threads") == "2");
  CHECK(w.fact("hotspot_tlabs") == "1");
  CHECK(w.fact("hotspot_region_bytes") == "65536");
  REQUIRE(w.arrays.size() == 7);
  checkArray(w, bytes1000, "byte[]", 1000, 1, 16, "eden");
  checkArray(w, ints100, "int[]", 100, 4, 16, "eden");
  checkArray(w, bytes3000, "byte[]", 3000, 1, 16, "eden");
  checkArray(w, r.bottom(1), "byte[]", 20000, 1, 16, "old");
  checkArray(w, r.bottom(2), "int[]", 10, 4, 16, "survivor");
  checkArray(w, r.bottom(3), "byte[]", 100000, 1, 16, "humongous");
  checkArray(w, r.bottom(6), "byte[]", 40, 1, 16, "archive");
  // Objects: the 7 arrays, the Object and the mirror.
  CHECK(w.fact("hotspot_objects") == "9");
  CHECK(w.result.stats.used_count == 9);
  CHECK(w.fact("hotspot_filler_arrays") == "0");
}

// --- JDK 21: G1 without compressed class pointers; fillers; damage ---------------------------

TEST_CASE("hotspot walker reads a JDK 21 G1 heap: filler objects, new region tags, damage") {
  test::FakeProcess p;
  HotSpotBuilder b(p);
  putPadding(b);
  // JDK 17+ JVMFlag {void* _addr @0, const char* _name @8, int _flags @16, int _type @20}.
  putFlags(b, "UseG1GC", false, false);
  b.flagTable(24, 8, 0);
  b.field("JVMFlag", "_addr", 0, "void*");
  b.field("JVMFlag", "_name", 8, "const char*");
  b.type("JVMFlag", 24);
  putKlassFields(b, 4); // Symbol {u4 _hash_and_refcount, u2 _length @4, _body @6}
  b.field("oopDesc", "_metadata._klass", 8, "Klass*");
  // Without compressed class pointers: the Klass* at 8, the length at 16, elements at 24.
  const uint64_t byte_array = b.klass(arrayLayoutHelper(24, T_BYTE, 0), b.symbol("[B", 4, 6));
  const uint64_t long_array = b.klass(arrayLayoutHelper(24, T_LONG, 3), b.symbol("[J", 4, 6));
  // Fillers (CollectedHeap::fill_with_object, JDK 21): an int[]-shaped array class of its own
  // and a 16-byte instance.
  const uint64_t filler_array =
      b.klass(arrayLayoutHelper(24, T_INT, 2), b.symbol("[Ljdk/internal/vm/FillerElement;", 4, 6));
  const uint64_t filler_object = b.klass(16, b.symbol("jdk/internal/vm/FillerObject", 4, 6));
  auto array = [&](uint64_t at, uint64_t klass, uint32_t length, unsigned log2) {
    return test::putJavaArray(p, at, klass, 0, length, 16, 24, log2);
  };

  constexpr uint64_t heap = 0x7e000000, grain = 0x10000;
  p.addRegion(heap, 4 * grain);
  const uint64_t g1h = b.meta(1024);
  putReserved(p, b, g1h, 32, heap, 4 * grain);
  b.field("G1CollectedHeap", "_hrm", 408, "HeapRegionManager");
  b.field("HeapRegionManager", "_regions", 88, "G1HeapRegionTable");
  b.field("G1HeapRegionTable", "_base", 16, "address");
  b.field("G1HeapRegionTable", "_length", 24, "size_t");
  b.field("HeapRegion", "_bottom", 0, "HeapWord* const");
  b.field("HeapRegion", "_end", 8, "HeapWord* const");
  b.field("HeapRegion", "_top", 16, "HeapWord* volatile");
  b.field("HeapRegion", "_type", 60, "HeapRegionType");
  b.field("HeapRegionType", "_tag", 0, "HeapRegionType::Tag volatile");
  b.staticField("HeapRegion", "GrainBytes", grain);
  for (auto [name, value] : std::map<std::string, int>{{"FreeTag", 0},
                                                       {"EdenTag", 2},
                                                       {"SurvTag", 3},
                                                       {"StartsHumongousTag", 4},
                                                       {"ContinuesHumongousTag", 5},
                                                       {"OldMask", 8}})
    b.constant("HeapRegionType::" + name, value);
  const uint64_t region_table = b.meta(4 * 8);
  p.put64(g1h + 408 + 88 + 16, region_table), p.put64(g1h + 408 + 88 + 24, 4);
  G1Regions r{p, b, heap, grain, region_table, 0, 8, 16, 60};
  // ThreadsSMRSupport::_java_thread_list -> ThreadsList {_length @4, _threads @16}; _tlab @432.
  putTlabFields(b, 432, 0);
  b.field("ThreadsList", "_length", 4, "const uint");
  b.field("ThreadsList", "_threads", 16, "JavaThread *const *const");
  const uint64_t list = b.meta(64), threads = b.meta(16), thread = b.meta(1024);
  b.staticField("ThreadsSMRSupport", "_java_thread_list", list);
  p.put32(list + 4, 1), p.put64(list + 16, threads), p.put64(threads, thread);

  // Region 0, old: byte[5000], a filler array, byte[6000], a filler object, long[100].
  uint64_t a = r.bottom(0);
  const uint64_t bytes5000 = a;
  a = array(a, byte_array, 5000, 0);
  a = array(a, filler_array, 30, 2);
  const uint64_t bytes6000 = a;
  a = array(a, byte_array, 6000, 0);
  p.put64(a, 1), p.put64(a + 8, filler_object);
  a += 16;
  const uint64_t longs100 = a;
  r.set(0, 8, array(a, long_array, 100, 3));
  // Region 1, eden: byte[100], then an object whose klass pointer leads into unmapped memory,
  // then 64 bytes of junk, then byte[200] followed by byte[300]: the walk resynchronises there.
  // Prefetch reserve 0: the TLAB's hard end is its end plus an int[] header (2 words, JDK 21:
  // CollectedHeap::_lab_alignment_reserve is not in vmStructs).
  a = r.bottom(1);
  const uint64_t bytes100 = a;
  a = array(a, byte_array, 100, 0);
  const uint64_t damaged = a;
  p.put64(a, 1), p.put64(a + 8, 0x5555000000000000);
  a += 64 + 16;
  const uint64_t bytes200 = a;
  a = array(a, byte_array, 200, 0);
  const uint64_t bytes300 = a;
  a = array(a, byte_array, 300, 0);
  putTlab(p, thread, 432, a, a, a + 256); // an empty TLAB: [a, a + 256 + 16) unformatted
  const uint64_t bytes400 = a + 256 + 16;
  r.set(1, 2, array(bytes400, byte_array, 400, 0));
  // Region 2: its top lies past its end (damage): walked to its end. Region 3: a humongous
  // byte[65000], its top at the array's end.
  const uint64_t bytes50 = r.bottom(2);
  a = array(bytes50, byte_array, 50, 0);
  while (a < r.bottom(3)) // the rest of the region: one filler array per 8 KiB
    a = array(a, filler_array, std::min<uint64_t>(2042, (r.bottom(3) - a - 24) / 4), 2);
  r.set(2, 2, r.bottom(2) + 2 * grain);
  r.set(3, 4, array(r.bottom(3), byte_array, 65000, 0));
  b.finish();

  Walked w = walk(p);
  REQUIRE(w.error.empty());
  CHECK(w.fact("hotspot_compressed_class_pointers") == "off");
  checkArray(w, bytes5000, "byte[]", 5000, 1, 24, "old");
  checkArray(w, bytes6000, "byte[]", 6000, 1, 24, "old");
  checkArray(w, longs100, "long[]", 100, 8, 24, "old");
  checkArray(w, bytes100, "byte[]", 100, 1, 24, "eden");
  checkArray(w, bytes200, "byte[]", 200, 1, 24, "eden");
  checkArray(w, bytes300, "byte[]", 300, 1, 24, "eden");
  checkArray(w, bytes400, "byte[]", 400, 1, 24, "eden");
  checkArray(w, bytes50, "byte[]", 50, 1, 24, "eden");
  checkArray(w, r.bottom(3), "byte[]", 65000, 1, 24, "humongous");
  CHECK(w.arrays.size() == 9);
  // Fillers are free space, not arrays: counted apart.
  CHECK(w.fact("hotspot_filler_arrays") != "0");
  CHECK(w.result.stats.free_count == std::stoull(w.fact("hotspot_filler_arrays")) + 1);
  CHECK(w.warned(llvm::utohexstr(damaged, true)));
  CHECK(w.warned("resumed at 0x" + llvm::utohexstr(bytes200, true)));
  CHECK(w.warned("top 0x" + llvm::utohexstr(r.bottom(4), true) + " is outside"));
  CHECK(w.fact("hotspot_resyncs") == "1");
}

// --- JDK 25: Serial with compact object headers ----------------------------------------------

TEST_CASE("hotspot walker reads a JDK 25 Serial heap with compact object headers") {
  test::FakeProcess p;
  HotSpotBuilder b(p);
  putPadding(b);
  putFlags(b, "UseSerialGC", true, true);
  b.flagTable(24, 8, 0);
  b.field("JVMFlag", "_addr", 0, "void*");
  b.field("JVMFlag", "_name", 8, "const char*");
  b.type("JVMFlag", 24);
  putKlassFields(b, 4);
  // CompressedKlassPointers::_base/_shift (25), shift 10 with compact headers; the class in the
  // mark word's bits 42-63 (markWord::klass_shift); arrays' length at 8, elements at 12 (16 for
  // long[]): Klass layout helpers 0xc00c0800 and 0xc0100b03 as observed.
  const uint64_t base = HotSpotBuilder::kMeta;
  b.staticField("CompressedKlassPointers", "_base", base);
  b.staticField("CompressedKlassPointers", "_shift", 10, 4);
  b.constant("markWord::klass_shift", 42);
  const uint64_t byte_array = b.klass(arrayLayoutHelper(12, T_BYTE, 0), b.symbol("[B", 4, 6));
  const uint64_t long_array = b.klass(arrayLayoutHelper(16, T_LONG, 3), b.symbol("[J", 4, 6));
  const uint64_t char_array = b.klass(arrayLayoutHelper(12, T_CHAR, 1), b.symbol("[C", 4, 6));
  const uint64_t bool_array = b.klass(arrayLayoutHelper(12, T_BOOLEAN, 0), b.symbol("[Z", 4, 6));
  auto mark = [&](uint64_t klass) { return ((klass - base) >> 10) << 42 | 1; };
  auto array = [&](uint64_t at, uint64_t klass, uint32_t length, uint32_t header, unsigned log2) {
    p.put64(at, mark(klass));
    p.put32(at + 8, length);
    return at + ((header + (uint64_t(length) << log2) + 7) & ~uint64_t(7));
  };
  // An inflated lock: the mark points at an ObjectMonitor (low bits 10) whose _header keeps it.
  b.field("ObjectMonitor", "_header", 0, "markWord");
  const uint64_t monitor = b.meta(64);

  constexpr uint64_t heap = 0x7e000000;
  p.addRegion(heap, 0x40000);
  const uint64_t serial = b.meta(1024);
  putReserved(p, b, serial, 48, heap, 0x40000);
  b.field("SerialHeap", "_young_gen", 112, "DefNewGeneration*");
  b.field("SerialHeap", "_old_gen", 120, "TenuredGeneration*");
  b.field("DefNewGeneration", "_eden_space", 656, "ContiguousSpace*");
  b.field("DefNewGeneration", "_from_space", 664, "ContiguousSpace*");
  b.field("DefNewGeneration", "_to_space", 672, "ContiguousSpace*");
  b.field("TenuredGeneration", "_the_space", 216, "ContiguousSpace*");
  b.field("ContiguousSpace", "_bottom", 0, "HeapWord*");
  b.field("ContiguousSpace", "_end", 8, "HeapWord*");
  b.field("ContiguousSpace", "_top", 16, "HeapWord*");
  b.staticField("CollectedHeap", "_lab_alignment_reserve", 2);
  putTlabFields(b, 448, 0);
  b.field("ThreadsList", "_length", 4, "const uint");
  b.field("ThreadsList", "_threads", 16, "JavaThread *const *const");
  b.staticField("ThreadsSMRSupport", "_java_thread_list", b.meta(64)); // no Java thread
  const uint64_t young = b.meta(1024), old = b.meta(512);
  p.put64(serial + 112, young), p.put64(serial + 120, old);
  auto space = [&](uint64_t bottom, uint64_t top, uint64_t end) {
    const uint64_t s = b.meta(64);
    p.put64(s, bottom), p.put64(s + 8, end), p.put64(s + 16, top);
    return s;
  };
  // Old [heap, +128K): byte[70000] locked through a monitor, long[10]. Eden [+128K, +192K):
  // char[33], boolean[5]. From and to [+192K, +224K), [+224K, +256K): from holds byte[7].
  uint64_t a = heap;
  const uint64_t locked = a;
  a = array(a, byte_array, 70000, 12, 0);
  p.put64(monitor, mark(byte_array)); // the displaced header
  p.put64(locked, monitor | 2);
  const uint64_t longs = a;
  a = array(a, long_array, 10, 16, 3);
  p.put64(old + 216, space(heap, a, heap + 0x20000));
  a = heap + 0x20000;
  const uint64_t chars = a;
  a = array(a, char_array, 33, 12, 1);
  const uint64_t bools = a;
  a = array(a, bool_array, 5, 12, 0);
  p.put64(young + 656, space(heap + 0x20000, a, heap + 0x30000));
  const uint64_t from = heap + 0x30000;
  p.put64(young + 664, space(from, array(from, byte_array, 7, 12, 0), heap + 0x38000));
  array(heap + 0x38000, byte_array, 9, 12, 0); // to-space: stale, not walked
  p.put64(young + 672, space(heap + 0x38000, heap + 0x38000, heap + 0x40000));
  b.finish();

  Walked w = walk(p);
  REQUIRE(w.error.empty());
  CHECK(w.warnings.empty());
  CHECK(w.fact("hotspot_gc") == "Serial");
  CHECK(w.fact("hotspot_compact_headers") == "on");
  REQUIRE(w.arrays.size() == 5);
  checkArray(w, locked, "byte[]", 70000, 1, 12, "old");
  checkArray(w, longs, "long[]", 10, 8, 16, "old");
  checkArray(w, chars, "char[]", 33, 2, 12, "eden");
  checkArray(w, bools, "boolean[]", 5, 1, 12, "eden");
  checkArray(w, from, "byte[]", 7, 1, 12, "survivor");
  CHECK(w.result.areas.size() == 4);
}

// --- The fuzz seed's heap -------------------------------------------------------------------

TEST_CASE("hotspot walker reads the shared small G1 heap of the fuzz seed") {
  test::FakeProcess p;
  const test::HotSpotG1Heap h = test::putHotSpotG1Heap(p);
  Walked w = walk(p);
  REQUIRE(w.error.empty());
  for (const Diagnostic &d : w.warnings)
    FAIL_CHECK(d.where << ": " << d.message);
  REQUIRE(w.arrays.size() == 3);
  checkArray(w, h.bytes_old, "byte[]", 3000, 1, 16, "old");
  checkArray(w, h.ints_old, "int[]", 50, 4, 16, "old");
  checkArray(w, h.bytes_eden, "byte[]", 900, 1, 16, "eden");
}

TEST_CASE("hotspot walker on hostile heaps: absurd counts and lengths, loops, wild pointers") {
  // Each corruption of the small G1 heap gives warnings and bounded work, never a crash.
  using Corrupt = std::function<void(test::FakeProcess &, const test::HotSpotG1Heap &)>;
  const std::vector<std::pair<std::string, Corrupt>> cases = {
      {"region table of 2^40 regions",
       [](auto &p, auto &h) { p.put64(h.collected_heap + 304 + 96 + 24, uint64_t(1) << 40); }},
      {"thread list of 2^31 threads, all the same",
       [](auto &p, auto &h) { p.put32(h.thread_list + 4, 0x80000000u); }},
      {"region table entry pointing into unmapped memory",
       [](auto &p, auto &h) { p.put64(h.region_table, 0x123456789000); }},
      {"array of 2^31 - 1 bytes", [](auto &p, auto &h) { p.put32(h.bytes_old + 12, 0x7fffffff); }},
      {"klass pointer into unmapped memory",
       [](auto &p, auto &h) { p.put32(h.ints_old + 8, 0x7fffff00); }},
      {"reserved heap of 2^60 bytes",
       [](auto &p, auto &h) { p.put64(h.collected_heap + 40, uint64_t(1) << 57); }},
      {"TLAB ending before it starts",
       [](auto &p, auto &h) { p.put64(h.thread + 280, h.heap - 8); }},
  };
  for (const auto &[name, corrupt] : cases) {
    INFO(name);
    test::FakeProcess p;
    const test::HotSpotG1Heap h = test::putHotSpotG1Heap(p);
    corrupt(p, h);
    auto start = std::chrono::steady_clock::now();
    Walked w = walk(p);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
    CHECK((!w.warnings.empty() || !w.error.empty()));
    CHECK(w.arrays.size() <= 3);
  }
}

} // namespace

TEST_CASE("hotspot walker finds the handle storages by their shape: strong slots in use, weak "
          "ones, decoys") {
  test::FakeProcess p;
  test::putHotSpotG1Heap(p);
  {
    // No storage: every native word stays a possible holder.
    Walked w = walk(p);
    REQUIRE(w.error.empty());
    CHECK(w.fact("hotspot_handle_storages") == "0 strong, 0 weak");
    CHECK_FALSE(w.result.held_through_handles);
    CHECK(w.result.handles.empty());
  }
  // The C heap: OopStorage {const char *_name; ActiveArray *_active_array}, ActiveArray
  // {_size, _block_count, _refcount, Block *[]}, Block {oop _data[64]; _allocated_bitmask @512;
  // _owner_address @520}, blocks 64-byte aligned.
  constexpr uint64_t heap = 0x5000000;
  p.addRegion(heap, 0x10000);
  uint64_t next = heap;
  auto alloc = [&](uint64_t bytes) {
    const uint64_t at = next;
    next += (bytes + 63) & ~uint64_t(63);
    return at;
  };
  struct Storage {
    uint64_t address;
    std::vector<uint64_t> blocks;
  };
  auto storage = [&](const std::string &name, std::vector<uint64_t> masks, uint64_t claimed = 0) {
    Storage st{alloc(64), {}};
    const uint64_t text = alloc(64), array = alloc(24 + 8 * masks.size());
    p.putBytes(text, name), p.put8(text + name.size(), 0);
    p.put64(st.address, text), p.put64(st.address + 8, array);
    p.put64(array, claimed ? claimed : masks.size() + 2);
    p.put64(array + 8, claimed ? claimed : masks.size());
    for (size_t i = 0; i < masks.size(); ++i) {
      const uint64_t block = alloc(512 + 32);
      p.put64(array + 24 + 8 * i, block);
      p.put64(block + 512, masks[i]), p.put64(block + 520, st.address);
      st.blocks.push_back(block);
    }
    return st;
  };
  const Storage jni = storage("JNI Global", {0b1011, uint64_t(1) << 63});
  const uint64_t first_block = jni.blocks[0], second_block = jni.blocks[1];
  const Storage weak = storage("VM Weak", {0xff});
  // Decoys: a block that names another owner, and a storage claiming 2^40 blocks.
  const Storage wrong_owner = storage("VM Global", {0x1});
  p.put64(wrong_owner.blocks[0] + 520, weak.address);
  const Storage absurd = storage("Thread OopStorage", {0x1}, uint64_t(1) << 40);
  // libjvm's data points at each (OopStorageSet::_storages).
  const uint64_t statics = HotSpotBuilder::kData + 0xfe00;
  uint64_t at = statics;
  for (const Storage *st : {&jni, &weak, &wrong_owner, &absurd})
    p.put64(at, st->address), at += 8;

  Walked w = walk(p);
  REQUIRE(w.error.empty());
  CHECK(w.fact("hotspot_handle_storages") == "1 strong, 1 weak");
  CHECK(w.fact("hotspot_strong_handles") == "4");
  CHECK(w.result.held_through_handles);
  // The slots in use of the strong storage, as runs: 0-1 and 3 of the first block, 63 of the
  // second.
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  for (const HeapArea &h : w.result.handles)
    runs.push_back({h.start, h.start + h.size});
  CHECK(runs ==
        std::vector<std::pair<uint64_t, uint64_t>>{{first_block, first_block + 16},
                                                   {first_block + 24, first_block + 32},
                                                   {second_block + 504, second_block + 512}});
}

namespace {

/// The small G1 heap with one instance of `demo.Holder` {byte[] _buf @12 (narrow); int count
/// @16} after the int[], holding the old byte[]: its fields recorded as JDK 17 does (`stream`
/// false: an Array<u2> of six slots per field) or as JDK 21+ does (an UNSIGNED5 stream).
struct HolderHeap {
  test::HotSpotG1Heap heap;
  uint64_t holder = 0;
};

HolderHeap putHolderHeap(test::FakeProcess &p, bool stream) {
  HolderHeap out;
  out.heap = test::putHotSpotG1Heap(p, [&](HotSpotBuilder &b, uint64_t at) {
    b.field("Klass", "_super", 0x40);
    b.field("InstanceKlass", "_constants", 0x80);
    b.field("Array<u2>", "_data", 4);
    b.type("ConstantPool", 0x50);
    const uint64_t pool = b.meta(0x50 + 8 * 5);
    const char *symbols[] = {"_buf", "[B", "count", "I"};
    for (int i = 0; i < 4; ++i)
      p.put64(pool + 0x50 + 8 * (i + 1), b.symbol(symbols[i], 4, 6));
    const uint64_t klass = b.klass(24, b.symbol("demo/Holder", 4, 6)); // 24-byte instances
    p.put64(klass + 0x40, 0);
    p.put64(klass + 0x80, pool);
    // Two fields: _buf (name 1, signature 2, offset 12), count (3, 4, 16); no flags.
    const uint16_t fields[2][3] = {{1, 2, 12}, {3, 4, 16}};
    if (!stream) {
      b.field("InstanceKlass", "_fields", 0x88),
          b.field("InstanceKlass", "_java_fields_count", 0x90);
      for (auto [name, value] : {std::pair<const char *, uint64_t>{"FieldInfo::field_slots", 6},
                                 {"FieldInfo::access_flags_offset", 0},
                                 {"FieldInfo::name_index_offset", 1},
                                 {"FieldInfo::signature_index_offset", 2},
                                 {"FieldInfo::low_packed_offset", 4},
                                 {"FieldInfo::high_packed_offset", 5},
                                 {"FIELDINFO_TAG_SIZE", 2},
                                 {"FIELDINFO_TAG_OFFSET", 1}})
        b.constant(name, value);
      const uint64_t array = b.meta(4 + 2 * 12);
      p.put32(array, 12);
      for (int f = 0; f < 2; ++f) {
        const uint32_t packed = uint32_t(fields[f][2]) << 2 | 1;
        const uint16_t slots[6] = {
            0, fields[f][0], fields[f][1], 0, uint16_t(packed & 0xffff), uint16_t(packed >> 16)};
        for (int s = 0; s < 6; ++s)
          p.put16(array + 4 + 2 * (6 * f + s), slots[s]);
      }
      p.put64(klass + 0x88, array);
      p.put16(klass + 0x90, 2);
    } else {
      b.field("InstanceKlass", "_fieldinfo_stream", 0x98);
      b.constant("FieldInfo::FieldFlags::_ff_initialized", 0);
      b.constant("FieldInfo::FieldFlags::_ff_generic", 2);
      b.constant("FieldInfo::FieldFlags::_ff_contended", 4);
      // UNSIGNED5: a number below 191 is one byte, the number plus one. The first field is
      // initialized (flag bit 0: an initial value index follows), with offset 12.
      const uint8_t bytes[] = {2 + 1, 0 + 1, // 2 Java fields, 0 injected
                               1 + 1, 2 + 1, 12 + 1, 0 + 1, 1 + 1, 7 + 1, // _buf, initval 7
                               3 + 1, 4 + 1, 16 + 1, 0 + 1, 0 + 1};       // count
      const uint64_t array = b.meta(4 + sizeof(bytes));
      p.put32(array, sizeof(bytes));
      for (size_t i = 0; i < sizeof(bytes); ++i)
        p.put8(array + 4 + i, bytes[i]);
      p.put64(klass + 0x98, array);
    }
    out.holder = at;
    p.put64(at, 1);
    p.put32(at + 8, static_cast<uint32_t>(klass - HotSpotBuilder::kMeta));
    p.put32(at + 12, 0);          // _buf: set below, once the byte[]'s address is known
    p.put32(at + 16, 0x7e000000); // count: an int whose bits equal the heap's first address
    p.put32(at + 20, 0);
    return at + 24;
  });
  p.put32(out.holder + 12, static_cast<uint32_t>(out.heap.bytes_old));
  return out;
}

} // namespace

TEST_CASE("hotspot object finder names a holder's class and field from JDK 17's field records and "
          "JDK 21's field stream") {
  for (bool stream : {false, true}) {
    INFO((stream ? "JDK 21+ stream" : "JDK 17 u2 slots"));
    test::FakeProcess p;
    const HolderHeap h = putHolderHeap(p, stream);
    for (uint64_t start : HotSpotBuilder::libjvmRegions())
      p.nameFile(start, HotSpotBuilder::kLibjvm);
    AddressSpace memory(p.snapshot());
    const HeapWalker &walker =
        *std::find_if(heapWalkers().begin(), heapWalkers().end(), [](const auto &w) {
           return w->name() == "hotspot";
         })->get();
    Diagnostics diags;
    auto result = walker.walk(
        memory, [](const Allocation &) {}, diags);
    REQUIRE(!!result);
    CHECK(diags.empty());
    CHECK(result->references_at_start);
    REQUIRE(result->narrow_references);
    CHECK(result->narrow_references->base == 0);
    REQUIRE(result->objects);
    ObjectFinder &objects = *result->objects;

    auto buf = objects.objectHolding(h.holder + 12);
    REQUIRE(buf);
    CHECK(buf->object == h.holder);
    CHECK(buf->size == 24);
    CHECK(buf->type == "demo.Holder");
    CHECK(buf->field == "_buf");
    CHECK(buf->reference);
    auto count = objects.objectHolding(h.holder + 16);
    REQUIRE(count);
    CHECK(count->field == "count");
    CHECK_FALSE(count->reference); // an int, whatever its bits
    auto padding = objects.objectHolding(h.holder + 20);
    REQUIRE(padding);
    CHECK(padding->field.empty());
    auto element = objects.objectHolding(h.heap.ints_old + 40);
    REQUIRE(element);
    CHECK(element->object == h.heap.ints_old);
    CHECK(element->type == "int[]");
    CHECK_FALSE(element->reference);
    // Past the old region's top, and before the first object: no object.
    CHECK_FALSE(objects.objectHolding(h.holder + 24));
    CHECK_FALSE(objects.objectHolding(h.heap.heap - 8));
  }
}

TEST_CASE("Java type names are written as Class.getTypeName writes them") {
  CHECK(hotspot::javaTypeName("java/io/ByteArrayOutputStream") == "java.io.ByteArrayOutputStream");
  CHECK(hotspot::javaTypeName("Holders$Channel") == "Holders$Channel");
  CHECK(hotspot::javaTypeName("[B") == "byte[]");
  CHECK(hotspot::javaTypeName("[[J") == "long[][]");
  CHECK(hotspot::javaTypeName("[Ljava/lang/Object;") == "java.lang.Object[]");
  CHECK(hotspot::javaTypeName("[[Ljava/lang/String;") == "java.lang.String[][]");
  CHECK(hotspot::javaTypeName("") == "");
  CHECK(hotspot::javaTypeName("[") == "[]");
}
