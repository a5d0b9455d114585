// Makes walker seeds for the fuzz corpus: reads a real dump and writes the part of it a heap walker
// needs as a fuzz process (fuzz_targets.h). Used by fixtures/make_corpus.sh.
//
//   dumpsift_fuzz_seeds glibc|managed DUMP OUT [MAX_BYTES_PER_REGION] [MAX_TOTAL_BYTES]
//   dumpsift_fuzz_seeds synthetic OUT_DIR
//
// glibc keeps the regions the glibc walker reports heaps in, plus libc's and the executable's
// writable regions (where main_arena lives); managed keeps the coreclr/mono walkers' areas plus
// the runtime modules' regions. Each region's bytes are cut to MAX_BYTES_PER_REGION (default
// 64 KiB); regions are kept in address order until MAX_TOTAL_BYTES (default 512 KiB) is reached.
// synthetic writes small hand-laid managed heaps (coreclr_loose.proc, coreclr_segment.proc,
// mono_los.proc) after the layouts documented in docs/heap-managed.md, the shapes
// tests/managed/managed_synthetic_test.cpp checks.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "fuzz/fuzz_targets.h"

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

/// A fuzz process written by hand: regions whose captured bytes grow as they are written.
class SeedBuilder {
public:
  /// Maps [start, start+size); `file` indexes fuzzProcessFiles(); a file-backed region is an
  /// image and a module.
  void region(uint64_t start, uint32_t size, uint8_t file = 0) {
    blocks_.push_back({start, size, file, {}});
  }
  void put64(uint64_t addr, uint64_t v) { std::memcpy(at(addr, 8), &v, 8); }
  void put32(uint64_t addr, uint32_t v) { std::memcpy(at(addr, 4), &v, 4); }
  void put8(uint64_t addr, uint8_t v) { *at(addr, 1) = v; }
  void putBytes(uint64_t addr, llvm::StringRef s) {
    std::memcpy(at(addr, s.size()), s.data(), s.size());
  }

  /// The encoding of fuzz_targets.h: each region captured up to its last written byte.
  std::string encode() const {
    std::string out(1, '\0');
    out.push_back(char(fuzz::kAuxvRecord));
    appendWord(out, 6, 8); // AT_PAGESZ
    appendWord(out, 4096, 8);
    for (const Block &b : blocks_) {
      const unsigned cls = b.file ? unsigned(RegionClass::Image) : unsigned(RegionClass::Anonymous);
      out.push_back(char(b.file | (cls << 3) | 0x40 | (b.file ? 0x80 : 0)));
      appendWord(out, b.start, 8);
      appendWord(out, b.size, 4);
      appendWord(out, b.bytes.size(), 4);
      out.append(b.bytes.begin(), b.bytes.end());
    }
    return out;
  }

private:
  struct Block {
    uint64_t start;
    uint32_t size;
    uint8_t file;
    std::vector<char> bytes;
  };
  static void appendWord(std::string &out, uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; ++i)
      out.push_back(char(v >> (8 * i)));
  }
  char *at(uint64_t addr, uint64_t len) {
    for (Block &b : blocks_)
      if (addr >= b.start && addr + len <= b.start + b.size) {
        const uint64_t end = addr - b.start + len;
        if (b.bytes.size() < end)
          b.bytes.resize(end);
        return b.bytes.data() + (addr - b.start);
      }
    std::cerr << "dumpsift_fuzz_seeds: no region holds " << addr << "\n";
    std::exit(2);
  }
  std::vector<Block> blocks_;
};

/// CoreCLR MethodTables {u32 flags, u32 base size, +0x10 parent, +0x30 element type} for object,
/// array, byte, byte[], int[] and the free object, at `types`.
void coreclrTypes(SeedBuilder &b, uint64_t types) {
  const uint64_t object = types, array = types + 0x100, byte = types + 0x200;
  const uint64_t byte_array = types + 0x300, int_array = types + 0x400, free_mt = types + 0x500;
  b.region(types, 0x1000);
  b.put32(object + 4, 24);
  b.put32(array + 4, 24), b.put64(array + 0x10, object);
  b.put32(byte, 0x00070000), b.put32(byte + 4, 24), b.put64(byte + 0x10, object);
  b.put32(byte_array, 0x800A0001), b.put32(byte_array + 4, 24);
  b.put64(byte_array + 0x10, array), b.put64(byte_array + 0x30, byte);
  b.put32(int_array, 0x800A0004), b.put32(int_array + 4, 24), b.put64(int_array + 0x10, array);
  b.put32(free_mt, 0x80000001), b.put32(free_mt + 4, 24);
  b.put8(types + 0xfff, 0); // the whole page captured: walkers read fields past those set
}

/// A CoreCLR array object {MethodTable, u32 length}; returns where the next object starts.
uint64_t coreclrArray(SeedBuilder &b, uint64_t addr, uint64_t mt, uint32_t length, uint32_t elem) {
  b.put64(addr, mt);
  b.put32(addr + 8, length);
  return addr + ((24 + uint64_t(length) * elem + 7) & ~uint64_t(7));
}

/// Writes the synthetic managed seeds into `dir`.
int writeSynthetic(const std::string &dir) {
  constexpr uint64_t types = 0x10000, byte_array = types + 0x300, int_array = types + 0x400;
  constexpr uint64_t free_mt = types + 0x500;
  std::vector<std::pair<std::string, std::string>> seeds;
  {
    // A run of objects without heap_segment records: free, byte[100000], free, int[30000].
    SeedBuilder b;
    coreclrTypes(b, types);
    b.region(0x200000, 0x80000);
    uint64_t a = coreclrArray(b, 0x200000, free_mt, 8, 1);
    a = coreclrArray(b, a, byte_array, 100000, 1);
    a = coreclrArray(b, a, free_mt, 8, 1);
    a = coreclrArray(b, a, int_array, 30000, 4);
    b.put64(a + 8, 0); // captured zeros after the last object
    seeds.push_back({"coreclr_loose.proc", b.encode()});
  }
  {
    // A heap_segment {allocated, committed, reserved, used, mem, flags (8: LOH)} and its objects,
    // beside libcoreclr.so.
    SeedBuilder b;
    coreclrTypes(b, types);
    b.region(0x7f0000000000, 0x2000, 4);
    b.put64(0x7f0000000100, 0x400000); // a pointer to the segment in the runtime's data
    constexpr uint64_t seg = 0x400000, mem = seg + 0x1000;
    b.region(seg, 0x40000);
    uint64_t a = coreclrArray(b, mem, byte_array, 100, 1);
    a = coreclrArray(b, a, free_mt, 64, 1);
    a += 0x100;
    const uint64_t end = coreclrArray(b, a, byte_array, 500, 1);
    b.put64(end, 0);
    b.put64(seg, end), b.put64(seg + 8, seg + 0x40000), b.put64(seg + 16, seg + 0x100000);
    b.put64(seg + 24, end), b.put64(seg + 32, mem), b.put64(seg + 40, 8);
    seeds.push_back({"coreclr_segment.proc", b.encode()});
  }
  {
    // Mono: byte[]'s MonoVTable {klass, rank @44} and MonoClass {element_class, rank @26,
    // class_kind @27, name @64, element_size @136, byval data @176, byval type @186}; a LOS
    // section (free_chunk_map) with a live and a freed LOSObject {next, size, cardtable, object},
    // one in its own mapping, and the list head in mono-sgen's data.
    SeedBuilder b;
    constexpr uint64_t vtable = types, klass = types + 0x100, byte = types + 0x300;
    constexpr uint64_t name = types + 0x500;
    b.region(types, 0x1000);
    b.put64(vtable, klass), b.put8(vtable + 44, 1);
    b.put64(klass, byte), b.put8(klass + 26, 1), b.put8(klass + 27, 5);
    b.put64(klass + 64, name), b.put32(klass + 136, 1);
    b.put64(klass + 176, byte), b.put8(klass + 186, 0x1d);
    b.put8(byte + 27, 1), b.put8(byte + 186, 0x05);
    b.putBytes(name, llvm::StringRef("Byte[]\0", 7));
    b.put8(types + 0xfff, 0);
    auto los = [&](uint64_t header, uint64_t next, uint32_t length) {
      b.put64(header, next);
      b.put64(header + 8, (32 + uint64_t(length) + 7) & ~uint64_t(7));
      b.put64(header + 24, vtable | 2);
      b.put32(header + 48, length);
    };
    constexpr uint64_t section = 0x40000000;
    b.region(section, 1 << 20);
    b.put64(section + 16, section + 24);
    constexpr uint64_t live = section + 4096 + 0x88, dead = section + 5 * 4096 + 0x40;
    constexpr uint64_t huge = 0x50000000 + 0x238;
    for (int c = 5; c < 8; ++c) // the freed object's chunks
      b.put8(section + 24 + c, 1);
    b.put64(section + 8, 3);
    los(live, 0, 10000);
    los(dead, live, 10000);
    b.region(0x50000000, 0x112000);
    los(huge, live, 1100000);
    b.region(0x60000000, 0x1000, 6);
    b.put64(0x60000000 + 0x200, huge);
    seeds.push_back({"mono_los.proc", b.encode()});
  }
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
              << walkAll("managed", AddressSpace(*decoded), nullptr, nullptr, true)
              << " allocations found\n";
  }
  return 0;
}

/// Runs the walkers of `mode` that detect their heaps over `memory`; returns how many allocations
/// they report, appends their areas to `areas` (when not null) and the first word of each of the
/// first allocations (a MethodTable or vtable pointer for managed objects) to `type_words`.
/// `force` walks even when detect says no.
uint64_t walkAll(const std::string &mode, const AddressSpace &memory, std::vector<HeapArea> *areas,
                 std::vector<uint64_t> *type_words, bool force) {
  uint64_t allocations = 0;
  for (const auto &walker : heapWalkers()) {
    bool wanted = mode == "glibc" ? walker->name() == "glibc" : walker->name() != "glibc";
    if (!wanted || (!force && !walker->detect(memory)))
      continue;
    Diagnostics diags;
    auto result = walker->walk(
        memory,
        [&](const Allocation &a) {
          uint64_t word = 0;
          if (type_words && allocations < 64 && memory.tryReadU64(a.address, word))
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
  if (argc < 4) {
    std::cerr << "usage: dumpsift_fuzz_seeds glibc|managed DUMP OUT [MAX_PER_REGION] [MAX_TOTAL]\n";
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
