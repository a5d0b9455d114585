// ELF core reader on synthetic and damaged input: cores built byte by byte here (with their own
// layout code, not the reader's), the committed fixture core cut short, and random bytes. Each
// must give an error with a cause or a partial result with warnings; never a crash.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"
#include "support/byte_builder.h"
#include "support/test_support.h"

#include "llvm/Support/MemoryBuffer.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace dumpsift;

namespace {

/// Describes a small ELF core and writes it: ELF header, program headers (PT_NOTE first, then
/// one PT_LOAD per load), the notes, then the segment data. Fields can be overridden to make
/// damaged cores.
struct CoreBuilder {
  bool is64 = true;
  bool little = true;
  uint16_t machine = 62; // EM_X86_64

  struct Load {
    uint64_t vaddr = 0;
    uint64_t memsz = 0;
    std::vector<uint8_t> data; // p_filesz = data.size() unless overridden
    uint32_t flags = 6;        // PF_R | PF_W
    std::optional<uint64_t> offset_override;
    std::optional<uint64_t> filesz_override;
  };
  struct Note {
    std::string name = "CORE";
    uint32_t type = 0;
    std::vector<uint8_t> desc;
    std::optional<uint32_t> descsz_override;
  };
  std::vector<Load> loads;
  std::vector<Note> notes;
  std::optional<uint64_t> phnum_override; // written into e_phnum
  std::optional<uint64_t> xnum_count;     // e_phnum = 0xffff, section 0 sh_info = this
  std::optional<uint64_t> phoff_override;
  std::optional<uint16_t> phentsize_override;

  /// Adds a note named "CORE".
  void addNote(uint32_t type, std::vector<uint8_t> desc) {
    Note n;
    n.type = type;
    n.desc = std::move(desc);
    notes.push_back(std::move(n));
  }
  /// Adds a PT_LOAD whose file bytes are `data` (p_filesz = data.size()).
  void addLoad(uint64_t vaddr, uint64_t memsz, std::vector<uint8_t> data, uint32_t flags) {
    Load l;
    l.vaddr = vaddr;
    l.memsz = memsz;
    l.data = std::move(data);
    l.flags = flags;
    loads.push_back(std::move(l));
  }

  /// Sizes of a word, the ELF header, a program header and a section header for this class.
  unsigned word() const { return is64 ? 8 : 4; }
  size_t ehdrSize() const { return is64 ? 64 : 52; }
  size_t phdrSize() const { return is64 ? 56 : 32; }
  size_t shdrSize() const { return is64 ? 64 : 40; }

  /// The core file's bytes.
  std::vector<uint8_t> build() const {
    test::ByteWriter out{little};
    size_t phnum = 1 + loads.size();
    size_t phoff = ehdrSize();
    size_t notes_at = phoff + phnum * phdrSize();
    // Notes.
    test::ByteWriter note_bytes{little};
    for (const Note &n : notes) {
      note_bytes.append(n.name.size() + 1, 4);
      note_bytes.append(n.descsz_override.value_or(n.desc.size()), 4);
      note_bytes.append(n.type, 4);
      note_bytes.text(n.name).u8(0);
      note_bytes.padTo(4);
      note_bytes.raw(n.desc);
      note_bytes.padTo(4);
    }
    size_t data_at = notes_at + note_bytes.bytes.size();
    size_t shoff = 0;
    if (xnum_count) {
      shoff = data_at;
      data_at += shdrSize();
    }

    // ELF header.
    const uint8_t ident[] = {0x7f, 'E', 'L', 'F', uint8_t(is64 ? 2 : 1), uint8_t(little ? 1 : 2),
                             1};
    out.bytes.assign(ident, ident + sizeof ident);
    out.bytes.resize(16, 0);
    out.append(4, 2); // e_type ET_CORE
    out.append(machine, 2);
    out.append(1, 4);                                   // e_version
    out.append(0, word());                              // e_entry
    out.append(phoff_override.value_or(phoff), word()); // e_phoff
    out.append(shoff, word());                          // e_shoff
    out.append(0, 4);                                   // e_flags
    out.append(ehdrSize(), 2);
    out.append(phentsize_override.value_or(phdrSize()), 2);
    out.append(xnum_count ? 0xffff : phnum_override.value_or(phnum), 2);
    out.append(xnum_count ? shdrSize() : 0, 2); // e_shentsize
    out.append(xnum_count ? 1 : 0, 2);          // e_shnum
    out.append(0, 2);                           // e_shstrndx
    REQUIRE(out.bytes.size() == ehdrSize());

    // Program headers.
    auto phdr = [&](uint32_t type, uint32_t flags, uint64_t offset, uint64_t vaddr, uint64_t filesz,
                    uint64_t memsz) {
      out.append(type, 4);
      if (is64) {
        out.append(flags, 4);
        out.append(offset, 8);
        out.append(vaddr, 8);
        out.append(0, 8); // p_paddr
        out.append(filesz, 8);
        out.append(memsz, 8);
        out.append(0x1000, 8);
      } else {
        out.append(offset, 4);
        out.append(vaddr, 4);
        out.append(0, 4);
        out.append(filesz, 4);
        out.append(memsz, 4);
        out.append(flags, 4);
        out.append(0x1000, 4);
      }
    };
    phdr(4 /*PT_NOTE*/, 4, notes_at, 0, note_bytes.bytes.size(), 0);
    size_t offset = data_at;
    for (const Load &l : loads) {
      phdr(1 /*PT_LOAD*/, l.flags, l.offset_override.value_or(offset), l.vaddr,
           l.filesz_override.value_or(l.data.size()), l.memsz);
      offset += l.data.size();
    }
    REQUIRE(out.bytes.size() == notes_at);
    out.raw(note_bytes.bytes);
    if (xnum_count) {
      // Section header 0: everything 0 but sh_info (the program header count).
      size_t at = out.bytes.size();
      out.bytes.resize(at + shdrSize(), 0);
      out.put(at + (is64 ? 44 : 28), *xnum_count, 4);
    }
    for (const Load &l : loads)
      out.raw(l.data);
    return out.bytes;
  }

  /// A desc of `size` zero bytes with (offset, value, width) fields set, in this core's order.
  std::vector<uint8_t>
  desc(size_t size, std::initializer_list<std::tuple<size_t, uint64_t, unsigned>> fields) const {
    test::ByteWriter b{little};
    b.bytes.resize(size, 0);
    for (auto [at, value, width] : fields)
      b.put(at, value, width);
    return b.bytes;
  }

  /// An NT_FILE desc: word count, word page_size, {start, end, ofs}[], then NUL-ended paths.
  std::vector<uint8_t>
  fileNote(uint64_t page_size,
           const std::vector<std::tuple<uint64_t, uint64_t, uint64_t, std::string>> &entries,
           std::optional<uint64_t> count_override = std::nullopt) const {
    test::ByteWriter b{little};
    b.append(count_override.value_or(entries.size()), word());
    b.append(page_size, word());
    for (const auto &[start, end, ofs, path] : entries) {
      b.append(start, word());
      b.append(end, word());
      b.append(ofs, word());
    }
    for (const auto &entry : entries) {
      const std::string &path = std::get<3>(entry);
      b.text(path).u8(0);
    }
    return b.bytes;
  }

  /// An NT_AUXV desc of (type, value) words ending with AT_NULL.
  std::vector<uint8_t> auxv(const std::vector<std::pair<uint64_t, uint64_t>> &pairs) const {
    test::ByteWriter b{little};
    for (auto [type, value] : pairs) {
      b.append(type, word());
      b.append(value, word());
    }
    b.append(0, word());
    b.append(0, word());
    return b.bytes;
  }
};

/// `n` bytes counting up from `seed`, so misplaced reads are visible.
std::vector<uint8_t> counting(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>(seed + i * 7 + i / 256);
  return v;
}

/// openDump over a private copy of `bytes` (the in-memory seam; the copy has the exact size, so
/// ASan catches reads past its end).
llvm::Expected<std::unique_ptr<Snapshot>> openBytes(const std::vector<uint8_t> &bytes,
                                                    const std::string &name = "test.core") {
  llvm::StringRef ref(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  return openDump(llvm::MemoryBuffer::getMemBufferCopy(ref, name));
}

/// openDump that REQUIREs success.
std::unique_ptr<Snapshot> mustOpenBytes(const std::vector<uint8_t> &bytes) {
  auto snap = openBytes(bytes);
  if (!snap)
    FAIL("openDump: " << llvm::toString(snap.takeError()));
  return std::move(*snap);
}

/// The error message of a failed openDump (REQUIREs failure).
std::string errorOf(llvm::Expected<std::unique_ptr<Snapshot>> result) {
  REQUIRE_FALSE(static_cast<bool>(result));
  return llvm::toString(result.takeError());
}

/// True when some warning's "where: message" contains every one of `parts`.
bool hasWarning(const Snapshot &snap, std::initializer_list<std::string> parts) {
  for (const Diagnostic &d : snap.diagnostics.warnings()) {
    std::string text = d.where + ": " + d.message;
    bool all = true;
    for (const std::string &p : parts)
      all = all && text.find(p) != std::string::npos;
    if (all)
      return true;
  }
  return false;
}

/// All warnings as text, for failure messages.
std::string allWarnings(const Snapshot &snap) {
  std::string text;
  for (const Diagnostic &d : snap.diagnostics.warnings())
    text += d.where + ": " + d.message + "\n";
  return text;
}

/// The region starting exactly at `start`, or nullptr.
const Region *regionAt(const Snapshot &snap, uint64_t start) {
  for (const Region &r : snap.regions)
    if (r.start == start)
      return &r;
  return nullptr;
}

/// A well-formed little x86_64 core: one thread, prpsinfo, an executable with two mappings, a
/// heap right above it, an mmap far away, a stack.
CoreBuilder sampleCore() {
  CoreBuilder b;
  b.addNote(1, b.desc(336, {{0x20, 4242, 4}, {0x70 + 19 * 8, 0x7ffd0010, 8}}));
  std::vector<uint8_t> psinfo = b.desc(136, {{24, 4242, 4}});
  std::memcpy(psinfo.data() + 40, "sample", 6);
  std::memcpy(psinfo.data() + 56, "./sample -x 1 ", 14);
  b.addNote(3, psinfo);
  b.addNote(6, b.auxv({{6, 4096}, {9, 0x400100}}));
  b.addNote(0x46494c45, b.fileNote(4096, {{0x400000, 0x401000, 0, "/bin/sample"},
                                          {0x401000, 0x402000, 1, "/bin/sample"},
                                          {0x7f0000000000, 0x7f0000002000, 3, "/lib/libz.so"}}));
  b.addLoad(0x400000, 0x1000, counting(0x100, 1), 5);
  b.addLoad(0x401000, 0x1000, counting(0x1000, 2), 6);
  b.addLoad(0x500000, 0x3000, counting(0x3000, 3), 6);       // heap: 1 MiB above
  b.addLoad(0x7e0000000000, 0x2000, counting(0x2000, 4), 6); // anonymous mmap
  b.addLoad(0x7f0000000000, 0x2000, {}, 5);                  // libz, not captured
  b.addLoad(0x7ffd0000, 0x1000, counting(0x1000, 5), 6);     // stack
  return b;
}

} // namespace

TEST_CASE("elf core synthetic: a well-formed core reads back exactly") {
  CoreBuilder b = sampleCore();
  auto snap = mustOpenBytes(b.build());
  INFO(allWarnings(*snap));
  CHECK(snap->diagnostics.empty());
  CHECK(snap->system.arch == "x86_64");
  REQUIRE(snap->regions.size() == 6);
  REQUIRE(snap->threads.size() == 1);
  CHECK(snap->threads[0].tid == 4242);
  CHECK(snap->threads[0].stack_pointer == 0x7ffd0010);
  CHECK(regionAt(*snap, 0x7ffd0000)->cls == RegionClass::Stack);
  CHECK(snap->process.pid == 4242u);
  CHECK(snap->process.name == "sample");
  CHECK(snap->process.command_line == "./sample -x 1");
  CHECK(snap->auxv == std::vector<std::pair<uint64_t, uint64_t>>{{6, 4096}, {9, 0x400100}});

  const Region *text = regionAt(*snap, 0x400000);
  CHECK(text->capture() == Capture::Partial);
  CHECK(text->captured == 0x100);
  CHECK(text->perms.str() == "r-x");
  CHECK(text->cls == RegionClass::Image);
  CHECK(regionAt(*snap, 0x401000)->file_offset == 0x1000);
  CHECK(regionAt(*snap, 0x500000)->cls == RegionClass::Heap);
  CHECK(regionAt(*snap, 0x7e0000000000)->cls == RegionClass::Anonymous);
  const Region *libz = regionAt(*snap, 0x7f0000000000);
  CHECK(libz->capture() == Capture::None);
  CHECK(libz->file_offset == 0x3000);
  CHECK(libz->backing_file == "/lib/libz.so");

  REQUIRE(snap->modules.size() == 2);
  CHECK(snap->modules[0].path == "/bin/sample");
  CHECK(snap->modules[0].start == 0x400000);
  CHECK(snap->modules[0].end == 0x402000);
  CHECK(snap->modules[1].path == "/lib/libz.so");

  AddressSpace as(*snap);
  std::vector<uint8_t> heap(0x3000);
  REQUIRE_FALSE(static_cast<bool>(as.read(0x500000, heap)));
  CHECK(heap == counting(0x3000, 3));
  CHECK(as.classify(0x400100) == Fault::NotCaptured);
  CHECK(as.classify(0x600000) == Fault::Unmapped);
}

TEST_CASE("elf core synthetic: no heap when the nearest anonymous region is beyond brk range") {
  CoreBuilder b = sampleCore();
  b.loads[2].vaddr = 0x400000 + (2ull << 30); // 2 GiB above the executable
  auto snap = mustOpenBytes(b.build());
  for (const Region &r : snap->regions)
    CHECK(r.cls != RegionClass::Heap);
  CHECK(regionAt(*snap, 0x400000 + (2ull << 30))->cls == RegionClass::Anonymous);
}

TEST_CASE("elf core synthetic: segments out of address order are sorted") {
  CoreBuilder b = sampleCore();
  std::swap(b.loads[0], b.loads[5]);
  std::swap(b.loads[1], b.loads[3]);
  auto snap = mustOpenBytes(b.build());
  CHECK(snap->diagnostics.empty());
  REQUIRE(snap->regions.size() == 6);
  for (size_t i = 1; i < snap->regions.size(); ++i)
    CHECK(snap->regions[i - 1].end() <= snap->regions[i].start);
  AddressSpace as(*snap);
  std::vector<uint8_t> stack(0x1000);
  REQUIRE_FALSE(static_cast<bool>(as.read(0x7ffd0000, stack)));
  CHECK(stack == counting(0x1000, 5));
}

TEST_CASE("elf core hostile: empty file") {
  CHECK(errorOf(openBytes({})) == "empty file");
}

TEST_CASE("elf core hostile: random bytes") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 50; ++round) {
    std::vector<uint8_t> bytes(1 + rng() % 4096);
    for (uint8_t &b : bytes)
      b = static_cast<uint8_t>(rng());
    INFO("round " << round);
    auto result = openBytes(bytes);
    // Random bytes are not a dump (the magic does not match).
    CHECK(errorOf(std::move(result)).find("not a core dump") != std::string::npos);
  }
  // Random bytes behind a valid ELF core identification: must not crash; either an error with a
  // cause or a snapshot.
  for (int round = 0; round < 200; ++round) {
    CoreBuilder b;
    b.is64 = round % 2 == 0;
    b.little = round % 4 < 2;
    std::vector<uint8_t> bytes = b.build();
    bytes.resize(bytes.size() + rng() % 8192);
    for (size_t i = 18; i < bytes.size(); ++i)
      bytes[i] = static_cast<uint8_t>(rng());
    INFO("round " << round);
    auto result = openBytes(bytes);
    if (!result)
      CHECK_FALSE(llvm::toString(result.takeError()).empty());
  }
}

TEST_CASE("elf core hostile: random mutations of a well-formed core") {
  std::vector<uint8_t> good = sampleCore().build();
  std::mt19937 rng(777);
  for (int round = 0; round < 1000; ++round) {
    std::vector<uint8_t> bytes = good;
    int changes = 1 + static_cast<int>(rng() % 16);
    for (int i = 0; i < changes; ++i) {
      // Mostly the headers and notes (the first ~1.5 KiB), sometimes anywhere.
      size_t at = rng() % 4 ? 18 + rng() % 1500 : rng() % bytes.size();
      bytes[at] = rng() % 3 ? static_cast<uint8_t>(rng()) : 0xff;
    }
    INFO("round " << round);
    auto result = openBytes(bytes);
    if (!result) {
      CHECK_FALSE(llvm::toString(result.takeError()).empty());
      continue;
    }
    for (const MemoryRange &m : (*result)->memory)
      CHECK(m.bytes.end() <= reinterpret_cast<const uint8_t *>((*result)->file->getBufferEnd()));
  }
}

namespace {

/// Where things are in an ELF64LE core, read with this test's own minimal parser (not the
/// reader's): the program headers, the PT_NOTE's range and the boundaries of its notes.
struct CoreLayout {
  struct Load {
    size_t index = 0;
    uint64_t vaddr = 0, offset = 0, filesz = 0;
  };
  uint64_t phoff = 0, phnum = 0;
  uint64_t note_offset = 0, note_size = 0;
  std::vector<std::pair<uint64_t, uint32_t>> note_ends; // (file offset after the note, type)
  std::vector<Load> loads;
};

/// Little-endian integer of `size` bytes at `at` (REQUIREs it is inside `bytes`).
uint64_t le(const std::vector<uint8_t> &bytes, size_t at, unsigned size) {
  REQUIRE(at + size <= bytes.size());
  uint64_t v = 0;
  for (unsigned i = 0; i < size; ++i)
    v |= uint64_t(bytes[at + i]) << (8 * i);
  return v;
}

/// The layout of a well-formed ELF64LE core.
CoreLayout layoutOf(const std::vector<uint8_t> &core) {
  CoreLayout layout;
  layout.phoff = le(core, 32, 8);
  layout.phnum = le(core, 56, 2);
  for (size_t i = 0; i < layout.phnum; ++i) {
    size_t at = layout.phoff + i * 56;
    uint32_t type = static_cast<uint32_t>(le(core, at, 4));
    if (type == 4) {
      layout.note_offset = le(core, at + 8, 8);
      layout.note_size = le(core, at + 32, 8);
    } else if (type == 1) {
      layout.loads.push_back({i, le(core, at + 16, 8), le(core, at + 8, 8), le(core, at + 32, 8)});
    }
  }
  for (uint64_t pos = layout.note_offset; pos < layout.note_offset + layout.note_size;) {
    uint64_t namesz = le(core, pos, 4), descsz = le(core, pos + 4, 4);
    uint32_t type = static_cast<uint32_t>(le(core, pos + 8, 4));
    pos += 12 + ((namesz + 3) & ~uint64_t(3)) + ((descsz + 3) & ~uint64_t(3));
    layout.note_ends.emplace_back(pos, type);
  }
  return layout;
}

/// "0x..." as the reader's messages print addresses.
std::string hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

} // namespace

TEST_CASE("elf core hostile: the fixture core cut short") {
  std::vector<uint8_t> full =
      test::readFileBytes(test::unpackedFixture("cores/hold_buffers.core.xz"));
  CoreLayout layout = layoutOf(full);
  // What gcore writes: the PT_NOTE first, the segment data, then the notes.
  REQUIRE(layout.phoff == 64);
  REQUIRE(layout.loads.size() + 1 == layout.phnum);
  REQUIRE(layout.note_ends.size() >= 4);
  REQUIRE(layout.note_offset > layout.loads.back().offset);

  SECTION("inside the ELF header") {
    std::vector<uint8_t> cut(full.begin(), full.begin() + 40);
    CHECK(errorOf(openBytes(cut)).find("truncated ELF header") != std::string::npos);
  }
  SECTION("header only") {
    std::vector<uint8_t> cut(full.begin(), full.begin() + 64);
    std::string err = errorOf(openBytes(cut));
    CHECK(err.find("program header table offset 0x40 lies past the end of the file (64 bytes)") !=
          std::string::npos);
  }
  SECTION("in the middle of the program headers") {
    // Keep 5 and a half program headers of 56 bytes.
    std::vector<uint8_t> cut(full.begin(), full.begin() + 64 + 5 * 56 + 20);
    auto snap = mustOpenBytes(cut);
    CHECK(hasWarning(*snap, {"program header table",
                             "holds " + std::to_string(layout.phnum) + " entries but only 5 fit"}));
    // The first entry is the PT_NOTE; the other four are PT_LOADs whose data is gone.
    CHECK(snap->regions.size() == 4);
    CHECK(snap->memory.empty());
    CHECK(hasWarning(*snap, {"note segment 0", "past the end of the file"}));
  }
  SECTION("in the middle of the notes") {
    // Cut 16 bytes into the third note (gcore: prpsinfo, prstatus, then fpregset).
    uint64_t cut_at = layout.note_ends[1].first + 16;
    std::vector<uint8_t> cut(full.begin(), full.begin() + cut_at);
    auto snap = mustOpenBytes(cut);
    INFO(allWarnings(*snap));
    CHECK(hasWarning(*snap, {"note segment 0", "runs past the end of the file"}));
    CHECK(hasWarning(*snap,
                     {"note segment 0", "damaged after 2 notes", "ELF note overflows container"}));
    size_t prstatus = 0, prpsinfo = 0;
    for (size_t i = 0; i < 2; ++i) {
      prstatus += layout.note_ends[i].second == 1;
      prpsinfo += layout.note_ends[i].second == 3;
    }
    CHECK(prstatus == 1);
    CHECK(snap->threads.size() == prstatus); // the second thread's NT_PRSTATUS is cut off
    CHECK(snap->process.pid.has_value() == (prpsinfo == 1));
    CHECK(snap->modules.empty()); // NT_FILE comes last
    CHECK(snap->regions.size() == layout.loads.size());
    uint64_t all_data = 0;
    for (const CoreLayout::Load &l : layout.loads)
      all_data += l.filesz;
    CHECK(snap->capturedBytes() == all_data); // all segment data is before the notes
  }
  SECTION("in the middle of the segment data") {
    // Cut 64 KiB into the segment holding the mmap_256k buffer (found by its manifest address).
    uint64_t buffer = 0;
    std::vector<uint8_t> manifest =
        test::readFileBytes(test::sourceDir() + "/fixtures/cores/hold_buffers.manifest.jsonl");
    std::string text(manifest.begin(), manifest.end());
    size_t line_at = text.find("\"mmap_256k\"");
    REQUIRE(line_at != std::string::npos);
    size_t addr_at = text.find("0x", line_at);
    buffer = std::stoull(text.substr(addr_at + 2, 16), nullptr, 16);
    const CoreLayout::Load *hit = nullptr;
    const CoreLayout::Load *next = nullptr;
    for (const CoreLayout::Load &l : layout.loads) {
      if (buffer >= l.vaddr && buffer < l.vaddr + l.filesz)
        hit = &l;
      else if (hit && !next && l.filesz > 0)
        next = &l;
    }
    REQUIRE(hit != nullptr);
    REQUIRE(next != nullptr);
    REQUIRE(hit->filesz > 0x10000);
    uint64_t cut_at = hit->offset + 0x10000;
    std::vector<uint8_t> cut(full.begin(), full.begin() + cut_at);
    auto snap = mustOpenBytes(cut);
    INFO(allWarnings(*snap));
    CHECK(hasWarning(
        *snap,
        {"segment " + std::to_string(hit->index) + " (PT_LOAD at " + hex(hit->vaddr) + ")",
         "runs past the end", "65536 of " + std::to_string(hit->filesz) + " bytes captured"}));
    CHECK(hasWarning(
        *snap, {"segment " + std::to_string(next->index) + " (PT_LOAD at " + hex(next->vaddr) + ")",
                "runs past the end", "0 of " + std::to_string(next->filesz) + " bytes captured"}));
    const Region *big = regionAt(*snap, hit->vaddr);
    REQUIRE(big != nullptr);
    CHECK(big->capture() == Capture::Partial);
    CHECK(big->captured == 0x10000);
    for (const CoreLayout::Load &l : layout.loads) {
      const Region *r = regionAt(*snap, l.vaddr);
      REQUIRE(r != nullptr);
      if (l.offset >= cut_at)
        CHECK(r->capture() == Capture::None);
      else if (l.offset + l.filesz <= cut_at)
        CHECK(r->captured == l.filesz);
    }
    CHECK(snap->threads.empty()); // the notes are after the data
  }
  SECTION("at many lengths") {
    for (size_t len = 1; len < full.size(); len = len * 3 / 2 + 17) {
      INFO("length " << len);
      std::vector<uint8_t> cut(full.begin(), full.begin() + len);
      auto result = openBytes(cut);
      if (!result) {
        CHECK_FALSE(llvm::toString(result.takeError()).empty());
        continue;
      }
      Snapshot &snap = **result;
      // A core cut before the end of its notes always says so (gcore puts section headers, which
      // the reader does not need, after the notes).
      if (len < layout.note_offset + layout.note_size)
        CHECK_FALSE(snap.diagnostics.empty());
      for (const MemoryRange &m : snap.memory)
        CHECK(m.bytes.end() <= reinterpret_cast<const uint8_t *>(snap.file->getBufferEnd()));
    }
  }
}

TEST_CASE("elf core hostile: p_offset past the end of the file") {
  CoreBuilder b = sampleCore();
  b.loads[3].offset_override = 1ull << 40;
  b.loads[4].offset_override = UINT64_MAX - 10; // offset + filesz wraps
  b.loads[4].filesz_override = 0x100;
  auto snap = mustOpenBytes(b.build());
  INFO(allWarnings(*snap));
  CHECK(hasWarning(*snap, {"segment 4 (PT_LOAD at 0x7e0000000000)", "past the end of the file",
                           "0 of 8192 bytes captured"}));
  CHECK(hasWarning(*snap, {"segment 5 (PT_LOAD at 0x7f0000000000)", "past the end of the file"}));
  CHECK(regionAt(*snap, 0x7e0000000000)->capture() == Capture::None);
  CHECK(regionAt(*snap, 0x7f0000000000)->capture() == Capture::None);
  CHECK(regionAt(*snap, 0x500000)->capture() == Capture::Full);
}

TEST_CASE("elf core hostile: p_filesz larger than p_memsz") {
  CoreBuilder b = sampleCore();
  b.loads[2].memsz = 0x1000; // data is 0x3000
  auto snap = mustOpenBytes(b.build());
  CHECK(hasWarning(*snap, {"segment 3", "p_filesz 0x3000 exceeds p_memsz 0x1000"}));
  const Region *r = regionAt(*snap, 0x500000);
  REQUIRE(r != nullptr);
  CHECK(r->size == 0x1000);
  CHECK(r->capture() == Capture::Full);
}

TEST_CASE("elf core hostile: absurd e_phnum") {
  CoreBuilder b = sampleCore();
  b.phnum_override = 0xfffe;
  auto snap = mustOpenBytes(b.build());
  CHECK(hasWarning(*snap, {"program header table", "holds 65534 entries but only"}));
  // The real headers are still read; the garbage after them adds nothing that overlaps.
  CHECK(regionAt(*snap, 0x500000) != nullptr);
}

TEST_CASE("elf core hostile: program header table past the end of the file") {
  CoreBuilder b = sampleCore();
  b.phoff_override = 1ull << 40;
  CHECK(errorOf(openBytes(b.build()))
            .find("program header table offset 0x10000000000 lies past "
                  "the end of the file") != std::string::npos);
}

TEST_CASE("elf core hostile: wrong e_phentsize") {
  CoreBuilder b = sampleCore();
  b.phentsize_override = 40;
  CHECK(errorOf(openBytes(b.build())) == "e_phentsize is 40, expected 56");
}

TEST_CASE("elf core hostile: bad ELF class or data encoding") {
  std::vector<uint8_t> bytes = sampleCore().build();
  bytes[4] = 7;
  CHECK(errorOf(openBytes(bytes)).find("unknown ELF class 7") != std::string::npos);
  bytes[4] = 2;
  bytes[5] = 3;
  CHECK_FALSE(errorOf(openBytes(bytes)).empty());
}

TEST_CASE("elf core hostile: absurd NT_FILE counts") {
  for (uint64_t count : {uint64_t(0x100000000), uint64_t(UINT64_MAX), uint64_t(4)}) {
    INFO("count " << count);
    CoreBuilder b = sampleCore();
    b.notes[3].desc = b.fileNote(4096, {{0x400000, 0x401000, 0, "/bin/sample"}}, count);
    auto snap = mustOpenBytes(b.build());
    CHECK(hasWarning(*snap, {"NT_FILE claims " + std::to_string(count) + " mappings"}));
    CHECK(snap->modules.empty());
    // Everything else still works.
    CHECK(snap->threads.size() == 1);
    CHECK(regionAt(*snap, 0x500000) != nullptr);
  }
}

TEST_CASE("elf core hostile: NT_FILE with missing names and bad entries") {
  CoreBuilder b = sampleCore();
  std::vector<uint8_t> desc = b.fileNote(4096, {{0x400000, 0x401000, 0, "/bin/sample"},
                                                {0x402000, 0x401000, 0, "/bin/backwards"},
                                                {0x7f0000000000, 0x7f0000002000, 3, "/lib/x"}});
  desc.resize(desc.size() - 4); // cut into the last path, losing its NUL
  b.notes[3].desc = desc;
  auto snap = mustOpenBytes(b.build());
  INFO(allWarnings(*snap));
  CHECK(hasWarning(*snap, {"NT_FILE mapping 1 of /bin/backwards has end <= start"}));
  CHECK(hasWarning(*snap, {"lists 3 mappings but only 2 NUL-terminated paths"}));
  REQUIRE(snap->modules.size() == 1);
  CHECK(snap->modules[0].path == "/bin/sample");
}

TEST_CASE("elf core hostile: a note with an absurd size") {
  CoreBuilder b = sampleCore();
  b.notes[2].descsz_override = 0xfffffff0; // NT_AUXV claims ~4 GiB
  auto snap = mustOpenBytes(b.build());
  CHECK(hasWarning(*snap, {"note segment 0", "damaged after 2 notes", "overflows"}));
  // The notes before it are kept.
  CHECK(snap->threads.size() == 1);
  CHECK(snap->process.pid == 4242u);
  CHECK(snap->auxv.empty());
}

TEST_CASE("elf core hostile: short notes") {
  CoreBuilder b = sampleCore();
  b.notes[0].desc.resize(0x10); // NT_PRSTATUS without pr_pid
  b.notes[1].desc.resize(100);  // NT_PRPSINFO without pr_psargs
  b.notes[3].desc.resize(8);    // NT_FILE without page_size
  auto snap = mustOpenBytes(b.build());
  INFO(allWarnings(*snap));
  CHECK(hasWarning(*snap, {"note 0", "NT_PRSTATUS of 16 bytes is too short"}));
  CHECK(hasWarning(*snap, {"note 1", "NT_PRPSINFO of 100 bytes is too short"}));
  CHECK(hasWarning(*snap, {"note 3", "NT_FILE of 8 bytes is too short"}));
  CHECK(snap->threads.empty());
  CHECK_FALSE(snap->process.pid.has_value());
}

TEST_CASE("elf core hostile: overlapping segments") {
  CoreBuilder b = sampleCore();
  CoreBuilder::Load overlap;
  overlap.vaddr = 0x501000; // inside the heap segment [0x500000, 0x503000)
  overlap.memsz = 0x4000;
  overlap.data = counting(0x4000, 9);
  b.loads.push_back(overlap);
  auto snap = mustOpenBytes(b.build());
  CHECK(hasWarning(
      *snap, {"segment 7 (PT_LOAD at 0x501000)", "overlaps segment 3 at 0x500000", "ignored"}));
  const Region *heap = regionAt(*snap, 0x500000);
  REQUIRE(heap != nullptr);
  CHECK(heap->size == 0x3000);
  CHECK(regionAt(*snap, 0x501000) == nullptr);
  CHECK(regionAt(*snap, 0x503000) == nullptr);
  AddressSpace as(*snap);
  std::vector<uint8_t> bytes(0x3000);
  REQUIRE_FALSE(static_cast<bool>(as.read(0x500000, bytes)));
  CHECK(bytes == counting(0x3000, 3));
}

TEST_CASE("elf core hostile: a segment that wraps around the address space") {
  CoreBuilder b = sampleCore();
  CoreBuilder::Load wrap;
  wrap.vaddr = UINT64_MAX - 0xfff;
  wrap.memsz = 0x2000;
  b.loads.push_back(wrap);
  auto snap = mustOpenBytes(b.build());
  CHECK(hasWarning(*snap, {"segment 7", "runs past the top of the address space"}));
  CHECK(snap->regions.size() == 6);
}

TEST_CASE("elf core hostile: PN_XNUM") {
  SECTION("the real count is in section header 0") {
    CoreBuilder b = sampleCore();
    b.xnum_count = 7; // PT_NOTE + 6 PT_LOAD
    auto snap = mustOpenBytes(b.build());
    INFO(allWarnings(*snap));
    CHECK(snap->diagnostics.empty());
    CHECK(snap->regions.size() == 6);
    CHECK(snap->threads.size() == 1);
  }
  SECTION("section header 0 claims 2^32-1 headers") {
    CoreBuilder b = sampleCore();
    b.xnum_count = 0xffffffff;
    auto snap = mustOpenBytes(b.build());
    CHECK(hasWarning(*snap, {"holds 4294967295 entries but only"}));
    CHECK(regionAt(*snap, 0x500000) != nullptr);
  }
  SECTION("no section header") {
    CoreBuilder b = sampleCore();
    b.phnum_override = 0xffff;
    CHECK(errorOf(openBytes(b.build())).find("PN_XNUM") != std::string::npos);
  }
}

TEST_CASE("elf core hostile: many bad segments give a bounded number of warnings") {
  CoreBuilder b;
  for (int i = 0; i < 5000; ++i) {
    CoreBuilder::Load l;
    l.vaddr = 0x10000;
    l.memsz = 0x1000;
    l.offset_override = 1ull << 50;
    l.filesz_override = 0x1000;
    b.loads.push_back(l);
  }
  auto snap = mustOpenBytes(b.build());
  CHECK(snap->regions.size() == 1);
  CHECK(snap->diagnostics.warnings().size() < 40);
  CHECK(hasWarning(*snap, {"more segment warnings not shown"}));
}

TEST_CASE("elf core: big-endian and 32-bit layouts") {
  for (bool is64 : {true, false}) {
    for (bool little : {true, false}) {
      INFO((is64 ? "ELF64" : "ELF32") << (little ? "LE" : "BE"));
      CoreBuilder b;
      b.is64 = is64;
      b.little = little;
      b.machine = is64 ? 62 : 3; // EM_X86_64 / EM_386 (byte order is the test's choice)
      size_t prstatus_size = is64 ? 336 : 144;
      size_t pid_at = is64 ? 0x20 : 0x18;
      size_t sp_at = is64 ? 0x70 + 19 * 8 : 0x48 + 15 * 4;
      b.addNote(1, b.desc(prstatus_size, {{pid_at, 77, 4}, {sp_at, 0x20800, b.word()}}));
      std::vector<uint8_t> psinfo = b.desc(is64 ? 136 : 124, {{is64 ? 24u : 12u, 77, 4}});
      std::memcpy(psinfo.data() + (is64 ? 40 : 28), "be", 2);
      b.addNote(3, psinfo);
      b.addNote(0x46494c45, b.fileNote(4096, {{0x10000, 0x12000, 2, "/bin/be"}}));
      b.addLoad(0x10000, 0x2000, counting(0x80, 1), 5);
      b.addLoad(0x20000, 0x1000, counting(0x1000, 2), 6);
      auto snap = mustOpenBytes(b.build());
      INFO(allWarnings(*snap));
      CHECK(snap->diagnostics.empty());
      CHECK(snap->system.little_endian == little);
      CHECK(snap->system.pointer_size == (is64 ? 8u : 4u));
      REQUIRE(snap->regions.size() == 2);
      CHECK(snap->regions[0].captured == 0x80);
      CHECK(snap->regions[0].file_offset == 0x2000);
      CHECK(snap->regions[0].cls == RegionClass::Image);
      CHECK(snap->regions[1].cls == RegionClass::Stack);
      REQUIRE(snap->threads.size() == 1);
      CHECK(snap->threads[0].tid == 77);
      CHECK(snap->threads[0].stack_pointer == 0x20800);
      CHECK(snap->process.pid == 77u);
      CHECK(snap->process.name == "be");
      REQUIRE(snap->modules.size() == 1);
      CHECK(snap->modules[0].path == "/bin/be");
      AddressSpace as(*snap);
      std::vector<uint8_t> bytes(0x1000);
      REQUIRE_FALSE(static_cast<bool>(as.read(0x20000, bytes)));
      CHECK(bytes == counting(0x1000, 2));
    }
  }
}

TEST_CASE("elf core: stack pointers of aarch64 and arm, unknown machines") {
  struct Case {
    bool is64;
    uint16_t machine;
    size_t prstatus_size;
    size_t sp_at;
    const char *arch;
  };
  // aarch64: pr_reg at 0x70, user_pt_regs regs[31] then sp. arm: pr_reg at 0x48, r13 is sp.
  for (Case c : {Case{true, 183, 392, 0x70 + 31 * 8, "aarch64"},
                 Case{false, 40, 148, 0x48 + 13 * 4, "arm"}}) {
    INFO(c.arch);
    CoreBuilder b;
    b.is64 = c.is64;
    b.machine = c.machine;
    b.addNote(
        1, b.desc(c.prstatus_size, {{c.is64 ? 0x20 : 0x18, 5, 4}, {c.sp_at, 0x30ff0, b.word()}}));
    b.addLoad(0x30000, 0x1000, counting(0x1000, 1), 6);
    auto snap = mustOpenBytes(b.build());
    CHECK(snap->system.arch == c.arch);
    REQUIRE(snap->threads.size() == 1);
    CHECK(snap->threads[0].stack_pointer == 0x30ff0);
    CHECK(snap->regions[0].cls == RegionClass::Stack);
  }
  // Architectures without a known register layout still print by name (lldb's test cores).
  for (const auto &[machine, name] : {std::pair<uint16_t, const char *>{21, "ppc64"},
                                      {22, "s390x"},
                                      {8, "mips64"},
                                      {243, "riscv64"}}) {
    CoreBuilder named;
    named.machine = machine;
    named.addNote(1, named.desc(400, {{0x20, 5, 4}}));
    CHECK(mustOpenBytes(named.build())->system.arch == name);
  }
  CoreBuilder b;
  b.machine = 42; // EM_SH: not named
  b.addNote(1, b.desc(400, {{0x20, 5, 4}}));
  b.addNote(1, b.desc(400, {{0x20, 6, 4}}));
  auto snap = mustOpenBytes(b.build());
  CHECK(snap->system.arch == "machine-42");
  REQUIRE(snap->threads.size() == 2);
  CHECK(snap->threads[1].tid == 6);
  CHECK(snap->threads[0].stack_pointer == 0);
  CHECK(hasWarning(*snap, {"register layout of machine-42 is not known"}));
  CHECK(snap->diagnostics.warnings().size() == 1);
}

TEST_CASE("elf core: a stack is a thread's stack mapping, not where a stack pointer lands") {
  // Four threads, laid out as in a Go process: the main thread on the initial stack (the
  // auxiliary vector's strings lie in it), one on a pthread stack with a guard page below, two on
  // stacks carved out of a heap arena (no guard: the arena's pages lie below and above).
  CoreBuilder b;
  const uint64_t sp_at = 0x70 + 19 * 8;
  for (uint64_t sp : {0x7ffd0800ull, 0x7f0000010f00ull, 0xc000001800ull, 0xc000003800ull})
    b.addNote(1, b.desc(336, {{0x20, 9, 4}, {sp_at, sp, 8}}));
  b.addNote(6, b.auxv({{6, 4096}, {25 /*AT_RANDOM*/, 0x7ffd0f00}, {31 /*AT_EXECFN*/, 0x7ffd0fe0}}));
  b.addLoad(0x7f0000000000, 0x1000, {}, 0);                    // the pthread stack's guard
  b.addLoad(0x7f0000001000, 0x10000, counting(0x10000, 1), 6); // the pthread stack
  b.addLoad(0xc000000000, 0x2000, counting(0x2000, 2), 6);     // arena pages, split in two
  b.addLoad(0xc000002000, 0x2000, counting(0x2000, 3), 6);     //   mappings (huge page flags)
  b.addLoad(0xc000004000, 0x4000, {}, 4);                      // the arena's reserved rest
  b.addLoad(0x7ffd0000, 0x1000, counting(0x1000, 4), 6);       // the initial stack
  auto snap = mustOpenBytes(b.build());
  INFO(allWarnings(*snap));
  CHECK(regionAt(*snap, 0x7ffd0000)->cls == RegionClass::Stack);
  CHECK(regionAt(*snap, 0x7f0000001000)->cls == RegionClass::Stack);
  CHECK(regionAt(*snap, 0xc000000000)->cls == RegionClass::Anonymous);
  CHECK(regionAt(*snap, 0xc000002000)->cls == RegionClass::Anonymous);
  REQUIRE(snap->threads.size() == 4);
  CHECK(snap->threads[0].stack_start == 0x7ffd0000);
  CHECK(snap->threads[1].stack_start == 0x7f0000001000);
  CHECK(snap->threads[1].stack_end == 0x7f0000011000);
  // A thread on a heap stack has no stack mapping the dump can name.
  CHECK(snap->threads[2].stack_end == 0);
  CHECK(snap->threads[3].stack_end == 0);

  // Without the auxiliary vector nothing tells the initial stack from a heap: every region that
  // holds a stack pointer is a stack, as before.
  b.notes.erase(b.notes.begin() + 4);
  auto bare = mustOpenBytes(b.build());
  CHECK(regionAt(*bare, 0xc000000000)->cls == RegionClass::Stack);
  CHECK(regionAt(*bare, 0xc000002000)->cls == RegionClass::Stack);
}

TEST_CASE("elf core hostile: PT_LOADs over the same file bytes count those bytes once") {
  // A: 64 KiB of its own; B: all of A's bytes again; C: A's second half and all of D's bytes;
  // D: 32 KiB of its own, right after A's in the file.
  CoreBuilder b;
  const uint64_t data_at = b.ehdrSize() + b.phdrSize() * 5; // no notes: the data follows
  b.addLoad(0x10000000, 0x10000, counting(0x10000, 1), 6);
  b.addLoad(0x20000000, 0x10000, {}, 6);
  b.loads.back().offset_override = data_at;
  b.loads.back().filesz_override = 0x10000;
  b.addLoad(0x30000000, 0x10000, {}, 6);
  b.loads.back().offset_override = data_at + 0x8000;
  b.loads.back().filesz_override = 0x10000;
  b.addLoad(0x40000000, 0x8000, counting(0x8000, 7), 6);
  auto snap = mustOpenBytes(b.build());
  INFO(allWarnings(*snap));

  // Each file byte backs one range: the one whose bytes start first in the file keeps them.
  CHECK(snap->capturedBytes() == 0x18000);
  CHECK(allWarnings(*snap).find("memory ranges: 3 ranges (128.0 KiB) point at file bytes another "
                                "range holds (the first: 0x20000000 repeats the bytes of "
                                "0x10000000)") != std::string::npos);
  REQUIRE(snap->regions.size() == 4);
  CHECK(regionAt(*snap, 0x20000000)->captured == 0);
  CHECK(regionAt(*snap, 0x30000000)->captured == 0x8000);
  CHECK(regionAt(*snap, 0x40000000)->captured == 0);
  AddressSpace as(*snap);
  CHECK(as.classify(0x20000000) == Fault::NotCaptured);
  CHECK(as.classify(0x30000000) == Fault::NotCaptured);
  std::vector<uint8_t> tail(0x8000);
  REQUIRE_FALSE(static_cast<bool>(as.read(0x30008000, tail)));
  CHECK(tail == counting(0x8000, 7));
  std::vector<uint8_t> first(0x10000);
  REQUIRE_FALSE(static_cast<bool>(as.read(0x10000000, first)));
  CHECK(first == counting(0x10000, 1));
}

TEST_CASE("elf core hostile: 65,533 PT_LOADs of 1 MiB over one MiB of the file capture 1 MiB") {
  // The size of issue 24's core: 4.7 MB of headers and data that claimed 64 GiB.
  CoreBuilder b;
  const size_t count = 65533;
  const uint64_t data_at = b.ehdrSize() + b.phdrSize() * (1 + count);
  b.addLoad(0x10000000, 1 << 20, counting(1 << 20, 3), 6);
  for (size_t i = 1; i < count; ++i) {
    b.addLoad(0x10000000 + (uint64_t(i) << 20), 1 << 20, {}, 6);
    b.loads.back().offset_override = data_at;
    b.loads.back().filesz_override = 1 << 20;
  }
  std::vector<uint8_t> bytes = b.build();
  CHECK(bytes.size() < 5'000'000);
  auto snap = mustOpenBytes(bytes);
  CHECK(snap->capturedBytes() == 1 << 20);
  CHECK(snap->memory.size() == 1);
  CHECK(snap->regions.size() == count);
  CHECK(
      allWarnings(*snap).find("65532 ranges (64.0 GiB) point at file bytes another range holds") !=
      std::string::npos);
}
