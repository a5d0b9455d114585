// ELF core reader on real cores: the committed hold_buffers core, a live gcore of the same
// program, and the two pyelftools kernel cores from ../shared/dumps.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"
#include "support/test_support.h"

#include "llvm/Object/ELF.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

using namespace dumpsift;

namespace {

/// Opens `path` with openDump and REQUIREs success.
std::unique_ptr<Snapshot> mustOpen(const std::string &path) {
  auto snap = openDump(path);
  if (!snap)
    FAIL("openDump(" << path << "): " << llvm::toString(snap.takeError()));
  return std::move(*snap);
}

/// The expected byte at offset `i` of a buffer filled with the fixture's stamp64 pattern: the
/// little-endian u64 at every 8-byte offset k is (tag << 48) | k.
uint8_t stamp64Byte(uint64_t tag, uint64_t i) {
  uint64_t word = (tag << 48) | (i & ~uint64_t(7));
  return static_cast<uint8_t>(word >> (8 * (i & 7)));
}

/// Index of the first byte of `bytes` that differs from the stamp64 pattern, or -1.
int64_t firstPatternMismatch(const std::vector<uint8_t> &bytes, uint64_t tag) {
  for (uint64_t i = 0; i < bytes.size(); ++i)
    if (bytes[i] != stamp64Byte(tag, i))
      return static_cast<int64_t>(i);
  return -1;
}

/// The region starting exactly at `start`, or nullptr.
const Region *regionAt(const Snapshot &snap, uint64_t start) {
  for (const Region &r : snap.regions)
    if (r.start == start)
      return &r;
  return nullptr;
}

/// The module whose path ends with `suffix`, or nullptr.
const Module *moduleEndingWith(const Snapshot &snap, const std::string &suffix) {
  for (const Module &m : snap.modules)
    if (llvm::StringRef(m.path).endswith(suffix))
      return &m;
  return nullptr;
}

/// The GNU build id of the ELF file at `path`, read with libObject's section notes (independent
/// of the core reader's in-memory note scan); empty when absent.
std::string buildIdOfFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  REQUIRE(buffer);
  auto elf = llvm::object::ELF64LEFile::create((*buffer)->getBuffer());
  REQUIRE(static_cast<bool>(elf));
  auto sections = elf->sections();
  REQUIRE(static_cast<bool>(sections));
  for (const auto &sec : *sections) {
    if (sec.sh_type != llvm::ELF::SHT_NOTE)
      continue;
    llvm::Error err = llvm::Error::success();
    for (const auto &note : elf->notes(sec, err)) {
      if (note.getName() == "GNU" && note.getType() == llvm::ELF::NT_GNU_BUILD_ID) {
        std::string hex;
        for (uint8_t b : note.getDesc()) {
          static const char digits[] = "0123456789abcdef";
          hex += digits[b >> 4];
          hex += digits[b & 15];
        }
        llvm::consumeError(std::move(err));
        return hex;
      }
    }
    REQUIRE_FALSE(static_cast<bool>(err));
  }
  return {};
}

/// Checks a core of the hold_buffers fixture against the manifest the program printed:
/// process, threads, every buffer's region class and bytes, and the executable's module.
void checkHoldBuffersCore(const Snapshot &snap, const std::vector<nlohmann::json> &manifest,
                          const std::string &exe_build_id) {
  CHECK(snap.format == DumpFormat::ElfCore);
  CHECK(snap.system.os == Os::Linux);
  CHECK(snap.system.arch == "x86_64");
  CHECK(snap.system.pointer_size == 8);
  CHECK(snap.system.little_endian);
  for (const Diagnostic &d : snap.diagnostics.warnings())
    FAIL_CHECK("unexpected warning: " << d.where << ": " << d.message);

  const nlohmann::json *process = nullptr;
  for (const nlohmann::json &line : manifest)
    if (line.at("name") == "process")
      process = &line;
  REQUIRE(process != nullptr);

  // Process and threads.
  REQUIRE(snap.process.pid.has_value());
  CHECK(*snap.process.pid == process->at("pid").get<uint64_t>());
  // The kernel writes comm (15 characters at most); gdb writes up to 16 characters of the name.
  std::string comm = process->at("comm").get<std::string>();
  CHECK(comm.size() >= 10);
  CHECK(llvm::StringRef(snap.process.name).startswith(comm));
  CHECK(snap.process.command_line.find("hold_buffers") != std::string::npos);
  std::set<uint64_t> tids;
  for (const Thread &t : snap.threads)
    tids.insert(t.tid);
  std::set<uint64_t> expected_tids;
  for (const auto &tid : process->at("tids"))
    expected_tids.insert(tid.get<uint64_t>());
  CHECK(tids == expected_tids);
  CHECK(snap.threads.size() == 2);

  AddressSpace as(snap);
  for (const Thread &t : snap.threads) {
    INFO("thread " << t.tid);
    const Region *stack = as.regionContaining(t.stack_pointer);
    REQUIRE(stack != nullptr);
    CHECK(stack->cls == RegionClass::Stack);
    CHECK(t.stack_start == stack->start);
    CHECK(t.stack_end == stack->end());
  }

  // Buffers: small ones are in the brk heap, big ones (glibc mmap threshold, plain mmap) in
  // anonymous mappings; their bytes read back as the pattern.
  size_t buffers = 0;
  for (const nlohmann::json &line : manifest) {
    if (!line.contains("address"))
      continue;
    ++buffers;
    std::string name = line.at("name").get<std::string>();
    uint64_t addr = std::stoull(line.at("address").get<std::string>(), nullptr, 16);
    uint64_t size = line.at("size").get<uint64_t>();
    uint64_t tag = line.at("tag").get<uint64_t>();
    INFO("buffer " << name << " at 0x" << std::hex << addr);
    const Region *region = as.regionContaining(addr);
    REQUIRE(region != nullptr);
    CHECK(region->capture() == Capture::Full);
    CHECK(addr + size <= region->end());
    if (size < 128 * 1024)
      CHECK(region->cls == RegionClass::Heap);
    else
      CHECK(region->cls == RegionClass::Anonymous);
    CHECK(as.classify(addr) == Fault::None);
    std::vector<uint8_t> bytes(size);
    llvm::Error err = as.read(addr, bytes);
    if (err)
      FAIL(llvm::toString(std::move(err)));
    CHECK(firstPatternMismatch(bytes, tag) == -1);
    // The view is zero-copy: it points into the mapped core.
    const uint8_t *view = as.tryView(addr, size);
    REQUIRE(view != nullptr);
    llvm::StringRef file = snap.file->getBuffer();
    CHECK(reinterpret_cast<const char *>(view) >= file.begin());
    CHECK(reinterpret_cast<const char *>(view) + size <= file.end());
  }
  CHECK(buffers == 5);

  // Exactly one heap region; it lies above the executable.
  size_t heaps = 0;
  for (const Region &r : snap.regions)
    heaps += r.cls == RegionClass::Heap;
  CHECK(heaps == 1);

  // Modules: the executable with its build id, libc and the dynamic loader.
  const Module *exe = moduleEndingWith(snap, "/hold_buffers");
  REQUIRE(exe != nullptr);
  CHECK(exe->build_id == exe_build_id);
  CHECK(moduleEndingWith(snap, "/libc.so.6") != nullptr);
  for (const Region &r : snap.regions)
    if (r.start >= exe->start && r.end() <= exe->end) {
      CHECK(r.cls == RegionClass::Image);
      CHECK(r.backing_file == exe->path);
    }

  // Auxiliary vector: AT_PAGESZ (6) is 4096 and AT_PHDR (3) lies in the executable.
  bool saw_pagesz = false, saw_phdr = false;
  for (const auto &[type, value] : snap.auxv) {
    if (type == 6) {
      saw_pagesz = true;
      CHECK(value == 4096);
    }
    if (type == 3) {
      saw_phdr = true;
      CHECK(value >= exe->start);
      CHECK(value < exe->end);
    }
  }
  CHECK(saw_pagesz);
  CHECK(saw_phdr);

  // Every captured byte belongs to a region.
  uint64_t attributed = 0;
  for (const Region &r : snap.regions)
    attributed += r.captured;
  CHECK(attributed == snap.capturedBytes());
}

/// The manifest lines of fixtures/cores/hold_buffers.manifest.jsonl.
std::vector<nlohmann::json> committedManifest() {
  std::vector<uint8_t> bytes =
      test::readFileBytes(test::sourceDir() + "/fixtures/cores/hold_buffers.manifest.jsonl");
  std::vector<nlohmann::json> lines;
  std::string line;
  for (uint8_t c : bytes) {
    if (c != '\n') {
      line.push_back(static_cast<char>(c));
      continue;
    }
    if (!line.empty())
      lines.push_back(nlohmann::json::parse(line));
    line.clear();
  }
  return lines;
}

} // namespace

TEST_CASE("elf core: the committed hold_buffers core matches its manifest") {
  std::string core = test::unpackedFixture("cores/hold_buffers.core.xz");
  auto snap = mustOpen(core);
  // The build id of the binary the committed core was made from (readelf -n; docs/fixtures.md).
  checkHoldBuffersCore(*snap, committedManifest(), "7abcf2cee33cb7bc95405a6bd5eb5469a5b01eb5");
  // gcore writes byte offsets (page_size 1): the executable's data page is at file offset 0x3000.
  const Region *data = regionAt(*snap, 0x55847f215000);
  REQUIRE(data != nullptr);
  CHECK(data->file_offset == 0x3000);
  CHECK(data->perms.str() == "rw-");
  // The brk heap: the first anonymous rw mapping above the executable.
  const Region *heap = regionAt(*snap, 0x5584abd67000);
  REQUIRE(heap != nullptr);
  CHECK(heap->cls == RegionClass::Heap);
  CHECK(heap->size == 0x4b000);
}

TEST_CASE("elf core: a live gcore of hold_buffers matches what the program printed", "[live]") {
  if (!test::gcoreOrSkipped())
    return;
  std::string program = test::fixtureProgram("hold_buffers");
  test::LiveProcess process(program);
  std::string core = test::scratchDir("elf_core_live") + "/hold_buffers.core";
  process.gcore(core);
  auto snap = mustOpen(core);
  checkHoldBuffersCore(*snap, process.manifest(), buildIdOfFile(program));
}

TEST_CASE("elf core: pyelftools x86_64 kernel core") {
  auto snap = mustOpen(test::sharedDumpsDir() + "/pyelftools_core_linux64.elf");
  CHECK(snap->system.arch == "x86_64");
  CHECK(snap->system.pointer_size == 8);
  CHECK(snap->diagnostics.empty());
  // 19 program headers: one PT_NOTE and 18 PT_LOAD.
  CHECK(snap->regions.size() == 18);
  CHECK(snap->memory.size() == 17); // the p_filesz 0 segment has no bytes

  // Anonymous rw segments with data.
  for (auto [start, size] : std::vector<std::pair<uint64_t, uint64_t>>{{0x7fa459773000, 0x4000},
                                                                       {0x7fa45996e000, 0x3000},
                                                                       {0x7fa45999a000, 0x2000},
                                                                       {0x7fa45999e000, 0x1000}}) {
    INFO("segment at 0x" << std::hex << start);
    const Region *r = regionAt(*snap, start);
    REQUIRE(r != nullptr);
    CHECK(r->size == size);
    CHECK(r->cls == RegionClass::Anonymous);
    CHECK(r->capture() == Capture::Full);
    CHECK(r->perms.str() == "rw-");
    CHECK(r->backing_file.empty());
  }
  // The main stack, found through the thread's rsp.
  const Region *stack = regionAt(*snap, 0x7ffe2e580000);
  REQUIRE(stack != nullptr);
  CHECK(stack->size == 136 * 1024);
  CHECK(stack->cls == RegionClass::Stack);
  REQUIRE(snap->threads.size() == 1);
  CHECK(snap->threads[0].tid == 23395);
  CHECK(snap->threads[0].stack_pointer == 0x7ffe2e5a0358);
  CHECK(snap->threads[0].stack_start == 0x7ffe2e580000);

  // libc text: only the ELF header page was dumped.
  const Region *libc_text = regionAt(*snap, 0x7fa4593ae000);
  REQUIRE(libc_text != nullptr);
  CHECK(libc_text->size == 0x1bf000);
  CHECK(libc_text->captured == 0x1000);
  CHECK(libc_text->capture() == Capture::Partial);
  CHECK(libc_text->cls == RegionClass::Image);
  CHECK(libc_text->perms.str() == "r-x");
  // The PROT_NONE gap of libc: p_filesz 0.
  const Region *gap = regionAt(*snap, 0x7fa45956d000);
  REQUIRE(gap != nullptr);
  CHECK(gap->size == 0x200000);
  CHECK(gap->capture() == Capture::None);
  CHECK(gap->perms.str() == "---");
  CHECK(gap->backing_file == "/lib/x86_64-linux-gnu/libc-2.23.so");
  // Kernel NT_FILE offsets are in pages of 4096: 0x1bf pages.
  CHECK(gap->file_offset == 0x1bf000);
  AddressSpace as(*snap);
  CHECK(as.classify(0x7fa4593ae000 + 0x1000) == Fault::NotCaptured);
  CHECK(as.classify(0x7fa4593ae000) == Fault::None);
  // The captured first page of libc is its ELF header.
  uint8_t magic[4];
  REQUIRE_FALSE(static_cast<bool>(as.read(0x7fa4593ae000, magic)));
  CHECK(std::string(magic, magic + 4) == "\x7f"
                                         "ELF");

  // NT_FILE paths become modules.
  std::vector<std::string> paths;
  for (const Module &m : snap->modules)
    paths.push_back(m.path);
  CHECK(paths == std::vector<std::string>{"/home/max42/pyelftools/test/coredump_self",
                                          "/lib/x86_64-linux-gnu/libc-2.23.so",
                                          "/lib/x86_64-linux-gnu/ld-2.23.so"});
  CHECK(snap->modules[1].start == 0x7fa4593ae000);
  CHECK(snap->modules[1].end == 0x7fa459773000);
  for (const Module &m : snap->modules)
    CHECK(m.build_id.size() == 40);

  // The program never called malloc: no brk heap.
  for (const Region &r : snap->regions)
    CHECK(r.cls != RegionClass::Heap);

  REQUIRE(snap->process.pid.has_value());
  CHECK(*snap->process.pid == 23395);
  CHECK(snap->process.name == "coredump_self");
  CHECK(snap->process.command_line == "./coredump_self foo bar 42");
  CHECK(snap->auxv.size() == 18);
}

TEST_CASE("elf core: pyelftools i386 kernel core") {
  auto snap = mustOpen(test::sharedDumpsDir() + "/pyelftools_core_linux32.elf");
  CHECK(snap->system.arch == "x86");
  CHECK(snap->system.pointer_size == 4);
  CHECK(snap->system.little_endian);
  CHECK(snap->diagnostics.empty());
  // 16 program headers: one PT_NOTE and 15 PT_LOAD.
  CHECK(snap->regions.size() == 15);
  REQUIRE(snap->threads.size() == 1);
  CHECK(snap->threads[0].tid == 11038);
  CHECK(snap->threads[0].stack_pointer == 0xffdad160);
  const Region *stack = regionAt(*snap, 0xffd8e000);
  REQUIRE(stack != nullptr);
  CHECK(stack->size == 0x21000);
  CHECK(stack->cls == RegionClass::Stack);
  // NT_FILE with 32-bit words.
  std::vector<std::string> paths;
  for (const Module &m : snap->modules)
    paths.push_back(m.path);
  CHECK(paths == std::vector<std::string>{"/tmp/coredump", "/lib/i386-linux-gnu/libc-2.27.so",
                                          "/lib/i386-linux-gnu/ld-2.27.so"});
  const Region *libc_data = regionAt(*snap, 0xf7eeb000);
  REQUIRE(libc_data != nullptr);
  CHECK(libc_data->backing_file == "/lib/i386-linux-gnu/libc-2.27.so");
  CHECK(libc_data->file_offset == 0x1d7000);
  CHECK(libc_data->cls == RegionClass::Image);
  const Region *libc_text = regionAt(*snap, 0xf7d13000);
  REQUIRE(libc_text != nullptr);
  CHECK(libc_text->capture() == Capture::Partial);
  for (const Region &r : snap->regions)
    CHECK(r.cls != RegionClass::Heap);
  REQUIRE(snap->process.pid.has_value());
  CHECK(*snap->process.pid == 11038);
  CHECK(snap->process.name == "coredump");
  CHECK(snap->process.command_line == "./coredump foo bar 42");
}

TEST_CASE("ELF core: lldb's NetBSD core, threads from the per-LWP notes, name from procinfo") {
  // lldb's test core of a 2-LWP process killed by SIGSEGV (../shared/dumps/README.md); readelf -n
  // shows the procinfo note (pid 665, "2lwp_process_SIG", 2 LWPs) and the PT_GETREGS notes of
  // NetBSD-CORE@2 and NetBSD-CORE@1, whose rsp (register 24) is read here as readelf prints it.
  auto snap = mustOpen(test::sharedDumpsDir() + "/lldb_netbsd-2lwp-process-sigsegv.amd64.core");
  CHECK(snap->system.os == Os::NetBsd);
  CHECK(snap->system.arch == "x86_64");
  CHECK(snap->process.pid == 665u);
  CHECK(snap->process.name == "2lwp_process_SIG");
  REQUIRE(snap->threads.size() == 2);
  CHECK(snap->threads[0].tid == 2);
  CHECK(snap->threads[0].stack_pointer == 0x7f7ff7704f90);
  CHECK(snap->threads[1].tid == 1);
  CHECK(snap->threads[1].stack_pointer == 0x7f7fffffe038);
  CHECK(snap->diagnostics.empty());
}
