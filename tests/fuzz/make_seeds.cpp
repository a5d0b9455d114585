// Makes walker seeds for the fuzz corpus: reads a real dump and writes the part of it a heap walker
// needs as a fuzz process (fuzz_targets.h). Used by fixtures/make_corpus.sh.
//
//   dumpsift_fuzz_seeds glibc|managed|ntheap DUMP OUT [MAX_BYTES_PER_REGION] [MAX_TOTAL_BYTES]
//   dumpsift_fuzz_seeds synthetic OUT_DIR
//   dumpsift_fuzz_seeds synthetic-jemalloc OUT_DIR
//   dumpsift_fuzz_seeds synthetic-mimalloc OUT_DIR
//   dumpsift_fuzz_seeds synthetic-musl OUT_DIR
//   dumpsift_fuzz_seeds synthetic-tcmalloc OUT_DIR
//   dumpsift_fuzz_seeds go OUT_DIR
//   dumpsift_fuzz_seeds synthetic-ntheap OUT_DIR
//
// glibc keeps the regions the glibc walker reports heaps in, plus libc's and the executable's
// writable regions (where main_arena lives); managed keeps the coreclr/mono walkers' areas plus
// the runtime modules' regions; ntheap keeps the NT heap walker's segments (a Windows dump). Each
// region's bytes are cut to MAX_BYTES_PER_REGION (default 64 KiB); regions are kept in address
// order until MAX_TOTAL_BYTES (default 512 KiB) is reached. synthetic writes small hand-laid
// managed heaps (coreclr_loose.proc, coreclr_segment.proc, mono_los.proc, hotspot_g1.proc) after
// the layouts documented in docs/heap-managed.md and docs/heap-hotspot.md, the shapes
// tests/managed/managed_synthetic_test.cpp and tests/hotspot/hotspot_synthetic_test.cpp check;
// synthetic-jemalloc the hand-laid jemalloc heap of tests/support/synthetic_jemalloc.h
// (synthetic.proc, synthetic_no_arenas.proc); synthetic-mimalloc the example mimalloc heap of
// tests/heap/mimalloc_synthetic_test.cpp (mimalloc_example.proc); synthetic-musl the hand-laid musl
// heap of tests/heap/musl_synthetic_test.cpp (musl_heap.proc, its data page named as the
// executable); synthetic-tcmalloc the hand-laid tcmalloc heap of tests/support/synthetic_tcmalloc.h
// (tcmalloc_heap.proc), the shape tests/heap/tcmalloc_synthetic_test.cpp checks; go writes
// hand-laid Go heaps (go_1.19.proc, go_1.22.proc) after docs/heap-go.md, the shapes
// tests/heap/go_synthetic_test.cpp checks; synthetic-ntheap an x64 Windows 8-11 and an x86 Windows
// 7 NT heap (x64_win8.proc, x86_win7.proc) after docs/heap-windows.md.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "fuzz/fuzz_targets.h"
#include "support/synthetic_heaps.h"
#include "support/synthetic_jemalloc.h"
#include "support/synthetic_mimalloc.h"
#include "support/synthetic_tcmalloc.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

using namespace dumpsift;

namespace {

/// True when `path` names a file whose writable regions a walker of `mode` reads directly.
bool runtimeFile(const std::string &mode, llvm::StringRef path) {
  llvm::StringRef base = path.rsplit('/').second;
  if (mode == "glibc")
    return base.startswith("libc.so") || base.startswith("libc-");
  return base == "libcoreclr.so" || base.startswith("libmonosgen") || base == "mono-sgen" ||
         base == "mono";
}

uint64_t walkAll(const std::string &mode, const AddressSpace &memory, std::vector<HeapArea> *areas,
                 std::vector<uint64_t> *type_words, bool force);

/// A fuzz process written by hand (the encoding of fuzz_targets.h): regions captured up to their
/// last written byte, in the order they were first added.
class SeedBuilder : public test::FakeMemory {
public:
  /// Maps [start, start+size); `file` indexes fuzzProcessFiles(); a file-backed region is an
  /// image and a module.
  void region(uint64_t start, uint32_t size, uint8_t file = 0) {
    addRegion(start, size);
    files_[start] = file;
  }
  /// Adds an auxiliary vector entry besides AT_PAGESZ (AT_ENTRY = 9 tells the executable).
  void auxv(uint64_t type, uint64_t value) { auxv_.emplace_back(type, value); }
  /// Names the file (an index into fuzzProcessFiles()) behind the region at `start`.
  void nameFile(uint64_t start, uint8_t file) { files_[start] = file; }

  /// The fuzz process's flags byte (fuzz_targets.h: bit 0 32-bit, bit 1 Windows).
  void flags(uint8_t value) { flags_ = value; }

  std::string encode() const {
    test::ByteWriter out;
    out.u8(flags_).u8(fuzz::kAuxvRecord);
    out.u64(6).u64(4096); // AT_PAGESZ
    for (const auto &[type, value] : auxv_)
      out.u8(fuzz::kAuxvRecord).u64(type).u64(value);
    for (uint64_t start : addedOrder()) {
      const Block &r = regions().at(start);
      auto it = files_.find(start);
      const uint8_t file = it == files_.end() ? 0 : it->second;
      const unsigned cls = file ? unsigned(RegionClass::Image) : unsigned(RegionClass::Anonymous);
      out.u8(uint8_t(file | (cls << 3) | 0x40 | (file ? 0x80 : 0)));
      out.u64(start).u32(uint32_t(r.size)).u32(uint32_t(r.bytes.size())).raw(r.bytes);
    }
    return std::string(out.bytes.begin(), out.bytes.end());
  }

private:
  uint8_t flags_ = 0;
  std::map<uint64_t, uint8_t> files_; // file index by region start (none: 0)
  std::vector<std::pair<uint64_t, uint64_t>> auxv_;
};

int writeSeeds(const std::string &dir, const std::string &mode,
               const std::vector<std::pair<std::string, std::string>> &seeds);

/// Writes the synthetic jemalloc seeds into `dir`: the heap of tests/support/synthetic_jemalloc.h
/// with jemalloc linked into the executable, and the same heap without its arenas[] array.
int writeSyntheticJemalloc(const std::string &dir) {
  std::vector<std::pair<std::string, std::string>> seeds;
  for (bool arenas : {true, false}) {
    SeedBuilder b;
    test::putJemallocHeap(b, [&b](uint64_t start, uint64_t size) {
      b.region(start, uint32_t(size), 3); // /opt/app/program
    });
    b.auxv(9, test::JemallocHeap::kEntry); // AT_ENTRY
    if (!arenas)
      b.put64(test::JemallocHeap::kArenas, 0);
    seeds.push_back({arenas ? "synthetic.proc" : "synthetic_no_arenas.proc", b.encode()});
  }
  return writeSeeds(dir, "jemalloc", seeds);
}

/// Writes the synthetic musl seed into `dir`: the hand-laid heap of putMuslHeap, its data page
/// named as the executable, as in a static binary.
int writeMuslSynthetic(const std::string &dir) {
  SeedBuilder b;
  test::putMuslHeap(b);
  b.nameFile(test::MuslHeap::kData, 3);
  return writeSeeds(dir, "musl", {{"musl_heap.proc", b.encode()}});
}

/// Writes the synthetic managed seeds into `dir`.
int writeSynthetic(const std::string &dir) {
  constexpr uint64_t types = 0x10000;
  std::vector<std::pair<std::string, std::string>> seeds;
  {
    // A run of objects without heap_segment records: free, byte[100000], free, int[30000].
    SeedBuilder b;
    const test::CoreClrTypes t = test::putCoreClrTypes(b, types);
    b.region(0x200000, 0x80000);
    uint64_t a = test::putCoreClrArray(b, 0x200000, t.free_object, 8, 1);
    a = test::putCoreClrArray(b, a, t.byte_array, 100000, 1);
    a = test::putCoreClrArray(b, a, t.free_object, 8, 1);
    a = test::putCoreClrArray(b, a, t.int_array, 30000, 4);
    b.put64(a + 8, 0); // captured zeros after the last object
    seeds.push_back({"coreclr_loose.proc", b.encode()});
  }
  {
    // A heap_segment {allocated, committed, reserved, used, mem, flags (8: LOH)} and its objects,
    // beside libcoreclr.so.
    SeedBuilder b;
    const test::CoreClrTypes t = test::putCoreClrTypes(b, types);
    b.region(0x7f0000000000, 0x2000, 4);
    b.put64(0x7f0000000100, 0x400000); // a pointer to the segment in the runtime's data
    constexpr uint64_t seg = 0x400000, mem = seg + 0x1000;
    b.region(seg, 0x40000);
    uint64_t a = test::putCoreClrArray(b, mem, t.byte_array, 100, 1);
    a = test::putCoreClrArray(b, a, t.free_object, 64, 1);
    a += 0x100;
    const uint64_t end = test::putCoreClrArray(b, a, t.byte_array, 500, 1);
    b.put64(end, 0);
    b.put64(seg, end), b.put64(seg + 8, seg + 0x40000), b.put64(seg + 16, seg + 0x100000);
    b.put64(seg + 24, end), b.put64(seg + 32, mem), b.put64(seg + 40, 8);
    seeds.push_back({"coreclr_segment.proc", b.encode()});
  }
  {
    // Mono: byte[]'s vtable and classes; a LOS section (free_chunk_map) with a live and a freed
    // LOSObject, one in its own mapping, and the list head in mono-sgen's data.
    SeedBuilder b;
    const test::MonoTypes t = test::putMonoByteArrayTypes(b, types);
    constexpr uint64_t section = 0x40000000;
    b.region(section, 1 << 20);
    b.put64(section + 16, section + 24);
    constexpr uint64_t live = section + 4096 + 0x88, dead = section + 5 * 4096 + 0x40;
    constexpr uint64_t huge = 0x50000000 + 0x238;
    for (int c = 5; c < 8; ++c) // the freed object's chunks
      b.put8(section + 24 + c, 1);
    b.put64(section + 8, 3);
    test::putMonoLosArray(b, live, 0, 10000, t.vtable);
    test::putMonoLosArray(b, dead, live, 10000, t.vtable);
    b.region(0x50000000, 0x112000);
    test::putMonoLosArray(b, huge, live, 1100000, t.vtable);
    b.region(0x60000000, 0x1000, 6);
    b.put64(0x60000000 + 0x200, huge);
    seeds.push_back({"mono_los.proc", b.encode()});
  }
  {
    // HotSpot: libjvm's vmStructs tables and flags, Klasses, a G1 region table with an old and an
    // eden region and a thread's TLAB (file 7 is libjvm.so).
    SeedBuilder b;
    test::putHotSpotG1Heap(b);
    for (uint64_t start : test::HotSpotBuilder::libjvmRegions())
      b.nameFile(start, 7);
    seeds.push_back({"hotspot_g1.proc", b.encode()});
  }
  return writeSeeds(dir, "managed", seeds);
}

/// Writes the synthetic mimalloc seed into `dir`: the example heap of the synthetic tests.
int writeMimallocSynthetic(const std::string &dir) {
  SeedBuilder b;
  test::putMiExample(b);
  return writeSeeds(dir, "mimalloc", {{"mimalloc_example.proc", b.encode()}});
}

/// Writes each (file name, fuzz process) of `seeds` into `dir` and says how many allocations the
/// walkers of `mode` find in it.
int writeSeeds(const std::string &dir, const std::string &mode,
               const std::vector<std::pair<std::string, std::string>> &seeds) {
  for (const auto &[file, bytes] : seeds) {
    std::ofstream out(dir + "/" + file, std::ios::binary);
    out.write(bytes.data(), bytes.size());
    if (!out) {
      std::cerr << "dumpsift_fuzz_seeds: cannot write " << dir << "/" << file << "\n";
      return 2;
    }
    auto decoded =
        fuzz::decodeFuzzProcess(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
    std::cout << dir << "/" << file << ": " << bytes.size() << " bytes; "
              << walkAll(mode, AddressSpace(*decoded), nullptr, nullptr, true)
              << " allocations found\n";
  }
  return 0;
}

/// Writes the synthetic Go seeds into `dir`: one heap laid out for Go 1.19 and for 1.22, each
/// with a span of small objects swept and one not yet swept, a large object, goroutine stacks, a
/// GC work buffer and a free span (the program's data as file 3 of fuzzProcessFiles()).
int writeGo(const std::string &dir) {
  constexpr uint64_t exe = 0x500000, arena = 0xc000000000, page = test::GoHeap::kPage;
  constexpr uint32_t sweepgen = 10;
  std::vector<std::pair<std::string, std::string>> seeds;
  for (const test::GoRuntimeLayout *layout : {&test::kGo119, &test::kGo122}) {
    SeedBuilder b;
    b.region(exe, 0x1000, 3);
    test::GoHeap heap(b, *layout, exe, sweepgen);
    heap.addArena(arena);
    test::GoSpan small; // 1,152-byte objects: 0-1 below freeindex, 2-4 and 6 by their bits
    small.start = arena;
    small.spanclass = 33 << 1 | 1;
    small.elemsize = 1152;
    small.nelems = 7;
    small.freeindex = 2;
    small.alloc_bits = {0x5c};
    small.sweepgen = sweepgen;
    heap.addSpan(small);
    test::GoSpan unswept = small; // every slot allocated; the last collection marked 0 and 3
    unswept.start = arena + page;
    unswept.freeindex = 7;
    unswept.alloc_bits = {0x7f};
    unswept.mark_bits = {0x09};
    unswept.sweepgen = sweepgen - 2;
    heap.addSpan(unswept);
    test::GoSpan large;
    large.start = arena + 2 * page;
    large.npages = 5;
    large.spanclass = 1;
    large.elemsize = 5 * page;
    large.nelems = large.freeindex = 1;
    large.alloc_bits = {1};
    large.sweepgen = sweepgen;
    heap.addSpan(large);
    test::GoSpan stacks;
    stacks.start = arena + 7 * page;
    stacks.npages = 4;
    stacks.state = 2;
    stacks.elemsize = 8192;
    heap.addSpan(stacks);
    test::GoSpan workbuf = stacks;
    workbuf.start = arena + 11 * page;
    workbuf.elemsize = 0;
    heap.addSpan(workbuf);
    test::GoSpan dead = large;
    dead.start = arena + 15 * page;
    dead.state = 0;
    heap.addSpan(dead);
    seeds.push_back(
        {std::string(layout == &test::kGo119 ? "go_1.19" : "go_1.22") + ".proc", b.encode()});
  }
  return writeSeeds(dir, "go", seeds);
}

/// Writes the synthetic tcmalloc seed into `dir`: the heap of synthetic_tcmalloc.h, its image data
/// in a file-backed region (any file: the walker finds tcmalloc by its data).
int writeTcmallocSynthetic(const std::string &dir) {
  using H = test::TcmallocHeap;
  SeedBuilder b;
  b.region(H::kData, H::kDataSize, 7);
  b.region(H::kMeta, H::kMetaSize);
  b.region(H::kLeaf, H::kLeafSize);
  b.region(H::kHeap, H::kHeapSize);
  test::putTcmallocHeap(b);
  return writeSeeds(dir, "tcmalloc", {{"tcmalloc_heap.proc", b.encode()}});
}

/// Where a hand-laid NT heap's fields lie, as docs/heap-windows.md lists them for one layout.
struct NtSeedLayout {
  bool wide; // x64: 16-byte entries and 8-byte pointers; x86: 8 and 4
  uint32_t segment_signature, segment_list_entry, first_entry, last_valid_entry, ucr_list;
  uint32_t encode_flag_mask, encoding, signature, virtual_allocd_blocks, segment_list;
  uint32_t commit_size, busy_block, ucr_segment_entry, ucr_address, ucr_size;
};

/// Lays an NT heap at `heap` into `b`: one segment whose entries (a used block, a free one, a used
/// one) run to an uncommitted range, every entry encoded with a key, and one large block at
/// `large`; the layout's offsets are spelled out by the caller.
void putNtHeap(SeedBuilder &b, const NtSeedLayout &l, uint64_t heap, uint64_t large) {
  const unsigned ptr = l.wide ? 8 : 4, granule = l.wide ? 16 : 8;
  const uint64_t key = 0x5a3c0000a5c3f00full;
  auto word = [&](uint64_t at, uint64_t v) {
    if (l.wide)
      b.put64(at, v);
    else
      b.put32(at, uint32_t(v));
  };
  auto links = [&](uint64_t at, uint64_t to) { // a one-element list: both links to `to`
    word(at, to);
    word(at + ptr, to);
  };
  auto entry = [&](uint64_t at, uint16_t size, uint8_t flags, uint16_t previous, uint8_t unused) {
    const uint8_t check = uint8_t((size & 0xff) ^ (size >> 8) ^ flags);
    const uint64_t plain = uint64_t(size) | uint64_t(flags) << 16 | uint64_t(check) << 24 |
                           uint64_t(previous) << 32 | uint64_t(unused) << 56;
    b.put64(at + granule - 8, plain ^ key);
  };
  b.region(heap, 0x10000);
  b.region(large, 0x1000);
  const uint64_t first = heap + 0x800, hole = heap + 0x1000, ucr = heap + 0x700;
  b.put32(heap + l.segment_signature, 0xFFEEFFEE);
  b.put32(heap + l.signature, 0xEEFFEEFF);
  b.put32(heap + l.encode_flag_mask, 0x00100000);
  b.put64(heap + l.encoding + granule - 8, key);
  word(heap + l.first_entry, first);
  word(heap + l.last_valid_entry, heap + 0x10000);
  links(heap + l.segment_list, heap + l.segment_list_entry);
  links(heap + l.segment_list_entry, heap + l.segment_list);
  links(heap + l.ucr_list, ucr + l.ucr_segment_entry);
  links(ucr + l.ucr_segment_entry, heap + l.ucr_list);
  word(ucr + l.ucr_address, hole);
  word(ucr + l.ucr_size, heap + 0x10000 - hole);
  const uint16_t sizes[] = {uint16_t(0x400 / granule), uint16_t(0x200 / granule),
                            uint16_t((hole - first - 0x600) / granule)};
  uint64_t at = first;
  uint16_t previous = 0;
  for (size_t i = 0; i < 3; ++i) {
    entry(at, sizes[i], uint8_t((i == 1 ? 0 : 1) | (i == 2 ? 0x10 : 0)), previous,
          i == 1 ? 0 : uint8_t(granule + 0x18));
    previous = sizes[i];
    at += uint64_t(sizes[i]) * granule;
  }
  b.put8(hole - 1, 0x55); // the segment's committed part is captured to its end
  links(heap + l.virtual_allocd_blocks, large);
  links(large, heap + l.virtual_allocd_blocks);
  word(large + l.commit_size, 0x1000);
  entry(large + l.busy_block, 0x134, 1, 0, 0);
  b.put8(large + 0x1000 - 1, 0x66);
}

/// Writes the synthetic NT heap seeds into `dir`: an x64 Windows 8-11 heap and an x86 Windows 7
/// one (docs/heap-windows.md), in a Windows fuzz process.
int writeNtHeapSynthetic(const std::string &dir) {
  struct Seed {
    const char *file;
    uint8_t flags; // Windows (2), and 32-bit (1)
    NtSeedLayout layout;
    uint64_t heap, large;
  };
  const Seed kinds[] = {
      {"x64_win8.proc",
       2,
       {true, 0x10, 0x18, 0x40, 0x48, 0x60, 0x7C, 0x80, 0x98, 0x110, 0x120, 0x20, 0x30, 0x10, 0x20,
        0x28},
       0x2a0000,
       0x4f0000},
      {"x86_win7.proc",
       3,
       {false, 0x08, 0x10, 0x24, 0x28, 0x38, 0x4C, 0x50, 0x64, 0xA0, 0xA8, 0x10, 0x18, 0x08, 0x10,
        0x14},
       0x150000,
       0x390000},
  };
  std::vector<std::pair<std::string, std::string>> seeds;
  for (const Seed &k : kinds) {
    SeedBuilder b;
    b.flags(k.flags);
    putNtHeap(b, k.layout, k.heap, k.large);
    seeds.push_back({k.file, b.encode()});
  }
  return writeSeeds(dir, "ntheap", seeds);
}

/// Runs the walkers of `mode` that detect their heaps over `memory`; returns how many allocations
/// they report, appends their areas to `areas` (when not null) and the first word of each of the
/// first allocations (a MethodTable or vtable pointer for managed objects) to `type_words`.
/// `force` walks even when detect says no.
uint64_t walkAll(const std::string &mode, const AddressSpace &memory, std::vector<HeapArea> *areas,
                 std::vector<uint64_t> *type_words, bool force) {
  uint64_t allocations = 0;
  for (const auto &walker : heapWalkers()) {
    const bool wanted =
        mode == "managed"
            ? walker->name() == "coreclr" || walker->name() == "mono" || walker->name() == "hotspot"
            : walker->name() == mode;
    if (!wanted || (!force && !walker->detect(memory)))
      continue;
    Diagnostics diags;
    auto result = walker->walk(
        memory,
        [&](const Allocation &a) {
          uint64_t word = 0;
          if (type_words && allocations < 64 && memory.readU64(a.address, word))
            type_words->push_back(word);
          ++allocations;
        },
        diags);
    if (!result) {
      std::cerr << "dumpsift_fuzz_seeds: " << llvm::toString(result.takeError()) << "\n";
      continue;
    }
    if (areas)
      areas->insert(areas->end(), result->areas.begin(), result->areas.end());
  }
  return allocations;
}

} // namespace

/// Writes one seed; exit status 0 on success, 2 with a message otherwise.
int main(int argc, char **argv) {
  if (argc == 3 && std::string(argv[1]) == "synthetic")
    return writeSynthetic(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "synthetic-jemalloc")
    return writeSyntheticJemalloc(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "synthetic-mimalloc")
    return writeMimallocSynthetic(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "synthetic-musl")
    return writeMuslSynthetic(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "synthetic-tcmalloc")
    return writeTcmallocSynthetic(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "go")
    return writeGo(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "synthetic-ntheap")
    return writeNtHeapSynthetic(argv[2]);
  if (argc < 4) {
    std::cerr << "usage: dumpsift_fuzz_seeds glibc|managed|ntheap DUMP OUT [MAX_PER_REGION] "
                 "[MAX_TOTAL]\n";
    return 2;
  }
  const std::string mode = argv[1];
  const uint64_t per_region = argc > 4 ? std::stoull(argv[4]) : 64 << 10;
  const uint64_t max_total = argc > 5 ? std::stoull(argv[5]) : 512 << 10;
  auto snapshot = openDump(argv[2]);
  if (!snapshot) {
    std::cerr << "dumpsift_fuzz_seeds: " << llvm::toString(snapshot.takeError()) << "\n";
    return 2;
  }
  const Snapshot &snap = **snapshot;
  AddressSpace memory(snap);
  std::vector<HeapArea> areas;
  std::vector<uint64_t> type_words;
  const uint64_t dump_allocations = walkAll(mode, memory, &areas, &type_words, false);
  std::string exe;
  for (const auto &[type, value] : snap.auxv)
    if (type == 9) // AT_ENTRY
      if (const Region *r = memory.regionContaining(value))
        exe = r->backing_file;
  uint64_t total = 0;
  auto keep = [&](const Region &r) {
    bool wanted = false;
    for (const HeapArea &a : areas)
      wanted |= a.start < r.end() && r.start < a.start + a.size;
    if (mode == "managed")
      for (uint64_t w : type_words)
        wanted |= w >= r.start && w < r.end();
    wanted |= r.perms.write &&
              (runtimeFile(mode, r.backing_file) || (!exe.empty() && r.backing_file == exe));
    // The anonymous region right after a runtime file's data (its .bss).
    const Region *before = memory.regionContaining(r.start - 1);
    wanted |= r.perms.write && r.backing_file.empty() && before && before->end() == r.start &&
              runtimeFile(mode, before->backing_file);
    if (!wanted || total >= max_total)
      return false;
    total += std::min(r.captured, per_region);
    return true;
  };
  std::string seed = fuzz::encodeFuzzProcess(snap, keep, per_region);
  std::ofstream out(argv[3], std::ios::binary);
  out.write(seed.data(), seed.size());
  if (!out) {
    std::cerr << "dumpsift_fuzz_seeds: cannot write " << argv[3] << "\n";
    return 2;
  }
  // What the walkers still find in the seed (its bytes are cut, so usually fewer).
  auto decoded =
      fuzz::decodeFuzzProcess(reinterpret_cast<const uint8_t *>(seed.data()), seed.size());
  const uint64_t seed_allocations = walkAll(mode, AddressSpace(*decoded), nullptr, nullptr, false);
  std::cout << argv[3] << ": " << seed.size() << " bytes, " << areas.size() << " heap areas; "
            << seed_allocations << " of the dump's " << dump_allocations
            << " allocations found in the seed\n";
  return 0;
}
