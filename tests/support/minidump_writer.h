// A minimal little-endian minidump writer for tests: the header, the directory and the streams
// the readers know, each layout spelled out here from Microsoft's minidumpapiset.h documentation
// (MINIDUMP_HEADER, MINIDUMP_DIRECTORY, MINIDUMP_SYSTEM_INFO, MINIDUMP_THREAD, MINIDUMP_MODULE,
// MINIDUMP_MEMORY_LIST, MINIDUMP_MEMORY64_LIST, MINIDUMP_MEMORY_INFO, CONTEXT) and breakpad's Linux
// streams, sharing nothing with the parser or LLVM's structs: a wrong offset in the parser fails
// a test instead of being copied into its fixture.
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "support/byte_builder.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dumpsift::test::mdmp {

// Stream type codes, written out here independently of the parser's constants.
enum : uint32_t {
  ThreadListType = 3,
  ModuleListType = 4,
  MemoryListType = 5,
  SystemInfoType = 7,
  Memory64ListType = 9,
  MiscInfoType = 15,
  MemoryInfoListType = 16,
  LinuxProcStatusType = 0x47670004,
  LinuxCmdLineType = 0x47670006,
  LinuxAuxvType = 0x47670008,
  LinuxMapsType = 0x47670009,
};

// Lays out: a 32-byte header, a directory of `slots` 12-byte entries at offset 32, then blobs and
// streams in the order they are added. Streams fill directory slots in order.
class MdmpWriter {
public:
  explicit MdmpWriter(uint32_t slots) : slots_(slots) {
    out.u32(0x504d444d) // "MDMP"
        .u32(0xa793)    // version
        .u32(slots)     // NumberOfStreams
        .u32(32)        // StreamDirectoryRVA
        .u32(0)         // CheckSum
        .u32(0)         // TimeDateStamp
        .u64(0);        // Flags
    out.zeros(12 * size_t(slots));
  }

  // Appends raw bytes (memory contents, strings, contexts) and returns their file offset.
  uint32_t blob(const std::vector<uint8_t> &data) {
    uint32_t rva = static_cast<uint32_t>(out.size());
    out.raw(data);
    return rva;
  }
  uint32_t blob(std::string_view data) {
    return blob(std::vector<uint8_t>(data.begin(), data.end()));
  }

  // Appends a stream's bytes and points the next directory slot at them.
  void stream(uint32_t type, const std::vector<uint8_t> &data) {
    uint32_t rva = blob(data);
    entry(type, static_cast<uint32_t>(data.size()), rva);
  }
  void stream(uint32_t type, std::string_view text) {
    stream(type, std::vector<uint8_t>(text.begin(), text.end()));
  }

  // Fills the next directory slot with whatever the test wants, true or not.
  void entry(uint32_t type, uint32_t size, uint32_t rva) {
    REQUIRE(used_ < slots_);
    size_t at = 32 + 12 * size_t(used_++);
    out.put(at, type, 4);
    out.put(at + 4, size, 4);
    out.put(at + 8, rva, 4);
  }

  // The next offset a blob or stream will get.
  uint32_t next() const { return static_cast<uint32_t>(out.size()); }

  std::vector<uint8_t> finish() {
    REQUIRE(used_ == slots_);
    return out.bytes;
  }

  test::ByteWriter out;

private:
  uint32_t slots_;
  uint32_t used_ = 0;
};

// MINIDUMP_SYSTEM_INFO, 56 bytes.
inline std::vector<uint8_t> systemInfo(uint16_t arch, uint32_t platform) {
  test::ByteWriter b;
  b.u16(arch)        // +0  ProcessorArchitecture
      .u16(6)        // +2  ProcessorLevel
      .u16(0)        // +4  ProcessorRevision
      .u8(4)         // +6  NumberOfProcessors
      .u8(1)         // +7  ProductType
      .u32(10)       // +8  MajorVersion
      .u32(0)        // +12 MinorVersion
      .u32(19041)    // +16 BuildNumber
      .u32(platform) // +20 PlatformId
      .u32(0)        // +24 CSDVersionRva
      .u16(0)        // +28 SuiteMask
      .u16(0)        // +30 Reserved2
      .zeros(24);    // +32 Cpu
  REQUIRE(b.size() == 56);
  return b.bytes;
}

constexpr uint16_t kAmd64 = 9, kX86 = 0;
constexpr uint32_t kWin32NT = 2, kLinux = 0x8201;

// MINIDUMP_MISC_INFO with MINIDUMP_MISC1_PROCESS_ID.
inline std::vector<uint8_t> miscInfo(uint32_t pid) {
  test::ByteWriter b;
  b.u32(24).u32(1).u32(pid).u32(0).u32(0).u32(0);
  return b.bytes;
}

struct Desc {
  uint64_t start;
  uint32_t size;
  uint32_t rva;
};

// MINIDUMP_MEMORY_LIST: u32 count, then {u64 start, u32 DataSize, u32 Rva}.
inline std::vector<uint8_t> memoryList(const std::vector<Desc> &ranges,
                                       uint32_t count_override = 0) {
  test::ByteWriter b;
  b.u32(count_override ? count_override : static_cast<uint32_t>(ranges.size()));
  for (const Desc &d : ranges)
    b.u64(d.start).u32(d.size).u32(d.rva);
  return b.bytes;
}

// MINIDUMP_MEMORY64_LIST: u64 count, u64 BaseRva, then {u64 start, u64 DataSize}.
inline std::vector<uint8_t> memory64List(uint64_t count, uint64_t base_rva,
                                         const std::vector<std::pair<uint64_t, uint64_t>> &ranges) {
  test::ByteWriter b;
  b.u64(count).u64(base_rva);
  for (auto [start, size] : ranges)
    b.u64(start).u64(size);
  return b.bytes;
}

struct Info {
  uint64_t base;
  uint64_t size;
  uint32_t state;
  uint32_t protect;
  uint32_t type;
};
constexpr uint32_t kCommit = 0x1000, kReserve = 0x2000, kFree = 0x10000;
constexpr uint32_t kPrivate = 0x20000, kMapped = 0x40000, kImage = 0x1000000;

// MINIDUMP_MEMORY_INFO_LIST: {u32 SizeOfHeader, u32 SizeOfEntry, u64 NumberOfEntries}, then
// 48-byte MINIDUMP_MEMORY_INFO entries.
inline std::vector<uint8_t> memoryInfoList(const std::vector<Info> &entries,
                                           uint32_t entry_size = 48, uint64_t count_override = 0) {
  test::ByteWriter b;
  b.u32(16).u32(entry_size).u64(count_override ? count_override : entries.size());
  for (const Info &e : entries) {
    b.u64(e.base)       // +0  BaseAddress
        .u64(e.base)    // +8  AllocationBase
        .u32(e.protect) // +16 AllocationProtect
        .u32(0)         // +20 __alignment1
        .u64(e.size)    // +24 RegionSize
        .u32(e.state)   // +32 State
        .u32(e.protect) // +36 Protect
        .u32(e.type)    // +40 Type
        .u32(0);        // +44 __alignment2
  }
  return b.bytes;
}

struct ThreadDesc {
  uint32_t tid;
  uint64_t stack_start;
  uint32_t stack_size;
  uint32_t stack_rva;
  uint32_t context_size;
  uint32_t context_rva;
};

// MINIDUMP_THREAD_LIST: u32 count, then 48-byte MINIDUMP_THREAD entries.
inline std::vector<uint8_t> threadList(const std::vector<ThreadDesc> &threads,
                                       uint32_t count_override = 0) {
  test::ByteWriter b;
  b.u32(count_override ? count_override : static_cast<uint32_t>(threads.size()));
  for (const ThreadDesc &t : threads) {
    b.u32(t.tid)             // +0  ThreadId
        .u32(0)              // +4  SuspendCount
        .u32(0)              // +8  PriorityClass
        .u32(0)              // +12 Priority
        .u64(0x7ffde000)     // +16 Teb
        .u64(t.stack_start)  // +24 Stack.StartOfMemoryRange
        .u32(t.stack_size)   // +32 Stack.Memory.DataSize
        .u32(t.stack_rva)    // +36 Stack.Memory.Rva
        .u32(t.context_size) // +40 ThreadContext.DataSize
        .u32(t.context_rva); // +44 ThreadContext.Rva
  }
  return b.bytes;
}

struct ModuleDesc {
  uint64_t base;
  uint32_t size;
  uint32_t name_rva;
  uint32_t cv_size;
  uint32_t cv_rva;
};

// MINIDUMP_MODULE_LIST: u32 count, then 108-byte MINIDUMP_MODULE entries.
inline std::vector<uint8_t> moduleList(const std::vector<ModuleDesc> &modules) {
  test::ByteWriter b;
  b.u32(static_cast<uint32_t>(modules.size()));
  for (const ModuleDesc &m : modules) {
    b.u64(m.base)        // +0  BaseOfImage
        .u32(m.size)     // +8  SizeOfImage
        .u32(0)          // +12 CheckSum
        .u32(0)          // +16 TimeDateStamp
        .u32(m.name_rva) // +20 ModuleNameRva
        .zeros(52)       // +24 VersionInfo (VS_FIXEDFILEINFO)
        .u32(m.cv_size)  // +76 CvRecord.DataSize
        .u32(m.cv_rva)   // +80 CvRecord.Rva
        .u32(0)          // +84 MiscRecord.DataSize
        .u32(0)          // +88 MiscRecord.Rva
        .u64(0)          // +92 Reserved0
        .u64(0);         // +100 Reserved1
  }
  return b.bytes;
}

// MINIDUMP_STRING of an ASCII string: u32 length in bytes, UTF-16LE, a NUL unit.
inline std::vector<uint8_t> mdString(std::string_view ascii) {
  test::ByteWriter b;
  b.u32(static_cast<uint32_t>(2 * ascii.size()));
  for (char c : ascii)
    b.u16(static_cast<uint8_t>(c));
  b.u16(0);
  return b.bytes;
}

// A Windows AMD64 CONTEXT (1232 bytes) with ContextFlags at 0x30 and Rsp at 0x98.
inline std::vector<uint8_t> amd64Context(uint64_t rsp) {
  test::ByteWriter b;
  b.zeros(1232);
  b.put(0x30, 0x0010000b, 4); // CONTEXT_AMD64 | CONTROL | INTEGER | SEGMENTS
  b.put(0x98, static_cast<uint32_t>(rsp), 4);
  b.put(0x9c, static_cast<uint32_t>(rsp >> 32), 4);
  return b.bytes;
}

// A Windows x86 CONTEXT (716 bytes) with Esp at 0xc4.
inline std::vector<uint8_t> x86Context(uint32_t esp) {
  test::ByteWriter b;
  b.zeros(716);
  b.put(0, 0x0001003f, 4);
  b.put(0xc4, esp, 4);
  return b.bytes;
}

// The general registers of a Windows AMD64 CONTEXT and their offsets (winnt.h: Rax at 0x78 up to
// R15 at 0xf0, Rip at 0xf8).
inline const std::map<std::string_view, uint32_t> &amd64ContextOffsets() {
  static const std::map<std::string_view, uint32_t> offsets = {
      {"rax", 0x78}, {"rcx", 0x80}, {"rdx", 0x88}, {"rbx", 0x90}, {"rsp", 0x98}, {"rbp", 0xa0},
      {"rsi", 0xa8}, {"rdi", 0xb0}, {"r8", 0xb8},  {"r9", 0xc0},  {"r10", 0xc8}, {"r11", 0xd0},
      {"r12", 0xd8}, {"r13", 0xe0}, {"r14", 0xe8}, {"r15", 0xf0}, {"rip", 0xf8}};
  return offsets;
}

// A Windows module name for a Linux one: its file name in C:\dotnet\, "libX.so" as "X.dll" (the
// runtime libcoreclr.so is coreclr.dll there); assemblies keep theirs.
inline std::string windowsModuleName(std::string_view path) {
  std::string name(
      path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1));
  if (name.rfind("lib", 0) == 0 && name.find(".so") != std::string::npos)
    name = name.substr(3, name.find(".so") - 3) + ".dll";
  return "C:\\dotnet\\" + name;
}

// The x86_64 process `snap` (a Linux core) laid out as a full-memory minidump of a Windows process:
// SystemInfo (AMD64, Win32NT), MiscInfo, a ModuleList of Windows names (windowsModuleName), a
// ThreadList whose stack descriptors run from each stack pointer up, their registers in AMD64
// CONTEXTs, a MemoryInfoList (file-backed regions MEM_IMAGE or MEM_MAPPED, others MEM_PRIVATE; a
// read-only region with no file, a runtime's reservation that the core wrote as zeros, is
// MEM_RESERVE and not captured) and a Memory64List of every other captured byte. The memory is
// the Linux process's: what changes is the container and what it says of the regions.
inline std::vector<uint8_t> windowsMinidumpOf(const dumpsift::Snapshot &snap) {
  using dumpsift::RegionClass;
  MdmpWriter w(6);
  w.stream(SystemInfoType, systemInfo(kAmd64, kWin32NT));
  w.stream(MiscInfoType, miscInfo(static_cast<uint32_t>(snap.process.pid.value_or(0))));
  std::vector<ModuleDesc> modules;
  for (const dumpsift::Module &m : snap.modules)
    modules.push_back({m.start, static_cast<uint32_t>(m.end - m.start),
                       w.blob(mdString(windowsModuleName(m.path))), 0, 0});
  w.stream(ModuleListType, moduleList(modules));
  std::vector<ThreadDesc> threads;
  for (const dumpsift::Thread &t : snap.threads) {
    std::vector<uint8_t> context = amd64Context(t.stack_pointer);
    for (const dumpsift::Register &r : t.registers)
      if (auto at = amd64ContextOffsets().find(std::string_view(r.name.data(), r.name.size()));
          at != amd64ContextOffsets().end())
        for (unsigned i = 0; i < 8; ++i)
          context[at->second + i] = static_cast<uint8_t>(r.value >> (8 * i));
    const bool stack = t.stack_end > t.stack_pointer && t.stack_pointer >= t.stack_start;
    threads.push_back({static_cast<uint32_t>(t.tid), stack ? t.stack_pointer : 0,
                       stack ? static_cast<uint32_t>(t.stack_end - t.stack_pointer) : 0, 0,
                       static_cast<uint32_t>(context.size()), w.blob(context)});
  }
  w.stream(ThreadListType, threadList(threads));
  std::vector<Info> info;
  std::vector<std::pair<uint64_t, uint64_t>> captured; // the Memory64List's ranges
  for (const dumpsift::Region &r : snap.regions) {
    const bool reservation = r.backing_file.empty() && r.perms.read && !r.perms.write &&
                             !r.perms.execute && r.cls == RegionClass::Other;
    if (reservation || !r.perms.read) {
      info.push_back({r.start, r.size, kReserve, 1, kPrivate});
      continue;
    }
    const uint32_t protect =
        r.perms.execute ? (r.perms.write ? 0x40 : 0x20) : (r.perms.write ? 0x04 : 0x02);
    const uint32_t type = r.backing_file.empty()        ? kPrivate
                          : r.cls == RegionClass::Image ? kImage
                                                        : kMapped;
    info.push_back({r.start, r.size, kCommit, protect, type});
    for (const dumpsift::MemoryRange &m : snap.memory) {
      const uint64_t from = std::max(m.start, r.start), to = std::min(m.end(), r.end());
      if (from < to)
        captured.push_back({from, to - from});
    }
  }
  w.stream(MemoryInfoListType, memoryInfoList(info));
  std::sort(captured.begin(), captured.end());
  const uint64_t base = w.next() + 16 + 16 * captured.size();
  w.stream(Memory64ListType, memory64List(captured.size(), base, captured));
  for (auto [start, size] : captured)
    for (const dumpsift::MemoryRange &m : snap.memory)
      if (m.start <= start && start + size <= m.end())
        w.out.raw(m.bytes.slice(start - m.start, size));
  return w.finish();
}

// `n` bytes counting up from `first`.
inline std::vector<uint8_t> pattern(size_t n, uint8_t first) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>(first + i);
  return v;
}

} // namespace dumpsift::test::mdmp
