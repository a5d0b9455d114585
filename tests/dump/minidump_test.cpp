// The minidump reader on real third-party dumps (../shared/dumps, facts from its README), and its
// directory and list parsing checked against LLVM's MinidumpFile where LLVM accepts the file.
#include "../../src/dump/minidump_streams.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"
#include "support/test_support.h"

#include "llvm/Object/Minidump.h"

#include <algorithm>
#include <catch2/catch.hpp>

using namespace dumpsift;
namespace mdmp = dumpsift::detail::mdmp;

// Fails the test with the error's message when an llvm::Expected holds an error (consuming it).
#define REQUIRE_OK(expected)                                                                       \
  do {                                                                                             \
    if (!(expected))                                                                               \
      FAIL(llvm::toString((expected).takeError()));                                                \
  } while (0)

namespace {

// Opens ../shared/dumps/<name>; REQUIREs success and returns the snapshot.
std::unique_ptr<Snapshot> openShared(const std::string &name) {
  auto snap = openDump(test::sharedDumpsDir() + "/" + name);
  if (!snap)
    FAIL(name << ": " << llvm::toString(snap.takeError()));
  return std::move(*snap);
}

// The file bytes of a snapshot, as the reader sees them.
llvm::ArrayRef<uint8_t> fileBytes(const Snapshot &snap) {
  llvm::StringRef b = snap.file->getBuffer();
  return {reinterpret_cast<const uint8_t *>(b.data()), b.size()};
}

// All warnings, one per line, for failure messages.
std::string warningsText(const Snapshot &snap) {
  std::string out;
  for (const Diagnostic &d : snap.diagnostics.warnings())
    out += d.where + ": " + d.message + "\n";
  return out;
}

// The region starting at `start`, or nullptr.
const Region *regionAt(const Snapshot &snap, uint64_t start) {
  for (const Region &r : snap.regions)
    if (r.start == start)
      return &r;
  return nullptr;
}

// The captured range starting at `start`, or nullptr.
const MemoryRange *memoryAt(const Snapshot &snap, uint64_t start) {
  for (const MemoryRange &m : snap.memory)
    if (m.start == start)
      return &m;
  return nullptr;
}

// The auxv value of `type`, or 0.
uint64_t auxvValue(const Snapshot &snap, uint64_t type) {
  for (auto [t, v] : snap.auxv)
    if (t == type)
      return v;
  return 0;
}

} // namespace

TEST_CASE("minidump: rust-minidump linux-mini.dmp (Breakpad, Linux x86_64)") {
  auto snap = openShared("rustminidump_linux-mini.dmp");
  INFO(warningsText(*snap));
  CHECK(snap->format == DumpFormat::Minidump);
  CHECK(snap->system.os == Os::Linux);
  CHECK(snap->system.arch == "x86_64");
  CHECK(snap->system.pointer_size == 8);
  // The unknown Mozilla stream 0x4d7a0004 and everything else read without a complaint.
  CHECK(snap->diagnostics.empty());

  // MemoryList: 2 ranges, 12,544 bytes: the stack and 256 bytes around the IP.
  REQUIRE(snap->memory.size() == 2);
  CHECK(snap->capturedBytes() == 12544);
  const MemoryRange *stack = memoryAt(*snap, 0x7fff5ae4a000);
  REQUIRE(stack);
  CHECK(stack->bytes.size() == 0x3000);
  const MemoryRange *code = memoryAt(*snap, 0x401cf2);
  REQUIRE(code);
  CHECK(code->bytes.size() == 256);

  // LinuxMaps: 35 lines, each a region; [heap] listed but not captured.
  CHECK(snap->regions.size() == 35);
  const Region *heap = regionAt(*snap, 0x1723000);
  REQUIRE(heap);
  CHECK(heap->end() == 0x1755000);
  CHECK(heap->cls == RegionClass::Heap);
  CHECK(heap->perms.str() == "rw-");
  CHECK(heap->capture() == Capture::None);
  const Region *stack_region = regionAt(*snap, 0x7fff5ae2c000);
  REQUIRE(stack_region);
  CHECK(stack_region->cls == RegionClass::Stack);
  CHECK(stack_region->captured == 0x3000);
  CHECK(stack_region->capture() == Capture::Partial);
  const Region *text = regionAt(*snap, 0x400000);
  REQUIRE(text);
  CHECK(text->cls == RegionClass::Image);
  CHECK(text->backing_file == "/work/linux/build/crash");
  CHECK(text->perms.str() == "r-x");
  CHECK(text->captured == 256);
  const Region *libc_data = regionAt(*snap, 0x7f5140521000);
  REQUIRE(libc_data);
  CHECK(libc_data->backing_file == "/lib/x86_64-linux-gnu/libc-2.23.so");
  CHECK(libc_data->file_offset == 0x1c4000);
  const Region *anon = regionAt(*snap, 0x7f5140523000);
  REQUIRE(anon);
  CHECK(anon->cls == RegionClass::Anonymous);
  CHECK(anon->backing_file.empty());
  const Region *vvar = regionAt(*snap, 0x7fff5aeef000);
  REQUIRE(vvar);
  CHECK(vvar->cls == RegionClass::Other);

  // ThreadList: one thread; Rsp from its AMD64 context, the stack from its descriptor.
  REQUIRE(snap->threads.size() == 1);
  CHECK(snap->threads[0].tid == 0x518);
  CHECK(snap->threads[0].stack_pointer == 0x7fff5ae4aa20);
  CHECK(snap->threads[0].stack_start == 0x7fff5ae4a000);
  CHECK(snap->threads[0].stack_end == 0x7fff5ae4d000);

  // ModuleList with ELF build ids from "LEpB" CodeView records.
  REQUIRE(snap->modules.size() == 8);
  CHECK(snap->modules[0].path == "/work/linux/build/crash");
  CHECK(snap->modules[0].start == 0x400000);
  CHECK(snap->modules[0].end == 0x41a000);
  CHECK(snap->modules[0].build_id == "f1c3bcc0279865fe3058404b2831d9e64135386c");
  CHECK(snap->modules[7].path == "linux-gate.so");

  // LinuxProcStatus, LinuxCMDLine, LinuxAuxv.
  CHECK(snap->process.name == "crash");
  CHECK(snap->process.pid == 1304u);
  CHECK(snap->process.command_line == "./crash");
  CHECK(auxvValue(*snap, 6) == 4096);            // AT_PAGESZ
  CHECK(auxvValue(*snap, 33) == 0x7fff5aef1000); // AT_SYSINFO_EHDR: the vdso

  // Captured bytes read back through the address space are the file's bytes.
  AddressSpace as(*snap);
  CHECK(as.classify(0x1723000) == Fault::NotCaptured);
  CHECK(as.classify(0x7fff5ae4a000) == Fault::None);
  CHECK(as.classify(0x7fff5ae49fff) == Fault::NotCaptured);
  CHECK(as.classify(0x2000000) == Fault::Unmapped);
  llvm::ArrayRef<uint8_t> file = fileBytes(*snap);
  CHECK(as.tryView(0x7fff5ae4a000, 16) == file.data() + 0xf8); // the descriptor's RVA

  // The directory itself: 14 streams, the vendor stream among them; 35 maps lines, none bad.
  Diagnostics diags;
  auto dir = mdmp::readDirectory(file, diags);
  REQUIRE_OK(dir);
  CHECK(dir->streams.size() == 14);
  REQUIRE(dir->find(0x4d7a0004));
  CHECK(dir->find(0x4d7a0004)->bytes.size() == 569);
  mdmp::MapsParse maps = mdmp::parseLinuxMaps(*dir->find(mdmp::kLinuxMaps), diags);
  CHECK(maps.lines == 35);
  CHECK(maps.bad == 0);
  CHECK(diags.empty());
}

TEST_CASE("minidump: lldb linux-x86_64.dmp (Breakpad, Linux x86_64)") {
  auto snap = openShared("lldb_linux-x86_64.dmp");
  INFO(warningsText(*snap));
  CHECK(snap->diagnostics.empty());
  CHECK(snap->system.os == Os::Linux);
  CHECK(snap->system.arch == "x86_64");
  CHECK(snap->process.name == "linux-x86_64");
  CHECK(snap->process.pid == 29917u);
  CHECK(snap->process.command_line == "./linux-x86_64");

  // MemoryList: 2 ranges (stack and code).
  REQUIRE(snap->memory.size() == 2);
  REQUIRE(memoryAt(*snap, 0x7fffc8d0e000));
  CHECK(memoryAt(*snap, 0x7fffc8d0e000)->bytes.size() == 0x3000);
  REQUIRE(memoryAt(*snap, 0x400360));

  // LinuxMaps: 39 lines incl. the [heap].
  CHECK(snap->regions.size() == 39);
  const Region *heap = regionAt(*snap, 0x961000);
  REQUIRE(heap);
  CHECK(heap->end() == 0x982000);
  CHECK(heap->cls == RegionClass::Heap);
  CHECK(heap->capture() == Capture::None);
  // The stack line has no "[stack]" name here; the thread's stack pointer makes it a Stack.
  const Region *stack = regionAt(*snap, 0x7fffc8cf0000);
  REQUIRE(stack);
  CHECK(stack->cls == RegionClass::Stack);
  CHECK(stack->captured == 0x3000);
  REQUIRE(snap->threads.size() == 1);
  CHECK(snap->threads[0].tid == 0x74dd);
  CHECK(snap->threads[0].stack_pointer == 0x7fffc8d0e768);

  REQUIRE(snap->modules.size() == 10);
  CHECK(snap->modules[7].path == "/tmp/test/libbreakpad.so");
  CHECK(snap->modules[7].build_id == "784fd549332d826ed23f18c17c6f320a"); // a 16-byte id
}

TEST_CASE("minidump: breakpad tiny-exe-with-cet-xsave.dmp (Crashpad, Windows x64)") {
  auto snap = openShared("breakpad_win-x64_tiny-exe-with-cet-xsave.dmp");
  INFO(warningsText(*snap));
  CHECK(snap->diagnostics.empty());
  CHECK(snap->system.os == Os::Windows);
  CHECK(snap->system.arch == "x86_64");
  CHECK(snap->process.pid == 0x3c54u); // MiscInfo
  CHECK(snap->process.name == "tiny.exe");

  // MemoryList: 65 ranges, 50,800 bytes, none overlapping.
  CHECK(snap->memory.size() == 65);
  CHECK(snap->capturedBytes() == 50800);

  // MemoryInfoList: 557 entries, 127 of them MEM_FREE.
  Diagnostics diags;
  auto dir = mdmp::readDirectory(fileBytes(*snap), diags);
  REQUIRE_OK(dir);
  REQUIRE(dir->find(mdmp::kMemoryInfoList));
  auto info = mdmp::parseMemoryInfoList(*dir->find(mdmp::kMemoryInfoList), diags);
  REQUIRE(info);
  CHECK(info->size() == 557);
  CHECK(std::count_if(info->begin(), info->end(), [](const mdmp::MemoryInfoEntry &e) {
          return e.state == mdmp::kMemFree;
        }) == 127);

  uint64_t committed_private = 0;
  size_t from_info = 0, reserved = 0;
  for (const Region &r : snap->regions) {
    if (r.mdmp_state != 0)
      ++from_info;
    if (r.mdmp_state == mdmp::kMemCommit && r.mdmp_type == mdmp::kMemPrivate)
      committed_private += r.size;
    if (r.mdmp_state == mdmp::kMemReserve) {
      ++reserved;
      CHECK(r.perms.str() == "---");
      CHECK(r.captured == 0);
    }
  }
  CHECK(from_info == 557 - 127);
  CHECK(reserved == 57 + 10);
  CHECK(committed_private == 0x13c000);
  // Every captured byte lies in some MemoryInfo region: no region was invented for it.
  CHECK(snap->regions.size() == from_info);

  // The module list names tiny.exe; its PDB 7.0 CodeView record gives GUID + age.
  REQUIRE(!snap->modules.empty());
  CHECK(snap->modules[0].path == "C:\\src\\crashpad\\tiny.exe");
  CHECK(snap->modules[0].start == 0x7ff778bd0000);
  CHECK(snap->modules[0].end == 0x7ff778bd0000 + 0xf0000);
  CHECK(snap->modules[0].build_id == "c25cd79f212f335c4c4c44205044422e1");
  // Its MEM_IMAGE regions carry its path.
  const Region *image = regionAt(*snap, 0x7ff778bd0000);
  REQUIRE(image);
  CHECK(image->cls == RegionClass::Image);
  CHECK(image->mdmp_type == mdmp::kMemImage);
  CHECK(image->backing_file == "C:\\src\\crashpad\\tiny.exe");

  // The one thread: Rsp from its context lies in its stack, a committed private region.
  REQUIRE(snap->threads.size() == 1);
  CHECK(snap->threads[0].tid == 0x5bc);
  CHECK(snap->threads[0].stack_pointer == 0xcbc82ff448);
  CHECK(snap->threads[0].stack_start == 0xcbc82f8000);
  CHECK(snap->threads[0].stack_end == 0xcbc8300000);
  AddressSpace as(*snap);
  const Region *stack = as.regionContaining(0xcbc82ff448);
  REQUIRE(stack);
  CHECK(stack->cls == RegionClass::Stack);
  CHECK(stack->mdmp_type == mdmp::kMemPrivate);
  CHECK(as.classify(0xcbc82ff448) == Fault::None);
  // Heap candidates: committed, private, writable and not the stack.
  size_t anonymous = std::count_if(snap->regions.begin(), snap->regions.end(),
                                   [](const Region &r) { return r.cls == RegionClass::Anonymous; });
  CHECK(anonymous > 0);
  for (const Region &r : snap->regions)
    if (r.cls == RegionClass::Anonymous) {
      CHECK(r.mdmp_state == mdmp::kMemCommit);
      CHECK(r.mdmp_type == mdmp::kMemPrivate);
      CHECK(r.perms.write);
    }
}

TEST_CASE("minidump: lldb regions-memlist64.dmp (Memory64List, macOS arm64)") {
  auto snap = openShared("lldb_regions-memlist64.dmp");
  INFO(warningsText(*snap));
  CHECK(snap->diagnostics.empty());
  CHECK(snap->system.os == Os::MacOs);
  CHECK(snap->system.arch == "aarch64");
  CHECK(snap->process.pid == 123u);

  REQUIRE(snap->memory.size() == 2);
  CHECK(snap->memory[0].start == 0x1000);
  CHECK(snap->memory[0].bytes.size() == 16);
  CHECK(snap->memory[1].start == 0x2000);
  CHECK(snap->memory[1].bytes.size() == 32);
  // BaseRva 0xd4: the first range's bytes start there, the second's right after.
  llvm::ArrayRef<uint8_t> file = fileBytes(*snap);
  CHECK(snap->memory[0].bytes.data() == file.data() + 0xd4);
  CHECK(snap->memory[1].bytes.data() == file.data() + 0xd4 + 16);

  AddressSpace as(*snap);
  uint8_t ones[16];
  REQUIRE_FALSE(static_cast<bool>(as.read(0x1000, ones)));
  CHECK(std::all_of(std::begin(ones), std::end(ones), [](uint8_t b) { return b == '1'; }));
  uint8_t threes[32];
  REQUIRE_FALSE(static_cast<bool>(as.read(0x2000, threes)));
  CHECK(std::all_of(std::begin(threes), std::end(threes), [](uint8_t b) { return b == '3'; }));
  CHECK(as.classify(0x1010) == Fault::Unmapped);
  // No region map in the file: the captured ranges are the regions.
  REQUIRE(snap->regions.size() == 2);
  CHECK(snap->regions[0].capture() == Capture::Full);
  CHECK(snap->regions[1].capture() == Capture::Full);
}

TEST_CASE("minidump: rust-minidump invalid-range.dmp is read best-effort with warnings") {
  auto snap = openShared("rustminidump_invalid-range.dmp");
  std::vector<Diagnostic> warnings = snap->diagnostics.warnings();
  INFO(warningsText(*snap));
  // Three directory entries point past the end of the file: one warning each.
  size_t past_eof = std::count_if(warnings.begin(), warnings.end(), [](const Diagnostic &d) {
    return d.message.find("past the end of the file") != std::string::npos;
  });
  CHECK(past_eof == 3);
  // The one stream inside the file is a LinuxMaps whose text is the file's own header: garbage.
  CHECK(std::any_of(warnings.begin(), warnings.end(), [](const Diagnostic &d) {
    return d.where.find("LinuxMaps") != std::string::npos &&
           d.message.find("not /proc/PID/maps lines") != std::string::npos;
  }));
  CHECK(snap->memory.empty());
  CHECK(snap->system.os == Os::Unknown);

  // LLVM refuses the whole file.
  auto llvm_file = llvm::object::MinidumpFile::create(snap->file->getMemBufferRef());
  REQUIRE_FALSE(static_cast<bool>(llvm_file));
  llvm::consumeError(llvm_file.takeError());
}

TEST_CASE("minidump: directory and lists agree with LLVM's MinidumpFile") {
  for (const char *name :
       {"rustminidump_linux-mini.dmp", "lldb_linux-x86_64.dmp",
        "breakpad_win-x64_tiny-exe-with-cet-xsave.dmp", "lldb_regions-memlist64.dmp"}) {
    INFO(name);
    auto snap = openShared(name);
    auto ref = llvm::object::MinidumpFile::create(snap->file->getMemBufferRef());
    REQUIRE_OK(ref);
    const llvm::object::MinidumpFile &oracle = **ref;
    llvm::ArrayRef<uint8_t> file = fileBytes(*snap);
    Diagnostics diags;
    auto dir = mdmp::readDirectory(file, diags);
    REQUIRE_OK(dir);
    CHECK(diags.empty());

    // Same streams at the same places.
    size_t used = 0;
    for (const llvm::minidump::Directory &d : oracle.streams()) {
      uint32_t type = static_cast<uint32_t>(static_cast<llvm::minidump::StreamType>(d.Type));
      if (type == 0)
        continue;
      ++used;
      const mdmp::Stream *mine = dir->find(type);
      REQUIRE(mine);
      CHECK(mine->rva == d.Location.RVA);
      CHECK(mine->bytes.size() == d.Location.DataSize);
    }
    CHECK(dir->streams.size() == used);

    if (auto list = oracle.getMemoryList()) {
      std::vector<MemoryRange> mine =
          mdmp::parseMemoryList(file, *dir->find(mdmp::kMemoryList), diags);
      REQUIRE(mine.size() == list->size());
      for (size_t i = 0; i < mine.size(); ++i) {
        CHECK(mine[i].start == (*list)[i].StartOfMemoryRange);
        auto data = oracle.getRawData((*list)[i].Memory);
        REQUIRE_OK(data);
        CHECK(mine[i].bytes.data() == data->data());
        CHECK(mine[i].bytes.size() == data->size());
      }
    } else {
      llvm::consumeError(list.takeError());
    }

    if (auto threads = oracle.getThreadList()) {
      std::vector<mdmp::ThreadEntry> mine =
          mdmp::parseThreadList(file, *dir->find(mdmp::kThreadList), diags);
      REQUIRE(mine.size() == threads->size());
      for (size_t i = 0; i < mine.size(); ++i) {
        CHECK(mine[i].tid == (*threads)[i].ThreadId);
        CHECK(mine[i].stack_start == (*threads)[i].Stack.StartOfMemoryRange);
        CHECK(mine[i].context.size() == (*threads)[i].Context.DataSize);
      }
    } else {
      llvm::consumeError(threads.takeError());
    }

    if (auto modules = oracle.getModuleList()) {
      REQUIRE(snap->modules.size() == modules->size());
      for (size_t i = 0; i < modules->size(); ++i) {
        auto name_or = oracle.getString((*modules)[i].ModuleNameRVA);
        REQUIRE_OK(name_or);
        CHECK(snap->modules[i].path == *name_or);
        CHECK(snap->modules[i].start == (*modules)[i].BaseOfImage);
      }
    } else {
      llvm::consumeError(modules.takeError());
    }

    if (auto info = oracle.getMemoryInfoList()) {
      auto mine = mdmp::parseMemoryInfoList(*dir->find(mdmp::kMemoryInfoList), diags);
      REQUIRE(mine);
      size_t i = 0;
      for (const llvm::minidump::MemoryInfo &mi : *info) {
        REQUIRE(i < mine->size());
        CHECK((*mine)[i].base == mi.BaseAddress);
        CHECK((*mine)[i].size == mi.RegionSize);
        ++i;
      }
      CHECK(i == mine->size());
    } else {
      llvm::consumeError(info.takeError());
    }
    CHECK(diags.empty());
  }
}
