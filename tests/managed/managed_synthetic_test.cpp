// The coreclr and mono walkers on hand-built snapshots: the cases a real dump here does not show
// (no heap_segment records, a .NET 9+ contract descriptor, a freed LOS object, a LOS object in its
// own mapping, a broken heap). The bytes are laid out here from the documented layouts, written
// out field by field, not from the walkers' own tables.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "support/heap_walk.h"
#include "support/synthetic_heaps.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <tuple>

using namespace dumpsift;
using test::FakeProcess;
using test::walkerNamed;

namespace {

struct Walked {
  std::vector<Allocation> allocations;
  HeapWalkResult result;
  Diagnostics diags;
  std::string error;
  std::string fact(const std::string &key) const {
    for (const auto &[k, v] : result.facts)
      if (k == key)
        return v;
    return "";
  }
};

Walked walk(const char *name, const Snapshot &snap) {
  AddressSpace memory(snap);
  Walked w;
  auto r = test::walkerNamed(name).walk(
      memory, [&](const Allocation &a) { w.allocations.push_back(a); }, w.diags);
  if (r)
    w.result = std::move(*r);
  else
    w.error = llvm::toString(r.takeError());
  return w;
}

// --- CoreCLR ---------------------------------------------------------------------------------

constexpr uint64_t kTypes = 0x10000; // test::putCoreClrTypes's layout from here:
constexpr uint64_t kByteArrayMT = kTypes + 0x300, kIntArrayMT = kTypes + 0x400;
constexpr uint64_t kFreeMT = kTypes + 0x500;

/// The MethodTables of test::putCoreClrTypes at kTypes.
void putMethodTables(FakeProcess &p, uint64_t free_parent = 0) {
  test::putCoreClrTypes(p, kTypes, free_parent);
}

uint64_t putArray(FakeProcess &p, uint64_t addr, uint64_t mt, uint32_t length, uint32_t elem) {
  return test::putCoreClrArray(p, addr, mt, length, elem);
}

constexpr uint64_t kHeap = 0x200000;
constexpr uint64_t kLohThreshold = 85000;

/// A LOH-like run without any heap_segment record: pad, byte[100000], pad, int[30000], zeros.
void putLooseHeap(FakeProcess &p, uint64_t free_mt = kFreeMT) {
  p.addRegion(kHeap, 0x80000);
  uint64_t a = putArray(p, kHeap, free_mt, 8, 1);
  a = putArray(p, a, kByteArrayMT, 100000, 1);
  a = putArray(p, a, free_mt, 8, 1);
  putArray(p, a, kIntArrayMT, 30000, 4);
}

TEST_CASE("coreclr walker without heap_segment records scans and chain-checks objects") {
  FakeProcess p;
  putMethodTables(p);
  putLooseHeap(p);
  Walked w = walk("coreclr", p.snapshot());
  REQUIRE(w.error.empty());
  CHECK(w.fact("coreclr_discovery") == "object scan (no heap_segment found)");
  std::vector<const Allocation *> arrays;
  int free_objects = 0;
  for (const Allocation &a : w.allocations) {
    if (a.state == AllocState::Free)
      ++free_objects;
    else if (a.managed)
      arrays.push_back(&a);
  }
  CHECK(free_objects == 2);
  REQUIRE(arrays.size() == 2);
  CHECK(arrays[0]->address == kHeap + 32);
  CHECK(arrays[0]->size == 100024);
  CHECK(arrays[0]->data_offset == 16);
  CHECK(arrays[0]->managed->type_name == "byte[]");
  CHECK(arrays[0]->managed->element_size == 1);
  CHECK(arrays[0]->managed->large_object_heap); // by size: no segment tells
  CHECK(arrays[0]->managed->heap_kind.empty());
  CHECK(arrays[1]->size == 120024);
  CHECK(arrays[1]->managed->element_size == 4);
  CHECK(arrays[1]->managed->type_name.empty());
}

TEST_CASE("coreclr walker follows heap_segment records and their LOH flag") {
  FakeProcess p;
  putMethodTables(p);
  // A segment: heap_segment {allocated, committed, reserved, used, mem, flags} then objects.
  constexpr uint64_t seg = 0x400000, mem = seg + 0x1000;
  p.addRegion(seg, 0x40000);
  uint64_t a = putArray(p, mem, kByteArrayMT, 100, 1); // a small byte[] on a "LOH" segment
  a = putArray(p, a, kFreeMT, 64, 1);
  a += 0x100; // an allocation-context gap of zeros
  uint64_t end = putArray(p, a, kByteArrayMT, 5000, 1);
  p.put64(seg, end), p.put64(seg + 8, seg + 0x40000), p.put64(seg + 16, seg + 0x100000);
  p.put64(seg + 24, end), p.put64(seg + 32, mem), p.put64(seg + 40, 8);
  Walked w = walk("coreclr", p.snapshot());
  REQUIRE(w.error.empty());
  CHECK(w.fact("coreclr_discovery") == "heap_segment records");
  REQUIRE(w.result.areas.size() == 1);
  CHECK(w.result.areas[0].kind == "loh");
  CHECK(w.result.areas[0].start == mem);
  std::vector<uint64_t> used;
  for (const Allocation &a2 : w.allocations)
    if (a2.state == AllocState::Used) {
      used.push_back(a2.address);
      CHECK(a2.managed->large_object_heap); // the segment says so, whatever the size
      CHECK(a2.managed->heap_kind == "loh");
    }
  CHECK(used == std::vector<uint64_t>{mem, a});
}

/// A heap_segment {allocated, committed, reserved, used, mem, flags, next} at `at`.
void putSegment(FakeProcess &p, uint64_t at, uint64_t mem, uint64_t allocated, uint64_t reserved,
                uint64_t flags, uint64_t next) {
  const uint64_t words[7] = {allocated, reserved, reserved, allocated, mem, flags, next};
  for (int i = 0; i < 7; ++i)
    p.put64(at + 8 * i, words[i]);
}

// The shape of a .NET Core 2.0 heap that was walked wrongly (bench/coreclr.sh's 2 GiB core): two
// SOH segments (gen2's, linked to the ephemeral one) and a list of LOH segments, and just past the
// ephemeral segment's `allocated` an object whose fields read as a heap_segment: its `mem` right
// after it, its `allocated` past every LOH segment, its `next` to something that is no segment.
// Taken for a segment header, it swallowed the LOH segments: their arrays became `soh`.
TEST_CASE("coreclr walker finds segments by their next links and ignores a record-like object") {
  // With `lead`, each segment's mapping starts a page before its header (a mapping the kernel
  // merged with the one before): no header at a mapping start, so every word is tried.
  const uint64_t lead = GENERATE(uint64_t(0), uint64_t(0x1000));
  INFO("lead " << lead);
  FakeProcess p;
  putMethodTables(p);
  constexpr uint64_t eph = 0x400000, gen2 = 0x800000;
  constexpr uint64_t loh1 = 0x1000000, loh2 = 0x1100000, loh3 = 0x1140000;
  p.addRegion(eph - lead, 0x10000 + lead);
  p.addRegion(gen2 - lead, 0x10000 + lead);
  p.addRegion(loh1 - lead, 0x40000 + lead);
  p.addRegion(loh2 - lead, 0x80000 + lead); // loh3's header lies inside this mapping: only
                                            // loh2's `next` leads to it

  std::vector<uint64_t> soh_arrays, loh_arrays;
  auto fill = [&](uint64_t seg, int count, uint32_t length, std::vector<uint64_t> &out) {
    uint64_t a = seg + 0x1000;
    for (int i = 0; i < count; ++i) {
      if (length >= kLohThreshold)
        a = putArray(p, a, kFreeMT, 8, 1); // the LOH's 32-byte pad before each object
      out.push_back(a);
      a = i % 2 ? putArray(p, a, kIntArrayMT, length / 4, 4)
                : putArray(p, a, kByteArrayMT, length, 1);
    }
    return a;
  };
  const uint64_t eph_end = fill(eph, 6, 100, soh_arrays);
  const uint64_t gen2_end = fill(gen2, 8, 200, soh_arrays);
  const uint64_t loh1_end = fill(loh1, 2, 100000, loh_arrays);
  const uint64_t loh2_end = fill(loh2, 2, 100000, loh_arrays);
  const uint64_t loh3_end = fill(loh3, 2, 100000, loh_arrays);
  putSegment(p, gen2, gen2 + 0x1000, gen2_end, gen2 + 0x10000, 0, eph);
  putSegment(p, eph, eph + 0x1000, eph_end, eph + 0x10000, 0, 0);
  putSegment(p, loh1, loh1 + 0x1000, loh1_end, loh1 + 0x40000, 8, loh2);
  putSegment(p, loh2, loh2 + 0x1000, loh2_end, loh2 + 0x40000, 8, loh3);
  putSegment(p, loh3, loh3 + 0x1000, loh3_end, loh3 + 0x40000, 8, 0);

  // The record-like object, allocated after the last GC past the ephemeral segment's `allocated`:
  // an object[] whose elements are {allocated, committed, reserved, used, mem, 0, next}.
  constexpr uint64_t kObjectArrayMT = kIntArrayMT; // the walker only needs a valid array here
  const uint64_t object = eph_end + 0x18;
  putArray(p, object, kObjectArrayMT, 14, 8);
  const uint64_t fake = object + 16, fake_mem = fake + 0x30;
  putSegment(p, fake, fake_mem, loh3 + 0x80000, loh3 + 0x80000, 0, kTypes + 0x300);
  putArray(p, fake_mem, kByteArrayMT, 8, 1);

  Walked w = walk("coreclr", p.snapshot());
  REQUIRE(w.error.empty());
  CHECK(w.fact("coreclr_discovery") == "heap_segment records");
  CHECK(w.fact("coreclr_segments") == "5");
  CHECK(w.fact("coreclr_segment_search") ==
        (lead ? "every word, and next links" : "mapping starts and next links"));
  CHECK(w.fact("coreclr_resyncs").empty()); // no walk lost its place
  std::vector<std::pair<std::string, uint64_t>> areas;
  for (const HeapArea &a : w.result.areas)
    areas.emplace_back(a.kind, a.start);
  CHECK(areas == std::vector<std::pair<std::string, uint64_t>>{{"soh", eph + 0x1000},
                                                               {"soh", gen2 + 0x1000},
                                                               {"loh", loh1 + 0x1000},
                                                               {"loh", loh2 + 0x1000},
                                                               {"loh", loh3 + 0x1000}});
  std::map<uint64_t, std::string> kinds; // used array -> heap_kind
  for (const Allocation &a : w.allocations)
    if (a.state == AllocState::Used)
      kinds[a.address] = a.managed->heap_kind;
  std::map<uint64_t, std::string> expected;
  for (uint64_t a : soh_arrays)
    expected[a] = "soh";
  for (uint64_t a : loh_arrays)
    expected[a] = "loh";
  CHECK(kinds == expected); // nothing past the ephemeral segment's `allocated`
  CHECK(w.fact("coreclr_objects_walked") == std::to_string(expected.size() + loh_arrays.size()));
}

TEST_CASE("coreclr walker takes the free MethodTable from a contract descriptor") {
  // The free MethodTable here has a parent pointer, so only the descriptor can name it.
  FakeProcess p;
  putMethodTables(p, /*free_parent=*/0x1234);
  putLooseHeap(p);
  constexpr uint64_t lib = 0x7f0000000000;
  p.addRegion(lib, 0x2000, "/usr/share/dotnet/shared/Microsoft.NETCore.App/9.0.0/libcoreclr.so");
  const std::string json = R"({"version":0,"baseline":"empty",)"
                           R"("types":{"MethodTable":{"!":64,"ParentMethodTable":16}},)"
                           R"("globals":{"FreeObjectMethodTable":[[0],"pointer"]}})";
  constexpr uint64_t desc = lib + 0x100, json_at = lib + 0x400, pointers = lib + 0x300;
  constexpr uint64_t variable = lib + 0x380; // g_pFreeObjectMethodTable
  p.putBytes(desc, std::string("DNCCDAC\0", 8));
  p.put32(desc + 8, 1);
  p.put32(desc + 12, static_cast<uint32_t>(json.size()));
  p.put64(desc + 16, json_at);
  p.put32(desc + 24, 1);
  p.put64(desc + 32, pointers);
  p.put64(pointers, variable);
  p.put64(variable, kFreeMT);
  p.putBytes(json_at, json);
  Walked w = walk("coreclr", p.snapshot());
  REQUIRE(w.error.empty());
  CHECK(w.fact("coreclr_contract_descriptor") == "used (0x7f0000000100)");
  CHECK(w.fact("coreclr_free_method_table") == "0x10500");
  int free_objects = 0, arrays = 0;
  for (const Allocation &a : w.allocations)
    (a.state == AllocState::Free ? free_objects : arrays) += 1;
  CHECK(free_objects == 2);
  CHECK(arrays == 2);
}

TEST_CASE("coreclr walker fails when there is no object at all") {
  FakeProcess p;
  p.addRegion(kHeap, 0x10000);
  p.put64(kHeap + 64, 0xdeadbeef);
  Walked w = walk("coreclr", p.snapshot());
  CHECK(w.error.find("no CoreCLR GC heap object") != std::string::npos);
}

/// A GC handle table segment at `at` (64 KiB) after handletablepriv.h, for `types` handle types
/// (HANDLE_MAX_INTERNAL_TYPES): the packed header (rgGeneration[480], rgAllocation[120] at +480,
/// rgFreeMask[240] at +600, rgBlockType[120] at +1560, rgUserData and rgLocks, rgTail[T],
/// rgHint[T], rgFreeCount[T], then pNextSegment, pHandleTable, flags, bFreeList, bEmptyLine,
/// bCommitLine), blocks of 64 slots from +4096. `blocks` gives each used block's type and its
/// slots in use with their objects; every other block is free (type 0xFF).
struct HandleBlock {
  uint8_t type;
  std::map<unsigned, uint64_t> slots; // slot index -> object (0: in use, empty)
};
void putHandleSegment(FakeProcess &p, uint64_t at, unsigned types, uint64_t table,
                      const std::vector<HandleBlock> &blocks) {
  p.addRegion(at, 0x10000);
  for (unsigned b = 0; b < 120; ++b) {
    p.put8(at + 480 + b, 0xFF);  // rgAllocation: no chain
    p.put8(at + 1560 + b, 0xFF); // rgBlockType: free
    p.put32(at + 600 + 8 * b, 0xFFFFFFFF), p.put32(at + 604 + 8 * b, 0xFFFFFFFF);
  }
  const uint64_t links = 1920 + 6 * uint64_t(types);
  p.put64(links + at, 0); // pNextSegment
  p.put64(links + at + 8, table);
  p.put8(at + links + 16 + 3, static_cast<uint8_t>(blocks.size())); // bCommitLine
  for (unsigned b = 0; b < blocks.size(); ++b) {
    p.put8(at + 1560 + b, blocks[b].type);
    uint64_t free_mask = ~uint64_t(0);
    for (auto [slot, object] : blocks[b].slots) {
      free_mask &= ~(uint64_t(1) << slot);
      p.put64(at + 4096 + 512 * b + 8 * slot, object);
    }
    p.put32(at + 600 + 8 * b, uint32_t(free_mask)), p.put32(at + 604 + 8 * b, free_mask >> 32);
  }
}

TEST_CASE("coreclr walker finds the GC handle table by its shape: strong slots holding objects, "
          "weak ones, decoys") {
  const unsigned types = GENERATE(12u, 13u); // .NET Core 2.0 to .NET 8; .NET 9 on
  INFO(types << " handle types");
  FakeProcess p;
  putMethodTables(p);
  // One LOH segment holding two byte[].
  constexpr uint64_t seg = 0x400000, mem = seg + 0x1000;
  p.addRegion(seg, 0x40000);
  const uint64_t second = putArray(p, mem, kByteArrayMT, 100000, 1);
  const uint64_t end = putArray(p, second, kByteArrayMT, 90000, 1);
  putSegment(p, seg, mem, end, seg + 0x40000, 8, 0);
  constexpr uint64_t table = 0x800000;
  p.addRegion(table, 0x1000);
  // The handle table: a pinned block holding both arrays (a third slot in use but empty: a
  // handle cache's), a weak long block holding the first, a strong block holding the second.
  constexpr uint64_t handles = 0x900000;
  putHandleSegment(p, handles, types, table,
                   {{3, {{0, mem}, {1, second}, {2, 0}}}, {1, {{0, mem}}}, {2, {{5, second}}}});
  // Decoys of the same shape: one whose slots hold no GC heap object, one with a block type past
  // the last.
  putHandleSegment(p, 0xA00000, types, table, {{2, {{0, table}, {1, table + 8}}}});
  putHandleSegment(p, 0xB00000, types, table, {{2, {{0, mem}}}, {0x40, {}}});

  Walked w = walk("coreclr", p.snapshot());
  REQUIRE(w.error.empty());
  CHECK(w.fact("coreclr_handle_segments") == "1");
  CHECK(w.fact("coreclr_handles") ==
        "3 strong, 1 weak (" + std::to_string(types) + " handle types)");
  CHECK(w.result.held_through_handles);
  REQUIRE(w.result.handles.size() == 2);
  CHECK(w.result.handles[0].start == handles + 4096); // pinned slots 0 and 1
  CHECK(w.result.handles[0].size == 16);
  CHECK(w.result.handles[1].start == handles + 4096 + 2 * 512 + 5 * 8);
  CHECK(w.result.handles[1].size == 8);
}

TEST_CASE("coreclr walker without a handle table claims no handles") {
  FakeProcess p;
  putMethodTables(p);
  putLooseHeap(p);
  Walked w = walk("coreclr", p.snapshot());
  REQUIRE(w.error.empty());
  CHECK(w.fact("coreclr_handle_segments") == "0");
  CHECK(!w.result.held_through_handles);
  CHECK(w.result.handles.empty());
}

// --- Mono ------------------------------------------------------------------------------------

constexpr uint64_t kMonoTypes = 0x10000;
constexpr uint64_t kVTable = kMonoTypes; // test::putMonoByteArrayTypes's byte[] vtable

void putMonoTypes(FakeProcess &p) {
  test::putMonoByteArrayTypes(p, kMonoTypes);
}

void putLosArray(FakeProcess &p, uint64_t header, uint64_t next, uint32_t length) {
  test::putMonoLosArray(p, header, next, length, kVTable);
}

TEST_CASE("mono walker reads LOS sections, own mappings, the free-chunk map and the list") {
  FakeProcess p;
  putMonoTypes(p);
  constexpr uint64_t section = 0x40000000;
  p.addRegion(section, 1 << 20);
  p.put64(section + 16, section + 24); // free_chunk_map
  constexpr uint64_t live = section + 4096 + 0x88, dead = section + 41 * 4096 + 0x40;
  constexpr uint64_t huge = 0x50000000 + 0x238;
  putLosArray(p, live, 0, 100000);
  putLosArray(p, dead, live, 100000); // freed: its chunks are marked free, nothing links to it
  for (int c = 41; c < 66; ++c)
    p.put8(section + 24 + c, 1);
  p.put64(section + 8, 25);
  p.addRegion(0x50000000, 0x112000);
  putLosArray(p, huge, live, 1100000);
  p.addRegion(0x60000000, 0x1000, "/usr/bin/mono-sgen"); // sgen_los_object_list lives here
  p.put64(0x60000000 + 0x200, huge);
  Walked w = walk("mono", p.snapshot());
  REQUIRE(w.error.empty());
  CHECK(w.fact("mono_los_list_head") == "0x50000238");
  REQUIRE(w.allocations.size() == 3);
  std::map<uint64_t, const Allocation *> by_address;
  for (const Allocation &a : w.allocations)
    by_address[a.address] = &a;
  const Allocation *l = by_address[live + 24], *d = by_address[dead + 24],
                   *h = by_address[huge + 24];
  REQUIRE((l && d && h));
  CHECK(l->state == AllocState::Used);
  CHECK(l->size == 100032);
  CHECK(l->chunk_address == live);
  CHECK(l->chunk_size == 24 + 100032);
  CHECK(l->data_offset == 32);
  CHECK(l->arena == section);
  CHECK(l->managed->type_name == "byte[]");
  CHECK(l->managed->method_table == kVTable);
  CHECK(l->managed->heap_kind == "los");
  CHECK(d->state == AllocState::Free);
  CHECK(h->state == AllocState::Used);
  CHECK(h->mmapped);
  CHECK(h->managed->length == 1100000);
}

TEST_CASE("mono walker rejects a header whose size disagrees with the array length") {
  FakeProcess p;
  putMonoTypes(p);
  constexpr uint64_t section = 0x40000000;
  p.addRegion(section, 1 << 20);
  p.put64(section + 16, section + 24);
  putLosArray(p, section + 4096, 0, 100000);
  p.put64(section + 4096 + 8, 100000 + 32 + 64); // wrong size for the length
  Walked w = walk("mono", p.snapshot());
  CHECK(w.error.find("no Mono SGen large-object-space object") != std::string::npos);
}

/// The mono walker's result over a snapshot, with the memory its object finder reads (which
/// walk() does not keep).
struct MonoWalk {
  explicit MonoWalk(const Snapshot &snapshot) : memory(snapshot) {
    auto r = walkerNamed("mono").walk(
        memory, [](const Allocation &) {}, diags);
    if (r)
      result = std::move(*r);
    else
      error = llvm::toString(r.takeError());
  }
  AddressSpace memory;
  Diagnostics diags;
  HeapWalkResult result;
  std::string error;
};

/// A class "Test.Holder" {byte[] _buf @16; int _n @24} with its vtable, written from the layout of
/// Mono 6.8 (docs/heap-managed.md): MonoClass {class_kind @27, instance_size @28, parent @40,
/// image @56, name @64, name_space @72, fields @144, byval {data @176, type @186}, field_count
/// @240}, MonoClassField {type, name, parent, offset} of 32 bytes, MonoType {attrs @8, type @10}.
/// Returns the vtable.
uint64_t putMonoHolderClass(FakeProcess &p, uint64_t at) {
  const uint64_t klass = at, vtable = at + 0x300, fields = at + 0x400, types = at + 0x600,
                 names = at + 0x800;
  p.addRegion(at, 0x1000);
  p.put8(klass + 27, 1), p.put32(klass + 28, 32), p.put64(klass + 56, at + 0xF00);
  p.put64(klass + 64, names), p.put64(klass + 72, names + 0x10);
  p.put64(klass + 144, fields), p.put64(klass + 176, klass), p.put8(klass + 186, 0x12);
  p.put32(klass + 240, 2);
  p.put64(vtable, klass);
  p.put64(fields, types), p.put64(fields + 8, names + 0x20), p.put64(fields + 16, klass);
  p.put32(fields + 24, 16);
  p.put64(fields + 32, types + 0x10), p.put64(fields + 40, names + 0x30);
  p.put64(fields + 48, klass), p.put32(fields + 56, 24);
  p.put8(types + 10, 0x1d), p.put8(types + 0x10 + 10, 0x08);
  p.putBytes(names, llvm::StringRef("Holder\0", 7));
  p.putBytes(names + 0x10, llvm::StringRef("Test\0", 5));
  p.putBytes(names + 0x20, llvm::StringRef("_buf\0", 5));
  p.putBytes(names + 0x30, llvm::StringRef("_n\0", 3));
  return vtable;
}

TEST_CASE("mono walker finds the major heap's blocks and names a holder by its class and "
          "field") {
  FakeProcess p;
  putMonoTypes(p);
  const uint64_t holder_vtable = putMonoHolderClass(p, 0x20000);
  // A 16 KiB block of 32-byte objects (MSBlockInfo {obj_size u16, obj_size_index u16, state
  // i32, nused i16 @8, free_list @16, next_free @24}; objects from 0x130): one object, then a free
  // slot on the free list.
  constexpr uint64_t block = 0x30000000, object = block + 0x130, buffer = 0x40000000 + 4096;
  p.addRegion(block, 16384);
  p.put16(block, 32), p.put16(block + 2, 1), p.put16(block + 8, 1);
  p.put64(block + 16, object + 32);
  p.put64(object, holder_vtable), p.put64(object + 16, buffer + 24), p.put32(object + 24, 7);
  // The LOS array it holds.
  p.addRegion(0x40000000, 1 << 20);
  p.put64(0x40000000 + 16, 0x40000000 + 24);
  putLosArray(p, buffer, 0, 100000);
  // A superblock of the runtime's lock-free allocator (its Descriptor elsewhere: slot_size @0x14,
  // block_size @0x18, max_count @0x1c, sb @0x20), SGen's records.
  constexpr uint64_t superblock = 0x31000000, descriptor = 0x31002000;
  p.addRegion(superblock, 0x3000);
  p.put64(superblock, descriptor), p.put64(superblock + 16, object);
  p.put32(descriptor + 0x14, 64), p.put32(descriptor + 0x18, 4096);
  p.put32(descriptor + 0x1c, (4096 - 16) / 64), p.put64(descriptor + 0x20, superblock + 16);
  // The runtime's data: a word at the object (bookkeeping) and a GC handle list of one bucket
  // (32 bucket pointers, u32 capacity, u32 slot_hint, u32 max_index).
  constexpr uint64_t data = 0x60000000, bucket = 0x32000000;
  p.addRegion(data, 0x1000, "/usr/bin/mono-sgen");
  p.put64(data + 0x80, object);
  p.put64(data + 0x200, bucket), p.put32(data + 0x200 + 256, 32), p.put32(data + 0x200 + 264, 1);
  p.addRegion(bucket, 0x1000);
  p.put64(bucket + 8, object | 3);
  // The pin queue (SgenPointerQueue {data, size, next_slot, mem_type}), mapped apart: 2,048
  // entries, listing the pinned object.
  constexpr uint64_t pin_queue = 0x33000000;
  p.put64(data + 0x400, pin_queue), p.put64(data + 0x408, 2048);
  p.addRegion(pin_queue, 16384);
  p.put64(pin_queue, object);

  const MonoWalk walked(p.snapshot());
  REQUIRE(walked.error.empty());
  const HeapWalkResult &r = walked.result;
  auto fact = [&](llvm::StringRef key) {
    for (const auto &[k, v] : r.facts)
      if (k == key)
        return v;
    return std::string();
  };
  CHECK(fact("mono_major_blocks") == "1");
  CHECK(fact("mono_major_objects") == "1");
  bool area = false;
  for (const HeapArea &a : r.areas)
    area |= a.kind == "major-blocks" && a.start == block && a.size == 16384;
  CHECK(area);
  std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> records;
  for (const HeapArea &a : r.bookkeeping)
    records[a.kind].push_back({a.start, a.size});
  CHECK(records["mono-internal"] ==
        std::vector<std::pair<uint64_t, uint64_t>>{{superblock, 4096}, {pin_queue, 16384}});
  CHECK(records["mono-runtime-data"] ==
        std::vector<std::pair<uint64_t, uint64_t>>{{data + 0x80, 8}});
  REQUIRE(r.handles.size() == 1);
  CHECK(r.handles[0].kind == "gc-handle");
  CHECK(r.handles[0].start == bucket);
  CHECK(r.handles[0].size == 256);

  REQUIRE(r.objects);
  ObjectFinder &finder = *r.objects;
  const std::optional<HeldIn> buf = finder.objectHolding(object + 16);
  REQUIRE(buf);
  CHECK(buf->object == object);
  CHECK(buf->size == 32);
  CHECK(buf->type == "Test.Holder");
  CHECK(buf->field == "_buf");
  CHECK(buf->reference);
  const std::optional<HeldIn> count = finder.objectHolding(object + 24);
  REQUIRE(count);
  CHECK(count->field == "_n");
  CHECK_FALSE(count->reference);
  const std::optional<HeldIn> header = finder.objectHolding(object + 8);
  REQUIRE(header);
  CHECK_FALSE(header->reference);
  CHECK_FALSE(finder.objectHolding(object + 32 + 8)); // the free slot
  CHECK_FALSE(finder.objectHolding(block + 8));       // the block's header
  std::vector<std::tuple<uint64_t, uint64_t, bool>> objects;
  finder.eachObject([&](uint64_t start, uint64_t size, bool references) {
    objects.emplace_back(start, size, references);
  });
  CHECK(objects == std::vector<std::tuple<uint64_t, uint64_t, bool>>{{object, 32, true}});
}

TEST_CASE("mono object finder: a class that is its own parent and claims 4 billion fields costs "
          "a bounded read") {
  FakeProcess p;
  putMonoTypes(p);
  const uint64_t holder_vtable = putMonoHolderClass(p, 0x20000);
  p.put64(0x20000 + 40, 0x20000); // its own parent
  p.put32(0x20000 + 240, ~0u);    // field_count
  constexpr uint64_t block = 0x30000000, object = block + 0x130;
  p.addRegion(block, 16384);
  p.put16(block, 32), p.put16(block + 8, 1);
  p.put64(object, holder_vtable);
  p.addRegion(0x60000000, 0x1000, "/usr/bin/mono-sgen");
  const MonoWalk walked(p.snapshot());
  REQUIRE(walked.error.empty());
  REQUIRE(walked.result.objects);
  const std::optional<HeldIn> in = walked.result.objects->objectHolding(object + 16);
  REQUIRE(in);
  CHECK(in->type == "Test.Holder");
  CHECK(in->field.empty()); // its fields are not read
  CHECK(in->reference);     // so the word may be a reference
}

} // namespace
