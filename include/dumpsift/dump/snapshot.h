// The process snapshot: what a dump says about a process, independent of the dump's format.
// Readers (ELF core, minidump) produce it; every later layer reads only this.
#pragma once

#include "dumpsift/support/diagnostics.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

enum class DumpFormat { ElfCore, Minidump };
llvm::StringRef formatName(DumpFormat format); // "elf-core", "minidump"

/// What a region is used for. Every captured byte belongs to exactly one class.
enum class RegionClass { Heap, Stack, Image, Anonymous, Other };
llvm::StringRef className(RegionClass cls); // "heap", "stack", "image", "anonymous", "other"

/// How much of a region's bytes the dump holds.
enum class Capture { Full, Partial, None };
llvm::StringRef captureName(Capture capture); // "full", "partial", "none"

/// What decided a region's class: the dump's own map of the address space, a list that names part
/// of it (modules, thread stacks), or nothing but the captured bytes themselves.
enum class RegionSource : uint8_t {
  Captured,      // no map describes it: captured private memory (minidumps without a map)
  MemoryInfo,    // a minidump MemoryInfoList entry: state, type and protection
  LinuxMaps,     // a minidump LinuxMaps line
  ProgramHeader, // an ELF core PT_LOAD's flags
  FileNote,      // an ELF core NT_FILE mapping (file-backed)
  BrkHeap,       // the ELF core's brk heap, found from the end of the executable
  ModuleList,    // a minidump ModuleList entry's image range
  ThreadList,    // a minidump thread's stack descriptor
  Teb,           // a thread's stack bounds from its TEB (NT_TIB StackLimit, StackBase)
  StackPointer,  // the region holding a thread's stack pointer
  InitialStack,  // the process's initial stack, where the auxiliary vector's strings lie
};
/// "captured", "memory-info", "linux-maps", "program-header", "nt-file", "brk", "module-list",
/// "thread-list", "teb", "stack-pointer", "initial-stack".
llvm::StringRef sourceName(RegionSource source);

struct Permissions {
  bool read = false;
  bool write = false;
  bool execute = false;
  /// False when only `read` is known: a region the dump describes by its captured bytes alone
  /// (the writer read it, but no map says whether it was writable or executable).
  bool exact = true;
  std::string str() const; // "rwx", "r--"; "r??" when not exact
};

/// One mapping of the process (an ELF PT_LOAD, a minidump MemoryInfo entry or captured range, or
/// the part of a captured range inside one module image or thread stack).
struct Region {
  uint64_t start = 0;
  uint64_t size = 0;
  Permissions perms;
  RegionClass cls = RegionClass::Other;
  /// What decided `cls` (`info` shows it).
  RegionSource class_source = RegionSource::Captured;
  /// Bytes of [start, start+size) whose content is in the dump.
  uint64_t captured = 0;
  /// Backing file (NT_FILE, LinuxMaps, module list); empty when anonymous or unknown.
  std::string backing_file;
  uint64_t file_offset = 0;
  /// Minidump MemoryInfo state/type words where known (0 otherwise), kept for heuristics.
  uint32_t mdmp_state = 0;
  uint32_t mdmp_type = 0;

  uint64_t end() const { return start + size; }
  Capture capture() const {
    return captured == 0 ? Capture::None : captured >= size ? Capture::Full : Capture::Partial;
  }
};

/// Bytes the dump holds for [start, start + bytes.size()). A zero-copy view into the mapped file.
struct MemoryRange {
  uint64_t start = 0;
  llvm::ArrayRef<uint8_t> bytes;
  uint64_t end() const { return start + bytes.size(); }
};

/// One general register of a thread as the dump saved it.
struct Register {
  /// Its name as the architecture's manuals spell it ("rbx", "x19", "eax"): a static string of the
  /// reader's register table.
  llvm::StringRef name;
  uint64_t value = 0;
};

struct Thread {
  uint64_t tid = 0;
  uint64_t stack_pointer = 0;
  /// The thread's stack, where known (0, 0 otherwise): a minidump's stack descriptor or the bounds
  /// in the thread's TEB, else the mapping that holds the stack pointer.
  uint64_t stack_start = 0;
  uint64_t stack_end = 0;
  /// Where [stack_start, stack_end) came from: ThreadList, Teb or StackPointer.
  RegionSource stack_source = RegionSource::StackPointer;
  /// Windows: the address of the thread environment block (0 where unknown).
  uint64_t teb = 0;
  /// Its general registers (the program counter and stack pointer among them), in the order of
  /// the architecture's register set, where the reader knows the layout: ELF NT_PRSTATUS of
  /// x86_64, aarch64, i386 and arm; the minidump CONTEXT of AMD64, x86 and ARM64. Empty otherwise.
  std::vector<Register> registers;
  /// WOW64 (a 32-bit process on 64-bit Windows, dumped as a 64-bit one): the thread's 32-bit TEB,
  /// and the 64-bit stack the WOW64 layer runs on beside the 32-bit one the program runs on
  /// (stack_pointer and stack_start/stack_end are the 32-bit ones): its stack pointer from the
  /// 64-bit context, its bounds from the 64-bit TEB. All 0 elsewhere or where unknown.
  uint64_t teb32 = 0;
  uint64_t wow64_stack_pointer = 0;
  uint64_t wow64_stack_start = 0;
  uint64_t wow64_stack_end = 0;
};

struct Module {
  std::string path;
  uint64_t start = 0;
  uint64_t end = 0;
  std::string build_id; // lowercase hex, empty when unknown
  /// The end of its image in memory (its last PT_LOAD's p_memsz, the bss included, which the
  /// mappings of the file do not cover), from its program headers when the dump holds them; 0 when
  /// unknown.
  uint64_t image_end = 0;
};

/// The operating system a dump says the process ran on: set once by the dump's reader (an ELF
/// core's OS ABI and notes, a minidump's platform id); every later layer compares this value.
enum class Os : uint8_t {
  Unknown,
  Linux,
  Android,
  FreeBsd,
  NetBsd,
  Windows,
  MacOs,
  Ios,
  Solaris,
  Unix,
  Ps3,
  NaCl,
};
/// "unknown", "linux", "android", "freebsd", "netbsd", "windows", "macos", "ios", "solaris",
/// "unix", "ps3", "nacl".
llvm::StringRef osName(Os os);

struct SystemInfo {
  Os os = Os::Unknown;
  std::string arch; // "x86_64", "aarch64", "x86", "arm", "ppc64", "s390x", ... or "machine-<n>"
  unsigned pointer_size = 8;
  bool little_endian = true;
  /// Windows: a 32-bit process on 64-bit Windows (WOW64) whose dump describes it as a 64-bit one
  /// (pointer_size 8, the 64-bit contexts): its program's memory and heaps are 32-bit.
  bool wow64 = false;
  /// The byte order of the process's words.
  llvm::support::endianness byteOrder() const {
    return little_endian ? llvm::support::little : llvm::support::big;
  }
};

/// The file name of a path, whichever separator it uses ("/usr/lib/libc.so.6" -> "libc.so.6",
/// "C:\\dotnet\\coreclr.dll" -> "coreclr.dll"): llvm::sys::path::filename in its Windows style,
/// which takes both.
llvm::StringRef fileName(llvm::StringRef path);

/// A file name to look for among the files a process maps: the whole name, exactly or in any case
/// (as Windows compares them), or its start ("libc.so" for "libc.so.6").
struct ModuleName {
  enum class Match : uint8_t { Exact, AnyCase, Prefix };
  llvm::StringRef text;
  Match match = Match::Exact;
  /// True when `file_name` (a file name, not a path) is this name.
  bool matches(llvm::StringRef file_name) const;
};

/// True when the file name of `path` (fileName) is one of `names`.
bool namesModule(llvm::ArrayRef<ModuleName> names, llvm::StringRef path);

struct ProcessInfo {
  std::optional<uint64_t> pid;
  std::string name;
  std::string command_line;
  /// Windows: the process environment block as the threads' TEBs give it (of pointer_size's
  /// width), and a WOW64 process's 32-bit one; 0 where unknown.
  uint64_t peb = 0;
  uint64_t peb32 = 0;
};

/// A dump file shorter than its own headers say: the dump was cut short (a copy or a write that
/// stopped early). Memory from `first_missing_address` on is lost, in part or whole.
struct Truncation {
  uint64_t file_size = 0;             // bytes the file holds
  uint64_t expected_size = 0;         // bytes its headers place data in
  uint64_t first_missing_address = 0; // the lowest address whose captured bytes are missing
  uint64_t missing_bytes = 0;         // captured memory the headers promise and the file lacks
};

/// A parsed dump. Owns the mapped file; all `MemoryRange::bytes` point into it, so a Snapshot must
/// outlive every view taken from it. Move-only.
struct Snapshot {
  std::string path;
  DumpFormat format = DumpFormat::ElfCore;
  SystemInfo system;
  ProcessInfo process;
  std::vector<Thread> threads;
  std::vector<Module> modules;
  /// Sorted by start, non-overlapping.
  std::vector<Region> regions;
  /// Sorted by start, non-overlapping; each lies inside one region.
  std::vector<MemoryRange> memory;
  /// Auxiliary vector (NT_AUXV / LinuxAuxv) as (type, value) pairs, where present.
  std::vector<std::pair<uint64_t, uint64_t>> auxv;
  /// Damage found while reading; the snapshot is still usable.
  Diagnostics diagnostics;
  /// Set when the file ends before the data its headers describe.
  std::optional<Truncation> truncation;
  /// The executable's file on this machine when the user named one (`--exe`); walkers that read
  /// symbols use it instead of the path the dump names. Empty: use that path, if it exists.
  std::string executable_file;
  std::unique_ptr<llvm::MemoryBuffer> file;

  uint64_t capturedBytes() const;

  /// The path of the first file the process maps whose file name (fileName) `match` accepts: the
  /// modules in order, then the regions' backing files in address order; nullopt when none is.
  std::optional<llvm::StringRef>
  findModule(llvm::function_ref<bool(llvm::StringRef file_name)> match) const;
  /// The same for a file name that one of `names` matches.
  std::optional<llvm::StringRef> findModule(llvm::ArrayRef<ModuleName> names) const;
  /// The executable's module: the one holding the auxiliary vector's AT_ENTRY, else the first;
  /// nullptr when there is none.
  const Module *executableModule() const;
};

/// Opens the dump at `path` (mmapped, never read into heap memory), identifying it by its magic.
/// Fails with a message naming the cause (not a dump, truncated header, ...). Damage to one
/// stream, note or segment does not fail the call: it becomes a warning in `diagnostics`.
llvm::Expected<std::unique_ptr<Snapshot>> openDump(llvm::StringRef path);

/// The same over an in-memory buffer (fuzzing and tests). `name` is used in messages.
llvm::Expected<std::unique_ptr<Snapshot>> openDump(std::unique_ptr<llvm::MemoryBuffer> buffer);

} // namespace dumpsift
