// Region classes of minidumps without a MemoryInfoList (issue 23): module images from the
// ModuleList, stacks from the ThreadList's stack descriptors and the TEB, everything else captured
// is private memory; with a MemoryInfoList its state, type and protection win. The minidumps are
// described in YAML and built by LLVM 14's yaml2obj library (an independent writer: nothing here
// shares a struct with the reader). Also the 32-bit Windows dump in ../shared/dumps, with the facts
// its README lists, checked against LLVM's MinidumpFile.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"
#include "dumpsift/support/hex.h"
#include "support/test_support.h"

#include "llvm/Object/Minidump.h"
#include "llvm/ObjectYAML/yaml2obj.h"
#include "llvm/Support/YAMLTraits.h"

#include <algorithm>
#include <catch2/catch.hpp>

using namespace dumpsift;

namespace {

// Builds the minidump that `yaml` describes and opens it; REQUIREs both to work.
std::unique_ptr<Snapshot> openYaml(const std::string &yaml) {
  llvm::SmallString<0> bytes;
  llvm::raw_svector_ostream out(bytes);
  llvm::yaml::Input in(yaml);
  std::string errors;
  bool built =
      llvm::yaml::convertYAML(in, out, [&](const llvm::Twine &m) { errors += m.str() + "\n"; });
  INFO(errors);
  REQUIRE(built);
  auto snap = openDump(llvm::MemoryBuffer::getMemBufferCopy(bytes, "yaml.dmp"));
  if (!snap)
    FAIL(llvm::toString(snap.takeError()));
  return std::move(*snap);
}

// Lowercase hex of `bytes`, for YAML Content fields.
std::string hex(const std::vector<uint8_t> &bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

// `n` bytes of `value`.
std::string filled(size_t n, uint8_t value) {
  return hex(std::vector<uint8_t>(n, value));
}

// An NT_TIB of `pointer_size`-byte words: ExceptionList, StackBase, StackLimit, SubSystemTib,
// FiberData, ArbitraryUserPointer, Self (winnt.h).
std::string ntTib(unsigned pointer_size, uint64_t stack_base, uint64_t stack_limit, uint64_t self) {
  std::vector<uint8_t> out;
  for (uint64_t word :
       {uint64_t(0), stack_base, stack_limit, uint64_t(0), uint64_t(0), uint64_t(0), self})
    for (unsigned i = 0; i < pointer_size; ++i)
      out.push_back(static_cast<uint8_t>(word >> (8 * i)));
  return hex(out);
}

std::string systemInfo(const char *arch, const char *platform) {
  return std::string("  - Type: SystemInfo\n    Processor Arch: ") + arch +
         "\n    Platform ID: " + platform +
         "\n    CPU: { Vendor ID: GenuineIntel, Version Info: 0, Feature Info: 0 }\n";
}

// A thread without a context; `stack` empty means no stack descriptor.
std::string thread(uint32_t tid, uint64_t teb, uint64_t stack_start, const std::string &stack) {
  return "      - Thread Id: " + std::to_string(tid) +
         "\n        Environment Block: " + std::to_string(teb) +
         "\n        Context: ''\n        Stack:\n" +
         "          Start of Memory Range: " + std::to_string(stack_start) +
         "\n          Content: '" + stack + "'\n";
}

std::string range(uint64_t start, const std::string &content) {
  return "      - Start of Memory Range: " + std::to_string(start) + "\n        Content: '" +
         content + "'\n";
}

const Region *regionAt(const Snapshot &snap, uint64_t start) {
  for (const Region &r : snap.regions)
    if (r.start == start)
      return &r;
  return nullptr;
}

// "class source [start, end)" of every region, for failure messages and exact comparisons.
std::string regionList(const Snapshot &snap) {
  std::string out;
  for (const Region &r : snap.regions)
    out += className(r.cls).str() + " " + sourceName(r.class_source).str() + " " +
           hexAddress(r.start) + "-" + hexAddress(r.end()) + " " + r.perms.str() +
           (r.backing_file.empty() ? "" : " " + r.backing_file) + "\n";
  return out;
}

std::string warningsText(const Snapshot &snap) {
  std::string out;
  for (const Diagnostic &d : snap.diagnostics.warnings())
    out += d.where + ": " + d.message + "\n";
  return out;
}

// A Windows x64 process as a full-memory writer without MemoryInfoList sees it: the main thread
// has no stack descriptor, only its TEB at 0x7000 (stack [0x11000, 0x12000)); a worker has a
// descriptor at 0x30000; two captured ranges straddle the main stack's bounds, one the end of the
// module story.exe, and one is private data.
std::string windowsWithoutMap(const std::string &teb) {
  return "--- !minidump\nStreams:\n" + systemInfo("AMD64", "Win32NT") +
         "  - Type: ModuleList\n    Modules:\n"
         "      - Base of Image: 0x140000000\n        Size of Image: 0x3000\n"
         "        Module Name: 'C:\\app\\story.exe'\n        CodeView Record: ''\n"
         "  - Type: ThreadList\n    Threads:\n" +
         thread(0x10, 0x7000, 0, "") + thread(0x20, 0, 0x30000, filled(0x100, 0x5a)) +
         "  - Type: MemoryList\n    Memory Ranges:\n" + range(0x7000, teb) +
         range(0x10800, filled(0x1000, 1)) + range(0x11800, filled(0x1000, 2)) +
         range(0x140002000, filled(0x2000, 3)) + range(0x500000, filled(0x100, 4)) + "...\n";
}

} // namespace

TEST_CASE("minidump without a region map: images from modules, stacks from descriptors and TEBs, "
          "the rest private") {
  auto snap = openYaml(windowsWithoutMap(ntTib(8, 0x12000, 0x11000, 0x7000)));
  INFO(regionList(*snap) << warningsText(*snap));
  CHECK(snap->diagnostics.empty());
  CHECK(regionList(*snap) == "anonymous captured 0x7000-0x7038 r??\n"
                             "anonymous captured 0x10800-0x11000 r??\n"
                             "stack teb 0x11000-0x11800 r??\n"
                             "stack teb 0x11800-0x12000 r??\n"
                             "anonymous captured 0x12000-0x12800 r??\n"
                             "stack thread-list 0x30000-0x30100 r??\n"
                             "anonymous captured 0x500000-0x500100 r??\n"
                             "image module-list 0x140002000-0x140003000 r?? C:\\app\\story.exe\n"
                             "anonymous captured 0x140003000-0x140004000 r??\n");
  REQUIRE(snap->threads.size() == 2);
  CHECK(snap->threads[0].teb == 0x7000);
  CHECK(snap->threads[0].stack_start == 0x11000);
  CHECK(snap->threads[0].stack_end == 0x12000);
  CHECK(snap->threads[0].stack_source == RegionSource::Teb);
  CHECK(snap->threads[1].stack_start == 0x30000);
  CHECK(snap->threads[1].stack_end == 0x30100);
  CHECK(snap->threads[1].stack_source == RegionSource::ThreadList);

  // Every captured byte still belongs to exactly one region.
  uint64_t by_regions = 0;
  for (const Region &r : snap->regions) {
    CHECK(r.captured == r.size);
    by_regions += r.captured;
  }
  CHECK(by_regions == snap->capturedBytes());

  // Which source classed each region, and where each thread's stack came from, by the names
  // info shows.
  CHECK(snap->regions[2].cls == RegionClass::Stack);
  CHECK(sourceName(snap->regions[2].class_source) == "teb");
  CHECK(snap->regions[2].perms.str() == "r??");
  CHECK(sourceName(snap->regions[6].class_source) == "captured");
  CHECK(snap->threads[0].teb == 0x7000);
  CHECK(sourceName(snap->threads[0].stack_source) == "teb");
  CHECK(sourceName(snap->threads[1].stack_source) == "thread-list");
}

TEST_CASE("minidump: a TEB gives a stack only when it is captured and points back at itself") {
  SECTION("Self is not the TEB") {
    auto snap = openYaml(windowsWithoutMap(ntTib(8, 0x12000, 0x11000, 0x7008)));
    CHECK(snap->threads[0].stack_end == 0);
    CHECK(regionAt(*snap, 0x11000) == nullptr); // no cut at the stack's bounds
    CHECK(regionAt(*snap, 0x10800)->cls == RegionClass::Anonymous);
  }
  SECTION("StackLimit is not below StackBase") {
    auto snap = openYaml(windowsWithoutMap(ntTib(8, 0x11000, 0x12000, 0x7000)));
    CHECK(snap->threads[0].stack_end == 0);
  }
  SECTION("the TEB is cut short") {
    std::string tib = ntTib(8, 0x12000, 0x11000, 0x7000);
    auto snap = openYaml(windowsWithoutMap(tib.substr(0, tib.size() - 2)));
    CHECK(snap->threads[0].stack_end == 0);
  }
  SECTION("not a Windows process") {
    std::string yaml = windowsWithoutMap(ntTib(8, 0x12000, 0x11000, 0x7000));
    yaml.replace(yaml.find("Win32NT"), 7, "Linux");
    auto snap = openYaml(yaml);
    CHECK(snap->threads[0].stack_end == 0);
  }
}

TEST_CASE("minidump: a 32-bit TEB has 4-byte NT_TIB words") {
  std::string yaml = "--- !minidump\nStreams:\n" + systemInfo("X86", "Win32NT") +
                     "  - Type: ThreadList\n    Threads:\n" + thread(7, 0x7ffdf000, 0, "") +
                     "  - Type: MemoryList\n    Memory Ranges:\n" +
                     range(0x7ffdf000, ntTib(4, 0x130000, 0x12e000, 0x7ffdf000)) +
                     range(0x12f000, filled(0x1000, 9)) + "...\n";
  auto snap = openYaml(yaml);
  INFO(regionList(*snap));
  CHECK(snap->system.pointer_size == 4);
  REQUIRE(snap->threads.size() == 1);
  CHECK(snap->threads[0].stack_start == 0x12e000);
  CHECK(snap->threads[0].stack_end == 0x130000);
  const Region *stack = regionAt(*snap, 0x12f000);
  REQUIRE(stack);
  CHECK(stack->cls == RegionClass::Stack);
  CHECK(stack->class_source == RegionSource::Teb);
}

TEST_CASE("minidump with a MemoryInfoList: its state, type and protection win") {
  // Committed private RW (the main stack, by its TEB, and a heap), committed private read-only,
  // reserved, and one captured range that no entry describes.
  std::string yaml =
      "--- !minidump\nStreams:\n" + systemInfo("AMD64", "Win32NT") +
      "  - Type: ThreadList\n    Threads:\n" + thread(0x10, 0x7000, 0, "") +
      "  - Type: MemoryInfoList\n    Memory Ranges:\n"
      "      - { Base Address: 0x7000, Region Size: 0x1000, State: [ MEM_COMMIT ], "
      "Type: [ MEM_PRIVATE ], Allocation Protect: [ PAGE_READ_WRITE ] }\n"
      "      - { Base Address: 0x11000, Region Size: 0x1000, State: [ MEM_COMMIT ], "
      "Type: [ MEM_PRIVATE ], Allocation Protect: [ PAGE_READ_WRITE ] }\n"
      "      - { Base Address: 0x20000, Region Size: 0x1000, State: [ MEM_COMMIT ], "
      "Type: [ MEM_PRIVATE ], Allocation Protect: [ PAGE_READ_WRITE ] }\n"
      "      - { Base Address: 0x21000, Region Size: 0x1000, State: [ MEM_COMMIT ], "
      "Type: [ MEM_PRIVATE ], Allocation Protect: [ PAGE_READ_ONLY ] }\n"
      "      - { Base Address: 0x22000, Region Size: 0x4000, State: [ MEM_RESERVE ], "
      "Type: [ MEM_PRIVATE ], Allocation Protect: [ PAGE_NO_ACCESS ] }\n"
      "  - Type: MemoryList\n    Memory Ranges:\n" +
      range(0x7000, ntTib(8, 0x12000, 0x11000, 0x7000)) + range(0x11000, filled(0x1000, 1)) +
      range(0x20000, filled(0x1000, 2)) + range(0x21000, filled(0x1000, 3)) +
      range(0x40000, filled(0x100, 4)) + "...\n";
  auto snap = openYaml(yaml);
  INFO(regionList(*snap) << warningsText(*snap));
  CHECK(regionList(*snap) == "anonymous memory-info 0x7000-0x8000 rw-\n"
                             "stack teb 0x11000-0x12000 rw-\n"
                             "anonymous memory-info 0x20000-0x21000 rw-\n"
                             "other memory-info 0x21000-0x22000 r--\n"
                             "other memory-info 0x22000-0x26000 ---\n"
                             "other captured 0x40000-0x40100 r--\n");
}

TEST_CASE("minidump: threads that claim the same stack mark it once") {
  // Many threads, one TEB: the stack ranges are merged before the regions are marked.
  std::string threads;
  for (uint32_t tid = 1; tid <= 64; ++tid)
    threads += thread(tid, 0x7000, 0, "");
  std::string yaml = "--- !minidump\nStreams:\n" + systemInfo("AMD64", "Win32NT") +
                     "  - Type: ThreadList\n    Threads:\n" + threads +
                     "  - Type: MemoryList\n    Memory Ranges:\n" +
                     range(0x7000, ntTib(8, 0x20000, 0x10000, 0x7000)) +
                     range(0x10000, filled(0x4000, 1)) + range(0x18000, filled(0x4000, 2)) +
                     "...\n";
  auto snap = openYaml(yaml);
  INFO(regionList(*snap));
  CHECK(regionList(*snap) == "anonymous captured 0x7000-0x7038 r??\n"
                             "stack teb 0x10000-0x14000 r??\n"
                             "stack teb 0x18000-0x1c000 r??\n");
  for (const Thread &t : snap->threads) {
    CHECK(t.stack_start == 0x10000);
    CHECK(t.stack_end == 0x20000);
  }
}

TEST_CASE("minidump: breakpad minidump_32bit_crash_addr.dmp (Windows x86) reads its facts") {
  auto opened = openDump(test::sharedDumpsDir() + "/breakpad_minidump_32bit_crash_addr.dmp");
  if (!opened)
    FAIL(llvm::toString(opened.takeError()));
  const Snapshot &snap = **opened;
  INFO(regionList(snap) << warningsText(snap));
  CHECK(snap.diagnostics.empty()); // the two unused directory entries are skipped silently
  CHECK(snap.system.os == Os::Windows);
  CHECK(snap.system.arch == "x86");
  CHECK(snap.system.pointer_size == 4);
  CHECK(snap.process.name == "test_app.exe");

  // The README's facts: 2 threads, 13 modules (ntdll, kernel32, ...), 3 memory ranges (the two
  // thread stacks at 0x12f31c and 0x97f6e8, 256 bytes at 0x7c90eb14).
  REQUIRE(snap.threads.size() == 2);
  REQUIRE(snap.modules.size() == 13);
  CHECK(snap.modules[0].path == "c:\\test_app.exe");
  CHECK(snap.modules[1].path == "C:\\WINDOWS\\system32\\ntdll.dll");
  CHECK(snap.modules[2].path == "C:\\WINDOWS\\system32\\kernel32.dll");
  REQUIRE(snap.memory.size() == 3);
  CHECK(snap.memory[0].start == 0x12f31c);
  CHECK(snap.memory[1].start == 0x97f6e8);
  CHECK(snap.memory[2].start == 0x7c90eb14);
  CHECK(snap.memory[2].bytes.size() == 256);
  // No region map: the stacks are classed by their descriptors, the code by ntdll's range.
  REQUIRE(snap.regions.size() == 3);
  CHECK(snap.regions[0].cls == RegionClass::Stack);
  CHECK(snap.regions[0].class_source == RegionSource::ThreadList);
  CHECK(snap.regions[1].cls == RegionClass::Stack);
  CHECK(snap.regions[2].cls == RegionClass::Image);
  CHECK(snap.regions[2].class_source == RegionSource::ModuleList);
  CHECK(snap.regions[2].backing_file == "C:\\WINDOWS\\system32\\ntdll.dll");

  // The same facts through LLVM's reader: threads (ids, TEBs, stacks, Esp in the x86 context),
  // modules, memory ranges, and the Exception and BreakpadInfo streams.
  auto ref = llvm::object::MinidumpFile::create(snap.file->getMemBufferRef());
  if (!ref)
    FAIL(llvm::toString(ref.takeError()));
  const llvm::object::MinidumpFile &oracle = **ref;
  auto threads = oracle.getThreadList();
  REQUIRE(static_cast<bool>(threads));
  REQUIRE(threads->size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const llvm::minidump::Thread &t = (*threads)[i];
    CHECK(snap.threads[i].tid == t.ThreadId);
    CHECK(snap.threads[i].teb == t.EnvironmentBlock);
    CHECK(snap.threads[i].stack_start == t.Stack.StartOfMemoryRange);
    CHECK(snap.threads[i].stack_end == t.Stack.StartOfMemoryRange + t.Stack.Memory.DataSize);
    auto context = oracle.getRawData(t.Context);
    REQUIRE(static_cast<bool>(context));
    REQUIRE(context->size() >= 0xc8);
    CHECK(snap.threads[i].stack_pointer == llvm::support::endian::read32le(context->data() + 0xc4));
  }
  CHECK(snap.threads[0].tid == 0xbf4);
  CHECK(snap.threads[1].tid == 0x11c0);
  auto modules = oracle.getModuleList();
  REQUIRE(static_cast<bool>(modules));
  REQUIRE(modules->size() == snap.modules.size());
  for (size_t i = 0; i < modules->size(); ++i) {
    auto name = oracle.getString((*modules)[i].ModuleNameRVA);
    REQUIRE(static_cast<bool>(name));
    CHECK(snap.modules[i].path == *name);
    CHECK(snap.modules[i].start == (*modules)[i].BaseOfImage);
    CHECK(snap.modules[i].end == (*modules)[i].BaseOfImage + (*modules)[i].SizeOfImage);
  }
  auto memory = oracle.getMemoryList();
  REQUIRE(static_cast<bool>(memory));
  std::vector<std::pair<uint64_t, uint64_t>> listed, read; // (start, size) by start
  for (const llvm::minidump::MemoryDescriptor &d : *memory)
    listed.emplace_back(d.StartOfMemoryRange, d.Memory.DataSize);
  std::sort(listed.begin(), listed.end());
  for (const MemoryRange &m : snap.memory)
    read.emplace_back(m.start, m.bytes.size());
  CHECK(read == listed);
  CHECK(oracle.getRawStream(llvm::minidump::StreamType::Exception).hasValue());
  CHECK(oracle.getRawStream(llvm::minidump::StreamType::BreakpadInfo).hasValue());
  size_t unused = 0;
  for (const llvm::minidump::Directory &d : oracle.streams())
    unused += static_cast<uint32_t>(static_cast<llvm::minidump::StreamType>(d.Type)) == 0;
  CHECK(unused == 2);
}
