// The minidump reader on hand-made files: well-formed ones that pin every field's offset, and
// hostile ones (cut short, lying counts, locations past EOF, duplicates), plus truncation and
// mutation sweeps over every real dump. The writer (support/minidump_writer.h) spells out each
// layout itself and shares nothing with the parser or LLVM's structs, so a wrong offset in the
// parser fails here instead of being copied into the fixture.
#include "../../src/dump/minidump_streams.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"
#include "support/byte_builder.h"
#include "support/minidump_writer.h"
#include "support/test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <random>

using namespace dumpsift;
using namespace dumpsift::test::mdmp;

namespace {

// ---- Opening and checking -----------------------------------------------------------------------

// Opens `bytes` through the in-memory seam, as "hand-made.dmp".
llvm::Expected<std::unique_ptr<Snapshot>> openBytes(const std::vector<uint8_t> &bytes) {
  llvm::StringRef data(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  return openDump(llvm::MemoryBuffer::getMemBufferCopy(data, "hand-made.dmp"));
}

// The error message of a file that must be refused; it must be one line.
std::string errorOf(const std::vector<uint8_t> &bytes) {
  auto snap = openBytes(bytes);
  if (snap) {
    FAIL("the file was accepted");
    return "";
  }
  std::string message = llvm::toString(snap.takeError());
  CHECK(!message.empty());
  CHECK(message.find('\n') == std::string::npos);
  return message;
}

// Every warning, for INFO.
std::string warningsText(const Snapshot &snap) {
  std::string out;
  for (const Diagnostic &d : snap.diagnostics.warnings())
    out += d.where + ": " + d.message + "\n";
  return out;
}

// Whether some warning's `where` contains `where` and its message contains `message`.
bool hasWarning(const Snapshot &snap, std::string_view where, std::string_view message) {
  for (const Diagnostic &d : snap.diagnostics.warnings())
    if (d.where.find(where) != std::string::npos && d.message.find(message) != std::string::npos)
      return true;
  return false;
}

// The invariants every snapshot keeps, whatever the input: memory views lie inside the file,
// memory and regions are sorted and disjoint, every captured byte is in exactly one region.
void checkInvariants(const Snapshot &snap) {
  // One assertion per snapshot, naming the first broken invariant: the sweeps below open
  // thousands of snapshots of thousands of regions, and an assertion per region made the test
  // cost minutes under the sanitizers.
  const uint8_t *lo = reinterpret_cast<const uint8_t *>(snap.file->getBufferStart());
  const uint8_t *hi = lo + snap.file->getBufferSize();
  std::string broken;
  for (size_t i = 0; i < snap.memory.size() && broken.empty(); ++i) {
    const MemoryRange &m = snap.memory[i];
    if (m.bytes.empty())
      broken = "an empty memory range";
    else if (m.bytes.data() < lo || m.bytes.data() + m.bytes.size() > hi)
      broken = "a memory range's bytes outside the file";
    else if (m.start + m.bytes.size() <= m.start)
      broken = "a memory range past the end of the address space";
    else if (i > 0 && snap.memory[i - 1].end() > m.start)
      broken = "memory ranges out of order or overlapping";
    if (!broken.empty())
      broken += " (memory range " + std::to_string(i) + ")";
  }
  uint64_t captured = 0;
  for (size_t i = 0; i < snap.regions.size() && broken.empty(); ++i) {
    const Region &r = snap.regions[i];
    if (r.size == 0)
      broken = "an empty region";
    else if (r.captured > r.size)
      broken = "a region capturing more than its size";
    else if (i > 0 && snap.regions[i - 1].end() > r.start)
      broken = "regions out of order or overlapping";
    if (!broken.empty())
      broken += " (region " + std::to_string(i) + ")";
    captured += r.captured;
  }
  if (broken.empty() && captured != snap.capturedBytes())
    broken = "the regions' captured bytes are not the snapshot's";
  INFO(broken);
  REQUIRE(broken.empty());
}

// Opens `bytes`; either a one-line error or a snapshot that keeps the invariants.
void openAndCheck(const std::vector<uint8_t> &bytes) {
  auto snap = openBytes(bytes);
  if (!snap) {
    std::string message = llvm::toString(snap.takeError());
    REQUIRE(!message.empty());
    REQUIRE(message.find('\n') == std::string::npos);
    return;
  }
  checkInvariants(**snap);
}

// Opens `bytes`, FAILing on an error, and checks the invariants.
std::unique_ptr<Snapshot> mustOpen(const std::vector<uint8_t> &bytes) {
  auto snap = openBytes(bytes);
  if (!snap)
    FAIL(llvm::toString(snap.takeError()));
  checkInvariants(**snap);
  return std::move(*snap);
}

// The region starting at `start`, or nullptr.
const Region *regionAt(const Snapshot &snap, uint64_t start) {
  for (const Region &r : snap.regions)
    if (r.start == start)
      return &r;
  return nullptr;
}

// A small valid Linux minidump used as the base of several hostile cases: SystemInfo first, then
// a LinuxMaps stream of two lines.
constexpr std::string_view kTwoMaps = "00400000-00401000 r-xp 00000000 08:01 12 /bin/x\n"
                                      "00600000-00700000 rw-p 00000000 00:00 0 [heap]\n";

// The hand-made Windows dump of the first test case (also a sweep input).
std::vector<uint8_t> windowsDump() {
  MdmpWriter w(7);
  uint32_t stack_rva = w.blob(pattern(0x100, 0x10));
  uint32_t ctx_rva = w.blob(amd64Context(0x20080));
  uint32_t name_rva = w.blob(mdString("C:\\app\\demo.exe"));
  test::ByteWriter cv;
  cv.text("RSDS");
  for (int i = 0; i < 16; ++i)
    cv.u8(static_cast<uint8_t>(i * 0x11)); // GUID bytes 00 11 22 ... ff
  cv.u32(0x2a).text("demo.pdb").u8(0);
  uint32_t cv_rva = w.blob(cv.bytes);
  uint32_t code_rva = w.blob("MZ demo image..."); // 16 bytes
  uint32_t heap_rva = w.blob(pattern(0x20, 0xa0));
  w.blob(pattern(0x10, 0x40)); // the second Memory64List range, right after the first

  w.stream(SystemInfoType, systemInfo(kAmd64, kWin32NT));
  w.stream(MiscInfoType, miscInfo(4242));
  w.stream(ThreadListType, threadList({{7, 0x20000, 0x100, stack_rva, 1232, ctx_rva}}));
  w.stream(ModuleListType, moduleList({{0x400000, 0x3000, name_rva, 24 + 9, cv_rva}}));
  // The stack again, as real writers do, plus 16 bytes of the image.
  w.stream(MemoryListType, memoryList({{0x400000, 16, code_rva}, {0x20000, 0x100, stack_rva}}));
  w.stream(Memory64ListType, memory64List(2, heap_rva, {{0x30000, 0x20}, {0x31000, 0x10}}));
  w.stream(MemoryInfoListType, memoryInfoList({
                                   {0x0, 0x10000, kFree, 0x01, 0},
                                   {0x10000, 0x10000, kReserve, 0, kPrivate},
                                   {0x20000, 0x1000, kCommit, 0x04, kPrivate},
                                   {0x21000, 0xf000, kFree, 0x01, 0},
                                   {0x30000, 0x2000, kCommit, 0x04, kPrivate},
                                   {0x32000, 0x1000, kCommit, 0x02, kPrivate},
                                   {0x400000, 0x1000, kCommit, 0x02, kImage},
                                   {0x401000, 0x2000, kCommit, 0x20, kImage},
                                   {0x500000, 0x1000, kCommit, 0x04, kMapped},
                               }));
  return w.finish();
}

} // namespace

TEST_CASE("minidump: hand-made Windows dump puts every field where it belongs") {
  auto snap = mustOpen(windowsDump());
  INFO(warningsText(*snap));
  CHECK(snap->diagnostics.empty());
  CHECK(snap->system.os == Os::Windows);
  CHECK(snap->system.arch == "x86_64");
  CHECK(snap->process.pid == 4242u);
  CHECK(snap->process.name == "demo.exe");

  REQUIRE(snap->modules.size() == 1);
  CHECK(snap->modules[0].path == "C:\\app\\demo.exe");
  CHECK(snap->modules[0].start == 0x400000);
  CHECK(snap->modules[0].end == 0x403000);
  // GUID {33221100-5544-7766-8899-aabbccddeeff}, age 0x2a.
  CHECK(snap->modules[0].build_id == "33221100554477668899aabbccddeeff2a");

  REQUIRE(snap->threads.size() == 1);
  CHECK(snap->threads[0].tid == 7);
  CHECK(snap->threads[0].stack_pointer == 0x20080);
  CHECK(snap->threads[0].stack_start == 0x20000);
  CHECK(snap->threads[0].stack_end == 0x20100);

  // Memory64List (2), MemoryList (2); the thread's own stack descriptor repeats a MemoryList range.
  REQUIRE(snap->memory.size() == 4);
  CHECK(snap->capturedBytes() == 0x20 + 0x10 + 16 + 0x100);

  // 9 MemoryInfo entries, 2 free: 7 regions.
  REQUIRE(snap->regions.size() == 7);
  const Region *reserve = regionAt(*snap, 0x10000);
  REQUIRE(reserve);
  CHECK(reserve->perms.str() == "---");
  CHECK(reserve->cls == RegionClass::Other);
  CHECK(reserve->mdmp_state == kReserve);
  CHECK(reserve->capture() == Capture::None);
  const Region *stack = regionAt(*snap, 0x20000);
  REQUIRE(stack);
  CHECK(stack->cls == RegionClass::Stack);
  CHECK(stack->captured == 0x100);
  const Region *heap = regionAt(*snap, 0x30000);
  REQUIRE(heap);
  CHECK(heap->cls == RegionClass::Anonymous);
  CHECK(heap->perms.str() == "rw-");
  CHECK(heap->captured == 0x30);
  CHECK(heap->mdmp_type == kPrivate);
  const Region *readonly = regionAt(*snap, 0x32000);
  REQUIRE(readonly);
  CHECK(readonly->cls == RegionClass::Other);
  CHECK(readonly->perms.str() == "r--");
  const Region *header = regionAt(*snap, 0x400000);
  REQUIRE(header);
  CHECK(header->cls == RegionClass::Image);
  CHECK(header->backing_file == "C:\\app\\demo.exe");
  CHECK(header->capture() == Capture::Partial);
  const Region *text = regionAt(*snap, 0x401000);
  REQUIRE(text);
  CHECK(text->perms.str() == "r-x");
  CHECK(text->backing_file == "C:\\app\\demo.exe");
  const Region *mapped = regionAt(*snap, 0x500000);
  REQUIRE(mapped);
  CHECK(mapped->cls == RegionClass::Image);
  CHECK(mapped->backing_file.empty());

  // The bytes read back are the bytes written, the Memory64List ranges back to back.
  AddressSpace as(*snap);
  std::vector<uint8_t> heap_bytes(0x20), second(0x10), image(16);
  REQUIRE_FALSE(static_cast<bool>(as.read(0x30000, heap_bytes)));
  CHECK(heap_bytes == pattern(0x20, 0xa0));
  REQUIRE_FALSE(static_cast<bool>(as.read(0x31000, second)));
  CHECK(second == pattern(0x10, 0x40));
  REQUIRE_FALSE(static_cast<bool>(as.read(0x400000, image)));
  CHECK(std::string(image.begin(), image.end()) == "MZ demo image...");
  uint64_t word = 0;
  REQUIRE(as.readU64(0x20000, word));
  CHECK(word == 0x1716151413121110ull);
  CHECK(as.classify(0x30020) == Fault::NotCaptured);
  CHECK(as.classify(0x10000) == Fault::NotCaptured); // reserved: listed, nothing captured
  CHECK(as.classify(0x5000) == Fault::Unmapped);     // free
}

TEST_CASE("minidump: a WOW64 process's 32-bit stacks, both PEBs and no 64-bit reservation") {
  // A 32-bit process on 64-bit Windows as a 64-bit dbghelp writes it: AMD64 system and contexts,
  // wow64.dll loaded, the thread's stack descriptor its 32-bit stack from the stack pointer up.
  // The 64-bit TEB (NT_TIB: +0 ExceptionList, +8 StackBase, +0x10 StackLimit, +0x30 Self; +0x60
  // ProcessEnvironmentBlock) names the 32-bit TEB two pages on (NT_TIB32: +4 StackBase,
  // +8 StackLimit, +0x18 Self; +0x30 ProcessEnvironmentBlock).
  constexpr uint64_t teb = 0x7efdb000, teb32 = teb + 0x2000, peb = 0x7efdf000, peb32 = 0x7efde000;
  test::ByteWriter tebs;
  tebs.zeros(0x3000);
  tebs.put(0x0, teb32, 8).put(0x8, 0x1d0000, 8).put(0x10, 0x1cc000, 8).put(0x30, teb, 8);
  tebs.put(0x60, peb, 8);
  tebs.put(0x2004, 0x340000, 4).put(0x2008, 0x33d000, 4).put(0x2018, teb32, 4);
  tebs.put(0x2030, peb32, 4);
  MdmpWriter w(6);
  const uint32_t tebs_rva = w.blob(tebs.bytes);
  const uint32_t stack32_rva = w.blob(pattern(0x3b8, 0x20));
  const uint32_t stack64_rva = w.blob(pattern(0x2000, 0x30));
  const uint32_t ctx_rva = w.blob(amd64Context(0x1ceae0));
  const uint32_t exe_rva = w.blob(mdString("C:\\Windows\\SysWOW64\\notepad.exe"));
  const uint32_t wow64_rva = w.blob(mdString("C:\\Windows\\System32\\wow64.dll"));
  test::ByteWriter threads;
  threads.u32(1).u32(9).u32(0).u32(0).u32(0).u64(teb).u64(0x33fc48).u32(0x3b8).u32(stack32_rva);
  threads.u32(1232).u32(ctx_rva);
  w.stream(SystemInfoType, systemInfo(kAmd64, kWin32NT));
  w.stream(ThreadListType, threads.bytes);
  w.stream(ModuleListType, moduleList({{0x240000, 0x30000, exe_rva, 0, 0},
                                       {0x75380000, 0x3f000, wow64_rva, 0, 0}}));
  w.stream(MemoryListType, memoryList({{teb, 0x3000, tebs_rva}}));
  w.stream(Memory64ListType, memory64List(1, stack64_rva, {{0x1ce000, 0x2000}}));
  w.stream(MemoryInfoListType, memoryInfoList({
                                   {0x1cc000, 0x2000, kReserve, 0, kPrivate},
                                   {0x1ce000, 0x2000, kCommit, 0x04, kPrivate},
                                   {0x33d000, 0x3000, kCommit, 0x04, kPrivate},
                                   {0x7efdb000, 0x3000, kCommit, 0x04, kPrivate},
                                   {0x100000000, 0x100000000, kReserve, 0, kPrivate},
                                   {0x200000000, 0x1000, kCommit, 0x04, kPrivate},
                                   {0x200001000, 0x7ffd00000000, kReserve, 0, kPrivate},
                               }));
  auto snap = mustOpen(w.finish());
  INFO(warningsText(*snap));
  CHECK(snap->system.wow64);
  CHECK(snap->system.pointer_size == 8);
  CHECK(snap->process.peb == peb);
  CHECK(snap->process.peb32 == peb32);
  REQUIRE(snap->threads.size() == 1);
  const Thread &t = snap->threads[0];
  CHECK(t.teb32 == teb32);
  CHECK(t.stack_pointer == 0x33fc48); // the 32-bit one: where the descriptor starts
  CHECK(t.stack_start == 0x33d000);   // the 32-bit TEB's bounds
  CHECK(t.stack_end == 0x340000);
  CHECK(t.stack_source == RegionSource::Teb);
  CHECK(t.wow64_stack_pointer == 0x1ceae0);
  CHECK(t.wow64_stack_start == 0x1cc000);
  CHECK(t.wow64_stack_end == 0x1d0000);
  const Region *stack32 = regionAt(*snap, 0x33d000);
  REQUIRE(stack32);
  CHECK(stack32->cls == RegionClass::Stack);
  const Region *stack64 = regionAt(*snap, 0x1ce000);
  REQUIRE(stack64);
  CHECK(stack64->cls == RegionClass::Stack);
  // Above 4 GiB only the committed page is a region: the reservations around it are not.
  uint64_t above = 0;
  for (const Region &r : snap->regions)
    if (r.end() > (uint64_t(1) << 32))
      above += r.size;
  CHECK(above == 0x1000);
  CHECK(regionAt(*snap, 0x200000000) != nullptr);
}

TEST_CASE("minidump: hand-made Linux dump reads LinuxMaps, status, cmdline and auxv") {
  MdmpWriter w(7);
  uint32_t heap_rva = w.blob(pattern(64, 1));
  uint32_t anon_rva = w.blob(pattern(32, 0x80));
  uint32_t stack_rva = w.blob(pattern(0x100, 0));
  uint32_t ctx_rva = w.blob(amd64Context(0x7ffc00020010));
  w.stream(SystemInfoType, systemInfo(kAmd64, kLinux));
  w.stream(LinuxMapsType,
           "00400000-00401000 r-xp 00000000 08:01 1234                     /usr/bin/demo\n"
           "00601000-00602000 rw-p 00001000 08:01 1234                     /usr/bin/demo\r\n"
           "00700000-00800000 rw-p 00000000 00:00 0                        [heap]\n"
           "7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
           "7f0000100000-7f0000101000 r--p 00000000 00:00 0\n"
           "7f0000200000-7f0000201000 rw-s 00000000 00:05 77               /memfd:buf (deleted)\n"
           "7f0000300000-7f0000301000 r-xp 00002000 08:01 99   /opt/my lib/libx.so (deleted)\n"
           "this line is garbage\n"
           "\n"
           "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                [stack]\n"
           "7ffc00100000-7ffc00102000 r-xp 00000000 00:00 0                [vdso]\n");
  w.stream(LinuxProcStatusType, "Name:\tdemo\nUmask:\t0022\nTgid:\t4321\nNgid:\t0\nPid:\t4322\n");
  w.stream(LinuxCmdLineType, std::string_view("/usr/bin/demo\0--flag\0value\0", 27));
  test::ByteWriter auxv;
  auxv.u64(6).u64(4096).u64(9).u64(0x400100).u64(0).u64(0).u64(7).u64(7); // after AT_NULL: ignored
  w.stream(LinuxAuxvType, auxv.bytes);
  w.stream(MemoryListType, memoryList({{0x700000, 64, heap_rva},
                                       {0x7f0000000000, 32, anon_rva},
                                       {0x7ffc00020000, 0x100, stack_rva}}));
  w.stream(ThreadListType, threadList({{4322, 0x7ffc00020000, 0x100, stack_rva, 1232, ctx_rva}}));
  auto snap = mustOpen(w.finish());
  INFO(warningsText(*snap));

  std::vector<Diagnostic> warnings = snap->diagnostics.warnings();
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].where == "stream LinuxMaps (0x47670009)");
  CHECK(warnings[0].message ==
        "1 of 10 lines are not /proc/PID/maps lines (first: line 8); they were skipped");

  CHECK(snap->system.os == Os::Linux);
  CHECK(snap->process.name == "demo");
  CHECK(snap->process.pid == 4321u); // Tgid, not the thread's Pid
  CHECK(snap->process.command_line == "/usr/bin/demo --flag value");
  CHECK(snap->auxv == std::vector<std::pair<uint64_t, uint64_t>>{{6, 4096}, {9, 0x400100}});

  REQUIRE(snap->regions.size() == 9);
  const Region *data = regionAt(*snap, 0x601000);
  REQUIRE(data);
  CHECK(data->cls == RegionClass::Image);
  CHECK(data->backing_file == "/usr/bin/demo");
  CHECK(data->file_offset == 0x1000);
  CHECK(data->perms.str() == "rw-");
  const Region *heap = regionAt(*snap, 0x700000);
  REQUIRE(heap);
  CHECK(heap->cls == RegionClass::Heap);
  CHECK(heap->captured == 64);
  const Region *anon = regionAt(*snap, 0x7f0000000000);
  REQUIRE(anon);
  CHECK(anon->cls == RegionClass::Anonymous);
  CHECK(anon->captured == 32);
  const Region *ro = regionAt(*snap, 0x7f0000100000);
  REQUIRE(ro);
  CHECK(ro->cls == RegionClass::Other);
  const Region *memfd = regionAt(*snap, 0x7f0000200000);
  REQUIRE(memfd);
  CHECK(memfd->cls == RegionClass::Anonymous);
  CHECK(memfd->backing_file.empty());
  const Region *lib = regionAt(*snap, 0x7f0000300000);
  REQUIRE(lib);
  CHECK(lib->cls == RegionClass::Image);
  CHECK(lib->backing_file == "/opt/my lib/libx.so (deleted)");
  CHECK(lib->file_offset == 0x2000);
  const Region *stack = regionAt(*snap, 0x7ffc00000000);
  REQUIRE(stack);
  CHECK(stack->cls == RegionClass::Stack);
  CHECK(stack->captured == 0x100);
  const Region *vdso = regionAt(*snap, 0x7ffc00100000);
  REQUIRE(vdso);
  CHECK(vdso->cls == RegionClass::Image);

  REQUIRE(snap->threads.size() == 1);
  CHECK(snap->threads[0].stack_pointer == 0x7ffc00020010);
  AddressSpace as(*snap);
  std::vector<uint8_t> got(64);
  REQUIRE_FALSE(static_cast<bool>(as.read(0x700000, got)));
  CHECK(got == pattern(64, 1));
  CHECK(as.classify(0x700040) == Fault::NotCaptured);
}

TEST_CASE("minidump: without a region map the captured ranges are the regions") {
  MdmpWriter w(4);
  uint32_t code_rva = w.blob(pattern(32, 0x90));
  uint32_t stack_rva = w.blob(pattern(0x80, 0));
  uint32_t ctx_rva = w.blob(x86Context(0x12ff40));
  uint32_t name_rva = w.blob(mdString("C:\\x86\\app.exe"));
  w.stream(SystemInfoType, systemInfo(kX86, kWin32NT));
  w.stream(ModuleListType, moduleList({{0x401000, 0x1000, name_rva, 0, 0}}));
  w.stream(MemoryListType, memoryList({{0x401100, 32, code_rva}, {0x12ff00, 0x80, stack_rva}}));
  w.stream(ThreadListType, threadList({{1, 0x12ff00, 0x80, stack_rva, 716, ctx_rva}}));
  auto snap = mustOpen(w.finish());
  INFO(warningsText(*snap));
  CHECK(snap->diagnostics.empty());
  CHECK(snap->system.arch == "x86");
  CHECK(snap->system.pointer_size == 4);
  REQUIRE(snap->threads.size() == 1);
  CHECK(snap->threads[0].stack_pointer == 0x12ff40); // Esp of the x86 context
  REQUIRE(snap->regions.size() == 2);
  CHECK(snap->regions[0].start == 0x12ff00);
  CHECK(snap->regions[0].cls == RegionClass::Stack);
  CHECK(snap->regions[0].capture() == Capture::Full);
  CHECK(snap->regions[1].start == 0x401100);
  CHECK(snap->regions[1].cls == RegionClass::Image);
  CHECK(snap->regions[1].backing_file == "C:\\x86\\app.exe");
}

TEST_CASE("minidump: a Linux MemoryInfoList takes classes and files from matching maps lines") {
  // Linux writers (rust minidump-writer) mark every private mapping MEM_PRIVATE, files included;
  // the LinuxMaps line with the same range says what it really is.
  MdmpWriter w(5);
  uint32_t argv_rva = w.blob(std::string_view("/opt/my app/bin\0-v\0", 19));
  w.stream(SystemInfoType, systemInfo(kAmd64, kLinux));
  w.stream(MemoryInfoListType, memoryInfoList({
                                   {0x400000, 0x1000, kCommit, 0x20, kPrivate},
                                   {0x600000, 0x100000, kCommit, 0x04, kPrivate},
                                   {0x800000, 0x1000, kCommit, 0x04, kPrivate},
                               }));
  w.stream(LinuxMapsType, std::string(kTwoMaps) + "00800000-00802000 rw-p 00000000 00:00 0\n");
  w.entry(LinuxCmdLineType, 19, argv_rva);
  w.stream(MemoryListType, memoryList({{0x600000, 8, argv_rva}}));
  auto snap = mustOpen(w.finish());
  INFO(warningsText(*snap));
  CHECK(snap->diagnostics.empty());
  CHECK(snap->process.command_line == "/opt/my app/bin -v");
  CHECK(snap->process.name == "bin");
  REQUIRE(snap->regions.size() == 3);
  CHECK(snap->regions[0].cls == RegionClass::Image);
  CHECK(snap->regions[0].backing_file == "/bin/x");
  CHECK(snap->regions[0].perms.str() == "r-x");
  CHECK(snap->regions[0].mdmp_type == kPrivate);
  CHECK(snap->regions[1].cls == RegionClass::Heap);
  CHECK(snap->regions[1].captured == 8);
  // The maps line at 0x800000 is longer than the MemoryInfo entry: no match, MemoryInfo decides.
  CHECK(snap->regions[2].cls == RegionClass::Anonymous);
  CHECK(snap->regions[2].size == 0x1000);
}

TEST_CASE("minidump: broken headers and directories give one-line errors") {
  CHECK(errorOf({}) == "empty file");
  CHECK(errorOf({'M', 'Z', 0x90, 0}) == "not a core dump or minidump (unrecognised magic)");
  // A Breakpad microdump as Android's logcat holds it (the line layout of Breakpad's
  // microdump_writer: "O" for the OS line, "S" for stack lines), after another log line.
  const std::string microdump = "I/ActivityManager( 512): Start proc\n"
                                "W/google-breakpad( 3745): -----BEGIN BREAKPAD MICRODUMP-----\n"
                                "W/google-breakpad( 3745): O A arm 04 armv7l 3.4.0\n"
                                "W/google-breakpad( 3745): S 0 BEF9AA48 BEF9A000 00001000\n"
                                "W/google-breakpad( 3745): -----END BREAKPAD MICRODUMP-----\n";
  CHECK(errorOf(std::vector<uint8_t>(microdump.begin(), microdump.end())) ==
        "a Breakpad microdump (text from a log), which dumpsift does not read: it reads ELF core "
        "dumps and minidumps");
  CHECK(errorOf({'M', 'D', 'M', 'P', 0x93, 0xa7}) == "truncated minidump header (6 of 32 bytes)");

  std::vector<uint8_t> good = windowsDump();
  std::vector<uint8_t> bad_version = good;
  bad_version[4] = 0x34;
  bad_version[5] = 0x12;
  CHECK(errorOf(bad_version) == "unsupported minidump version 0x1234 (expected 0xa793)");

  test::ByteWriter past;
  past.u32(0x504d444d).u32(0xa793).u32(1).u32(0x1000).u32(0).u32(0).u64(0).zeros(32);
  CHECK(errorOf(past.bytes) ==
        "stream directory at 0x1000 lies past the end of the file (64 bytes)");

  test::ByteWriter cut;
  cut.u32(0x504d444d).u32(0xa793).u32(3).u32(32).u32(0).u32(0).u64(0).zeros(8);
  CHECK(errorOf(cut.bytes) == "stream directory at 0x20 is cut short by the end of the file");
}

TEST_CASE("dump formats that hold no process dumpsift reads are named in the refusal") {
  // A real Windows kernel (bug check) minidump from a public repository
  // (../shared/not-process-dumps/README.md): PAGEDU64, DumpType 4 at +0xF98, build 19041 at
  // +0xC, bug check 0x50 (PAGE_FAULT_IN_NONPAGED_AREA) at +0x38.
  const std::string kernel =
      std::string(DUMPSIFT_SHARED_DIR) + "/not-process-dumps/win_kernel_minidump_pagedu64.dmp";
  auto opened = openDump(kernel);
  const bool opened_ok = static_cast<bool>(opened);
  REQUIRE_FALSE(opened_ok);
  CHECK(llvm::toString(opened.takeError()) ==
        "a Windows kernel crash dump (PAGEDU64, 64-bit, Windows build 19041, small memory "
        "(triage) dump, bug check 0x50), which dumpsift does not read: it reads process dumps "
        "(ELF core dumps and minidumps)");
  // Hand-laid headers of the other formats, from their magic alone.
  auto refusal = [](llvm::StringRef magic) {
    std::vector<uint8_t> bytes(magic.begin(), magic.end());
    bytes.resize(64);
    return errorOf(bytes);
  };
  CHECK(refusal("PAGEDUMP") == "a Windows kernel crash dump (PAGEDUMP, 32-bit), which dumpsift "
                               "does not read: it reads process dumps (ELF core dumps and "
                               "minidumps)");
  CHECK(llvm::StringRef(refusal("USERDU64"))
            .startswith("an old-format Windows user-mode crash dump (USERDU64"));
  CHECK(llvm::StringRef(refusal("KDUMP   ")).startswith("a Linux kernel crash dump (makedumpfile"));
  CHECK(llvm::StringRef(refusal("DISKDUMP")).startswith("a Linux kernel crash dump (diskdump"));
  CHECK(llvm::StringRef(refusal("EMiL")).startswith("a LiME physical memory image"));
  CHECK(llvm::StringRef(refusal("HIBR")).startswith("a Windows hibernation file"));
  // A Mach-O core header: MH_MAGIC_64, then cputype, cpusubtype and filetype MH_CORE (4).
  test::ByteWriter macho;
  macho.u32(0xfeedfacf).u32(0x01000007).u32(3).u32(4).zeros(48);
  CHECK(llvm::StringRef(errorOf(macho.bytes)).startswith("a Mach-O core dump"));
}

TEST_CASE("minidump: a directory claiming 2^32-1 streams reads the entries the file holds") {
  MdmpWriter w(2);
  w.stream(SystemInfoType, systemInfo(kAmd64, kLinux));
  w.stream(LinuxMapsType, kTwoMaps);
  std::vector<uint8_t> bytes = w.finish();
  bytes[8] = bytes[9] = bytes[10] = bytes[11] = 0xff;
  auto start = std::chrono::steady_clock::now();
  auto snap = mustOpen(bytes);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  INFO(warningsText(*snap));
  CHECK(hasWarning(*snap, "minidump directory", "claims 4294967295 streams, the file holds only"));
  CHECK(snap->system.os == Os::Linux);
  CHECK(regionAt(*snap, 0x600000) != nullptr);
}

TEST_CASE("minidump: stream locations past the end of the file are skipped or clipped") {
  MdmpWriter w(3);
  w.stream(SystemInfoType, systemInfo(kAmd64, kLinux));
  w.entry(MemoryListType, 16, 0x7fffffff); // wholly past EOF
  w.entry(LinuxMapsType, 5000, w.next());  // runs past EOF
  w.out.text(kTwoMaps);
  auto snap = mustOpen(w.finish());
  INFO(warningsText(*snap));
  CHECK(hasWarning(*snap, "stream MemoryList (0x00000005) (directory entry 1)",
                   "lies at 0x7fffffff, past the end of the file"));
  CHECK(hasWarning(*snap, "stream LinuxMaps", "claims 5000 bytes at 0x7c, the file holds only 95"));
  CHECK(snap->system.os == Os::Linux);
  REQUIRE(snap->regions.size() == 2);
  CHECK(snap->regions[1].cls == RegionClass::Heap);
  CHECK(snap->memory.empty());
}

TEST_CASE("minidump: a repeated stream type keeps the first and warns") {
  MdmpWriter w(4);
  w.stream(SystemInfoType, systemInfo(kAmd64, kLinux));
  w.stream(SystemInfoType, systemInfo(kX86, kWin32NT));
  w.stream(LinuxMapsType, kTwoMaps);
  w.stream(LinuxMapsType, "00900000-00901000 rw-p 00000000 00:00 0\n");
  auto snap = mustOpen(w.finish());
  INFO(warningsText(*snap));
  CHECK(snap->system.os == Os::Linux);
  CHECK(snap->system.arch == "x86_64");
  CHECK(hasWarning(*snap, "stream SystemInfo (0x00000007) (directory entry 1)",
                   "repeats a stream type seen earlier; only the first is read"));
  CHECK(hasWarning(*snap, "stream LinuxMaps (0x47670009) (directory entry 3)", "repeats"));
  CHECK(snap->regions.size() == 2);
  CHECK(regionAt(*snap, 0x900000) == nullptr);
}

TEST_CASE("minidump: thousands of repeated stream types cost 33 warnings, not thousands") {
  constexpr uint32_t kRepeats = 3000;
  MdmpWriter w(1 + kRepeats);
  w.stream(SystemInfoType, systemInfo(kAmd64, kLinux));
  for (uint32_t i = 0; i < kRepeats; ++i)
    w.stream(SystemInfoType, systemInfo(kX86, kWin32NT));
  auto snap = mustOpen(w.finish());
  INFO(warningsText(*snap));
  CHECK(snap->system.arch == "x86_64");
  CHECK(hasWarning(*snap, "stream SystemInfo (0x00000007) (directory entry 32)", "repeats"));
  CHECK_FALSE(hasWarning(*snap, "stream SystemInfo (0x00000007) (directory entry 33)", "repeats"));
  CHECK(hasWarning(*snap, "minidump directory",
                   "2968 more damaged entries (repeated, past the end of the file or cut short) "
                   "not listed"));
  CHECK(snap->diagnostics.warnings().size() == 33);
}

TEST_CASE("minidump: Memory64List with lying counts and sizes") {
  SECTION("2^32 ranges claimed, 2 present") {
    MdmpWriter w(2);
    uint32_t base = w.blob(pattern(24, 0x61));
    w.stream(SystemInfoType, systemInfo(kAmd64, kWin32NT));
    w.stream(Memory64ListType, memory64List(1ull << 32, base, {{0x1000, 16}, {0x2000, 8}}));
    auto start = std::chrono::steady_clock::now();
    auto snap = mustOpen(w.finish());
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
    INFO(warningsText(*snap));
    CHECK(hasWarning(*snap, "stream Memory64List (0x00000009)",
                     "claims 4294967296 ranges, only 2 fit in its 48 bytes"));
    REQUIRE(snap->memory.size() == 2);
    AddressSpace as(*snap);
    std::vector<uint8_t> first(16), second(8);
    REQUIRE_FALSE(static_cast<bool>(as.read(0x1000, first)));
    REQUIRE_FALSE(static_cast<bool>(as.read(0x2000, second)));
    CHECK(first == pattern(16, 0x61));
    CHECK(second == pattern(8, 0x61 + 16));
  }
  SECTION("a range running past the end of the file is clipped, later ones dropped") {
    MdmpWriter w(1);
    w.stream(Memory64ListType, memory64List(3, 0, {{0x1000, 16}, {0x2000, 0x1000}, {0x9000, 4}}));
    std::vector<uint8_t> bytes = w.finish();
    uint64_t base = bytes.size();
    // BaseRva sits at stream offset 8 (stream at 32 + 12).
    for (int i = 0; i < 8; ++i)
      bytes[44 + 8 + i] = static_cast<uint8_t>(base >> (8 * i));
    std::vector<uint8_t> data = pattern(24, 0x30); // 16 for the first, 8 of 0x1000 for the second
    bytes.insert(bytes.end(), data.begin(), data.end());
    auto snap = mustOpen(bytes);
    INFO(warningsText(*snap));
    CHECK(hasWarning(*snap, "Memory64List",
                     "range 1 at 0x2000: 8 of 4096 bytes in the file; the rest and 1 later ranges "
                     "not read"));
    REQUIRE(snap->memory.size() == 2);
    CHECK(snap->memory[1].start == 0x2000);
    CHECK(snap->memory[1].bytes.size() == 8);
    CHECK(snap->memory[1].bytes[0] == 0x40);
    CHECK(snap->system.os == Os::Unknown);
    CHECK(hasWarning(*snap, "minidump", "no SystemInfo stream"));
  }
  SECTION("BaseRva past the end of the file") {
    MdmpWriter w(1);
    w.stream(Memory64ListType, memory64List(1, 0xfffffffff0ull, {{0x1000, 16}}));
    auto snap = mustOpen(w.finish());
    CHECK(hasWarning(*snap, "Memory64List",
                     "range 0 at 0x1000: its data at file offset 0xfffffffff0 lies past the end of "
                     "the file; it and 0 later ranges not read"));
    CHECK(snap->memory.empty());
  }
  SECTION("a size of 2^64-1 is clipped to the file, and nothing after it wraps") {
    MdmpWriter w(1);
    w.stream(Memory64ListType, memory64List(2, 32, {{0x1000, ~0ull}, {0x5000, 0x10}}));
    auto snap = mustOpen(w.finish());
    REQUIRE(snap->memory.size() == 1);
    CHECK(snap->memory[0].bytes.data() ==
          reinterpret_cast<const uint8_t *>(snap->file->getBufferStart()) + 32);
    CHECK(hasWarning(*snap, "Memory64List", "the rest and 1 later ranges not read"));
  }
  SECTION("an address range wrapping past 2^64 is dropped") {
    MdmpWriter w(1);
    w.stream(Memory64ListType, memory64List(1, 0, {{0xfffffffffffffff0ull, 0x20}}));
    auto snap = mustOpen(w.finish());
    CHECK(snap->memory.empty());
    CHECK(hasWarning(*snap, "memory range at 0xfffffffffffffff0",
                     "runs past the end of the address space"));
  }
  SECTION("a stream shorter than its header") {
    MdmpWriter w(1);
    w.stream(Memory64ListType, std::vector<uint8_t>(8, 0xff));
    auto snap = mustOpen(w.finish());
    CHECK(hasWarning(*snap, "Memory64List", "too short to hold its 16-byte header"));
  }
}

TEST_CASE("minidump: MemoryInfoList with a bad header falls back to LinuxMaps") {
  SECTION("SizeOfEntry smaller than a MemoryInfo") {
    MdmpWriter w(2);
    w.stream(MemoryInfoListType, memoryInfoList({{0x1000, 0x1000, kCommit, 4, kPrivate}}, 8));
    w.stream(LinuxMapsType, kTwoMaps);
    auto snap = mustOpen(w.finish());
    CHECK(hasWarning(*snap, "MemoryInfoList",
                     "SizeOfEntry 8 is smaller than a MemoryInfo (48); not used"));
    CHECK(regionAt(*snap, 0x1000) == nullptr);
    CHECK(regionAt(*snap, 0x600000) != nullptr);
  }
  SECTION("NumberOfEntries 2^64-1") {
    MdmpWriter w(1);
    w.stream(MemoryInfoListType,
             memoryInfoList({{0x1000, 0x1000, kCommit, 4, kPrivate}}, 48, ~0ull));
    auto snap = mustOpen(w.finish());
    CHECK(hasWarning(*snap, "MemoryInfoList",
                     "claims 18446744073709551615 entries, only 1 fit in its 64 bytes"));
    REQUIRE(snap->regions.size() == 1);
    CHECK(snap->regions[0].cls == RegionClass::Anonymous);
  }
  SECTION("a region wrapping past 2^64") {
    MdmpWriter w(1);
    w.stream(MemoryInfoListType,
             memoryInfoList({{0xffffffffffff0000ull, 0x20000, kCommit, 4, kPrivate}}));
    auto snap = mustOpen(w.finish());
    CHECK(snap->regions.empty());
    CHECK(hasWarning(*snap, "MemoryInfoList entry 0", "runs past the end of the address space"));
  }
}

TEST_CASE("minidump: lists with lying counts and locations") {
  MdmpWriter w(3);
  uint32_t data_rva = w.blob(pattern(16, 0));
  uint32_t name_rva = w.blob(mdString("ok"));
  // A module name whose length word claims 4 GiB: at most 64 KiB is read, clipped to the file.
  test::ByteWriter huge_name;
  huge_name.u32(0xffffffff).u16('a').u16('b');
  uint32_t huge_rva = w.blob(huge_name.bytes);
  w.stream(
      MemoryListType,
      memoryList({{0x1000, 16, data_rva}, {0x2000, 16, 0x7ffffff0}, {0x3000, 0x10000, data_rva}},
                 0xffffffff));
  w.stream(ThreadListType, threadList({{9, 0x1000, 16, data_rva, 1232, 0x7ffffff0}}, 1000));
  w.stream(ModuleListType, moduleList({{0x10000, 0x1000, 0x7ffffff0, 24, 0x7ffffff0},
                                       {0x20000, 0x1000, huge_rva, 0, 0},
                                       {0x30000, 0x1000, name_rva, 0, 0}}));
  auto snap = mustOpen(w.finish());
  INFO(warningsText(*snap));
  CHECK(hasWarning(*snap, "stream MemoryList", "claims 4294967295 entries, only 3 fit"));
  CHECK(hasWarning(*snap, "MemoryList range 1", "data at 0x7ffffff0 lies past the end"));
  CHECK(hasWarning(*snap, "MemoryList range 2", "is cut short by the end of the file"));
  CHECK(hasWarning(*snap, "stream ThreadList", "claims 1000 entries, only 1 fit"));
  CHECK(hasWarning(*snap, "thread 9 context", "lies past the end"));
  CHECK(hasWarning(*snap, "module 0 at 0x10000 name", "lies past the end"));
  CHECK(hasWarning(*snap, "module 0 at 0x10000 CodeView record", "lies past the end"));
  CHECK(hasWarning(*snap, "module 1 at 0x20000 name",
                   "is 4294967295 bytes long; only the first 65536 read"));

  // The range at 0x1000 and the one at 0x3000 (clipped to the file) survive; the latter's first 16
  // bytes are the former's, so it loses them.
  REQUIRE(snap->memory.size() == 2);
  CHECK(snap->memory[0].start == 0x1000);
  CHECK(snap->memory[1].start == 0x3010);
  CHECK(hasWarning(*snap, "memory ranges", "1 ranges (16 B) point at file bytes another range"));
  CHECK(snap->memory[1].bytes.size() < 0x10000);
  REQUIRE(snap->threads.size() == 1);
  CHECK(snap->threads[0].stack_pointer == 0x1000); // no context: the stack's start
  REQUIRE(snap->modules.size() == 3);
  CHECK(snap->modules[0].path.empty());
  CHECK(snap->modules[1].path.substr(0, 2) == "ab");
  CHECK(snap->modules[2].path == "ok");
}

TEST_CASE("minidump: every real and hand-made dump cut at many lengths opens or fails cleanly") {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> inputs;
  for (const auto &entry : std::filesystem::directory_iterator(test::sharedDumpsDir()))
    if (entry.path().extension() == ".dmp")
      inputs.emplace_back(entry.path().filename().string(),
                          test::readFileBytes(entry.path().string()));
  REQUIRE(inputs.size() >= 5);
  inputs.emplace_back("hand-made windows", windowsDump());
  for (const auto &[name, bytes] : inputs) {
    INFO(name);
    // Every length through the header, directory and first streams; then ~300 more.
    size_t stride = std::max<size_t>(1, bytes.size() / 300);
    for (size_t len = 0; len <= bytes.size(); len += len < 1024 ? 1 : stride) {
      INFO("length " << len);
      openAndCheck(std::vector<uint8_t>(bytes.begin(), bytes.begin() + len));
    }
  }
}

TEST_CASE("minidump: random bytes and mutated real dumps never break the invariants") {
  std::mt19937_64 rng(20240611);
  // Random files, with and without a valid signature and version.
  for (int i = 0; i < 500; ++i) {
    std::vector<uint8_t> bytes(rng() % 600);
    for (uint8_t &b : bytes)
      b = static_cast<uint8_t>(rng());
    if (bytes.size() >= 8 && i % 2 == 0) {
      const uint8_t magic[] = {'M', 'D', 'M', 'P', 0x93, 0xa7, 0, 0};
      std::copy(std::begin(magic), std::end(magic), bytes.begin());
    }
    openAndCheck(bytes);
  }

  // Mutations aimed at the header, the directory and the start of each stream.
  std::vector<std::vector<uint8_t>> inputs;
  for (const auto &entry : std::filesystem::directory_iterator(test::sharedDumpsDir()))
    if (entry.path().extension() == ".dmp")
      inputs.push_back(test::readFileBytes(entry.path().string()));
  inputs.push_back(windowsDump());
  const uint32_t nasty[] = {0, 1, 0x7fffffff, 0x80000000, 0xfffffff0, 0xffffffff};
  for (const std::vector<uint8_t> &original : inputs) {
    Diagnostics ignored;
    auto dir = detail::mdmp::readDirectory(original, ignored);
    std::vector<size_t> targets;
    for (size_t off = 0; off < 32 + 12 * 16 && off < original.size(); off += 4)
      targets.push_back(off);
    if (dir) {
      for (const detail::mdmp::Stream &s : dir->streams)
        for (size_t off = 0; off < 64 && off < s.bytes.size(); off += 4)
          targets.push_back(s.rva + off);
    } else {
      llvm::consumeError(dir.takeError());
    }
    for (int i = 0; i < 300; ++i) {
      std::vector<uint8_t> bytes = original;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        size_t at = targets[rng() % targets.size()];
        uint32_t value = rng() % 2 ? nasty[rng() % std::size(nasty)] : static_cast<uint32_t>(rng());
        for (int k = 0; k < 4 && at + k < bytes.size(); ++k)
          bytes[at + k] = static_cast<uint8_t>(value >> (8 * k));
      }
      openAndCheck(bytes);
    }
  }
}

TEST_CASE("minidump: MemoryList ranges over the same file bytes count those bytes once") {
  // Issue 24's minidump: 1,024 ranges of 1 MiB, all pointing at the same 1 MiB.
  MdmpWriter w(2);
  uint32_t data = w.blob(pattern(1 << 20, 0x11));
  std::vector<Desc> ranges;
  for (uint64_t i = 0; i < 1024; ++i)
    ranges.push_back({0x10000000 + (i << 20), 1 << 20, data});
  w.stream(SystemInfoType, systemInfo(kAmd64, kWin32NT));
  w.stream(MemoryListType, memoryList(ranges));
  auto snap = mustOpen(w.finish());
  INFO(warningsText(*snap));
  CHECK(snap->capturedBytes() == 1 << 20);
  REQUIRE(snap->memory.size() == 1);
  CHECK(snap->memory[0].start == 0x10000000);
  CHECK(hasWarning(*snap, "memory ranges",
                   "1023 ranges (1023.0 MiB) point at file bytes another range holds (the first: "
                   "0x10100000 repeats the bytes of 0x10000000); each byte of the file is kept in "
                   "one range only"));
  checkInvariants(*snap);
}

TEST_CASE("minidump: a Memory64List of more than 2^19 one-byte ranges reads the first 2^19") {
  // Issue 24's 102 MB dump held 6 M such ranges and cost 1.18 GB; one past the limit shows the cut.
  const uint64_t count = (uint64_t(1) << 19) + 1;
  MdmpWriter w(1);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  ranges.reserve(count);
  for (uint64_t i = 0; i < count; ++i)
    ranges.push_back({0x10000000 + i * 0x1000, 1});
  const uint64_t base = w.next() + 16 + 16 * count;
  w.stream(Memory64ListType, memory64List(count, base, ranges));
  w.blob(pattern(count, 0));
  auto snap = mustOpen(w.finish());
  INFO(warningsText(*snap));
  CHECK(hasWarning(*snap, "stream Memory64List (0x00000009)",
                   "524,289 entries; only the first 524,288 are read (the limit on memory ranges "
                   "and regions per dump)"));
  CHECK(snap->memory.size() == count - 1);
  CHECK(snap->regions.size() == count - 1);
  CHECK(snap->memory.back().start == 0x10000000 + (count - 2) * 0x1000);
}

TEST_CASE("minidump: every known ProcessorArchitecture is named, with its pointer size") {
  // Microsoft's PROCESSOR_ARCHITECTURE_* (winnt.h) and Breakpad's MD_CPU_ARCHITECTURE_*
  // (src/google_breakpad/common/minidump_format.h) values, spelled as the ELF reader does.
  struct Known {
    uint16_t value;
    const char *arch;
    unsigned pointer_size;
  };
  const Known known[] = {
      {0, "x86", 4},
      {1, "mips", 4},
      {2, "alpha", 8},
      {3, "ppc", 4},
      {4, "sh", 4},
      {5, "arm", 4},
      {6, "ia64", 8},
      {7, "alpha64", 8},
      {8, "msil", 8},
      {9, "x86_64", 8},
      {10, "x86", 4},
      {12, "aarch64", 8},
      {13, "arm", 4},
      {14, "x86", 4},
      {0x8001, "sparc", 8},
      {0x8002, "ppc64", 8},
      {0x8003, "aarch64", 8},
      {0x8004, "mips64", 8},
      {0x8005, "riscv32", 4},
      {0x8006, "riscv64", 8},
      {11, "machine-11", 8},
      {0x8007, "machine-32775", 8},
      {0xffff, "machine-65535", 8},
  };
  for (const Known &k : known) {
    INFO("ProcessorArchitecture " << k.value);
    MdmpWriter w(1);
    w.stream(SystemInfoType, systemInfo(k.value, kLinux));
    auto snap = mustOpen(w.finish());
    CHECK(snap->system.arch == k.arch);
    CHECK(snap->system.pointer_size == k.pointer_size);
  }
}
