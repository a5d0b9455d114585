// The netfx walker (.NET Framework: clr.dll 4.x, mscorwks.dll 2.0-3.5) and both CLR walkers on
// 32-bit processes, on hand-laid Windows heaps: no .NET Framework runs here, so the objects,
// MethodTables and heap_segment records are written field by field from the layouts in
// docs/heap-managed.md (tests/support/synthetic_heaps.h), not from the walker's own tables.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "support/heap_walk.h"
#include "support/synthetic_heaps.h"

#include <catch2/catch.hpp>
#include <map>

using namespace dumpsift;
using dumpsift::test::walkerNamed;

namespace {

/// A Windows process over hand-laid regions, each captured whole (zeros past the bytes written);
/// the runtime's module is an image region of its own.
class WindowsProcess : public test::FakeMemory {
public:
  WindowsProcess(unsigned pointer_size, std::string runtime)
      : pointer_size_(pointer_size), runtime_(std::move(runtime)) {}

  /// The snapshot over the regions as they are now (bytes are not copied).
  const Snapshot &snapshot() {
    snap_ = Snapshot();
    snap_.format = DumpFormat::Minidump;
    snap_.system.os = Os::Windows;
    snap_.system.arch = pointer_size_ == 8 ? "x86_64" : "x86";
    snap_.system.pointer_size = pointer_size_;
    for (auto &[start, region] : regions()) {
      region.bytes.resize(region.size);
      Region r;
      r.start = start;
      r.size = r.captured = region.size;
      r.perms.read = r.perms.write = true;
      r.cls = RegionClass::Anonymous;
      r.class_source = RegionSource::MemoryInfo;
      snap_.regions.push_back(r);
      snap_.memory.push_back({start, llvm::ArrayRef<uint8_t>(region.bytes)});
    }
    // The runtime's image, above every heap: MEM_IMAGE, not scanned.
    Region image;
    image.start = 0x70000000;
    image.size = 0x10000;
    image.cls = RegionClass::Image;
    image.backing_file = runtime_;
    snap_.regions.push_back(image);
    snap_.modules.push_back({runtime_, image.start, image.end(), ""});
    return snap_;
  }

private:
  unsigned pointer_size_;
  std::string runtime_;
  Snapshot snap_;
};

struct Walked {
  std::map<uint64_t, Allocation> allocations; // by address
  HeapWalkResult result;
  Diagnostics diags;
  std::string error;
  bool detected = false;
  std::string fact(const std::string &key) const {
    for (const auto &[k, v] : result.facts)
      if (k == key)
        return v;
    return "";
  }
  const Allocation &at(uint64_t address) const {
    auto it = allocations.find(address);
    REQUIRE(it != allocations.end());
    return it->second;
  }
};

Walked walk(const char *name, const Snapshot &snap) {
  AddressSpace memory(snap);
  Walked w;
  w.detected = walkerNamed(name).detect(memory);
  auto r = walkerNamed(name).walk(
      memory, [&](const Allocation &a) { w.allocations[a.address] = a; }, w.diags);
  if (r)
    w.result = std::move(*r);
  else
    w.error = llvm::toString(r.takeError());
  return w;
}

constexpr uint64_t kTypes = 0x10000;
constexpr uint64_t kLoh = 0x02000000, kSoh = 0x03000000;
constexpr const char *kClr4 = "C:\\Windows\\Microsoft.NET\\Framework64\\v4.0.30319\\clr.dll";
constexpr const char *kClr2 = "C:\\Windows\\Microsoft.NET\\Framework\\v2.0.50727\\mscorwks.dll";

/// What one heap holds, for the checks.
struct Planted {
  uint64_t big, big2, small, tiny, ints, objects;
};

/// A LOH segment (its record one page before its objects: a free pad, byte[131072], a pad,
/// byte[90001]) and a SOH segment (byte[5], byte[3], int[2], object[4], byte[100]) with `t`'s
/// layout; objects on the SOH are pointer-aligned, on the LOH 8-aligned.
Planted putSegments(test::FakeMemory &m, const test::ClrTypes &t) {
  const unsigned ptr = t.ptr;
  Planted p{};
  m.addRegion(kLoh, 0x80000);
  uint64_t a = kLoh + 0x1000;
  a = test::putClrArray(m, t, a, t.free_object, 8, 1, 8);
  p.big = a;
  a = test::putClrArray(m, t, a, t.byte_array, 131072, 1, 8);
  a = test::putClrArray(m, t, a, t.free_object, 8, 1, 8);
  p.big2 = a;
  a = test::putClrArray(m, t, a, t.byte_array, 90001, 1, 8);
  test::putClrSegment(m, kLoh, ptr, kLoh + 0x1000, a, kLoh + 0x80000, 8);

  m.addRegion(kSoh, 0x4000);
  uint64_t s = kSoh + 0x1000;
  p.tiny = s;
  s = test::putClrArray(m, t, s, t.byte_array, 5, 1, ptr);
  s = test::putClrArray(m, t, s, t.byte_array, 3, 1, ptr);
  p.ints = s;
  s = test::putClrArray(m, t, s, t.int_array, 2, 4, ptr);
  p.objects = s;
  s = test::putClrArray(m, t, s, t.object_array, 4, ptr, ptr);
  p.small = s;
  s = test::putClrArray(m, t, s, t.byte_array, 100, 1, ptr);
  test::putClrSegment(m, kSoh, ptr, kSoh + 0x1000, s, kSoh + 0x4000, 0);
  return p;
}

/// The checks every layout shares: each planted array at its address with its object size, data
/// offset, length, element size, heap and name.
void checkPlanted(const Walked &w, const test::ClrTypes &t, const Planted &p) {
  const unsigned ptr = t.ptr;
  auto check = [&](uint64_t address, uint32_t length, uint32_t elem, const char *heap,
                   const char *type, uint32_t base) {
    INFO("array at 0x" << std::hex << address);
    const Allocation &a = w.at(address);
    CHECK(a.state == AllocState::Used);
    CHECK(a.size == base + uint64_t(length) * elem);
    CHECK(a.data_offset == base - ptr);
    REQUIRE(a.managed);
    CHECK(a.managed->length == length);
    CHECK(a.managed->element_size == elem);
    CHECK(a.managed->heap_kind == heap);
    CHECK(a.managed->large_object_heap == (std::string(heap) == "loh"));
    CHECK(a.managed->type_name == type);
  };
  check(p.big, 131072, 1, "loh", "byte[]", t.array_base);
  check(p.big2, 90001, 1, "loh", "byte[]", t.array_base);
  check(p.tiny, 5, 1, "soh", "byte[]", t.array_base);
  check(p.ints, 2, 4, "soh", "", t.array_base);
  check(p.objects, 4, ptr, "soh", "", t.object_base);
  check(p.small, 100, 1, "soh", "byte[]", t.array_base);
  // Sizes round up to the pointer size on the SOH and to 8 on the LOH.
  CHECK(w.at(p.big2).chunk_size == ((t.array_base + 90001 + 7) & ~uint64_t(7)));
  CHECK(w.at(p.tiny).chunk_size == ((t.array_base + 5 + ptr - 1) & ~uint64_t(ptr - 1)));
  // The LOH pads are free objects.
  CHECK(w.at(kLoh + 0x1000).state == AllocState::Free);
  CHECK(w.result.stats.used_count == 7);
  CHECK(w.result.stats.free_count == 2);
}

} // namespace

TEST_CASE("netfx walker: .NET Framework 4.x (clr.dll) heaps, 64-bit and 32-bit") {
  for (unsigned ptr : {8u, 4u}) {
    INFO("pointer size " << ptr);
    WindowsProcess process(ptr, kClr4);
    test::ClrTypes t = test::putClrTypes(process, kTypes, 4, ptr);
    Planted p = putSegments(process, t);
    const Snapshot &snap = process.snapshot();
    Walked w = walk("netfx", snap);
    INFO(w.error);
    CHECK(w.detected);
    REQUIRE(w.error.empty());
    CHECK(w.fact("netfx_runtime") == "clr.dll (.NET Framework 4.x)");
    CHECK(w.fact("netfx_object_layout") == (ptr == 8 ? "clr4-x64" : "clr4-x86"));
    CHECK(w.fact("netfx_discovery") == "heap_segment records");
    CHECK(w.fact("netfx_segments") == "2");
    checkPlanted(w, t, p);
    // A .NET Framework process is not a CoreCLR one.
    CHECK_FALSE(walkerNamed("coreclr").detect(AddressSpace(snap)));
  }
}

TEST_CASE("netfx walker: .NET Framework 2.0-3.5 (mscorwks.dll) heaps, 64-bit and 32-bit") {
  // CLR 2's flags: no has-component-size bit (a non-zero low word is the element size), array
  // bit 0x10000, mscorlib's bits set too; object[] holds its element type (base size 4P). No
  // published source gives CLR 2's heap_segment: these heaps have no record, so the walker
  // scans objects and decides the LOH by size.
  for (unsigned ptr : {8u, 4u}) {
    INFO("pointer size " << ptr);
    WindowsProcess process(ptr, kClr2);
    test::ClrTypes t = test::putClrTypes(process, kTypes, 2, ptr);
    Planted p = putSegments(process, t);
    for (uint64_t record : {kLoh, kSoh}) // erase the records
      for (unsigned i = 0; i < 6; ++i)
        test::putPointer(process, record + i * ptr, 0, ptr);
    Walked w = walk("netfx", process.snapshot());
    INFO(w.error);
    CHECK(w.detected);
    REQUIRE(w.error.empty());
    CHECK(w.fact("netfx_runtime") == "mscorwks.dll (.NET Framework 2.0-3.5)");
    CHECK(w.fact("netfx_object_layout") == (ptr == 8 ? "clr2-x64" : "clr2-x86"));
    CHECK(w.fact("netfx_discovery") == "object scan (no heap_segment found)");
    for (uint64_t address : {p.big, p.big2, p.tiny, p.ints, p.objects, p.small}) {
      INFO("array at 0x" << std::hex << address);
      const Allocation &a = w.at(address);
      REQUIRE(a.managed);
      CHECK(a.managed->heap_kind.empty()); // no segment says which heap
      CHECK(a.managed->large_object_heap == (a.size >= 85000));
    }
    CHECK(w.at(p.big).size == t.array_base + 131072);
    CHECK(w.at(p.big).managed->type_name == "byte[]");
    CHECK(w.at(p.objects).data_offset == 3 * ptr);
    CHECK(w.at(p.objects).size == t.object_base + 4 * ptr);
    CHECK(w.at(p.ints).managed->element_size == 4);
  }
}

TEST_CASE("coreclr walker: a 32-bit process (coreclr.dll, x86)") {
  WindowsProcess process(4, "C:\\app\\coreclr.dll");
  test::ClrTypes t = test::putClrTypes(process, kTypes, 4, 4);
  Planted p = putSegments(process, t);
  const Snapshot &snap = process.snapshot();
  Walked w = walk("coreclr", snap);
  INFO(w.error);
  CHECK(w.detected);
  REQUIRE(w.error.empty());
  CHECK(w.fact("coreclr_object_layout") == "clr4-x86");
  CHECK(w.fact("coreclr_contract_descriptor") == "not read (32-bit process)");
  checkPlanted(w, t, p);
  CHECK_FALSE(walkerNamed("netfx").detect(AddressSpace(snap)));
}

TEST_CASE("netfx walker: hostile 32-bit heaps give bounded work and warnings") {
  WindowsProcess process(4, kClr4);
  test::ClrTypes t = test::putClrTypes(process, kTypes, 4, 4);
  process.addRegion(kSoh, 0x2000);
  // A byte[8], then an int[] whose length runs past 2^32 bytes, a MethodTable that is its own
  // parent, zeros, and two valid arrays after them.
  const uint64_t first = kSoh + 0x1000;
  uint64_t a = test::putClrArray(process, t, first, t.byte_array, 8, 1, 4);
  test::putPointer(process, a, t.int_array, 4);
  process.put32(a + 4, 0xffffffff);
  const uint64_t loop_mt = kTypes + 0x700;
  process.put32(loop_mt + 4, 12), test::putPointer(process, loop_mt + 0x10, loop_mt, 4);
  test::putPointer(process, a + 12, loop_mt, 4);
  const uint64_t good = a + 0x40;
  uint64_t end = test::putClrArray(process, t, good, t.byte_array, 64, 1, 4);
  end = test::putClrArray(process, t, end, t.byte_array, 16, 1, 4);
  test::putClrSegment(process, kSoh, 4, first, end, kSoh + 0x2000, 0);
  Walked w = walk("netfx", process.snapshot());
  INFO(w.error);
  REQUIRE(w.error.empty());
  CHECK(w.allocations.size() == 3);
  CHECK(w.at(first).managed->length == 8);
  CHECK(w.at(good).managed->length == 64);
  CHECK(w.fact("netfx_resyncs") == "1");
  CHECK_FALSE(w.diags.empty());
}
