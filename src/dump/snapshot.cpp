#include "dumpsift/dump/snapshot.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "readers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>

namespace dumpsift {

llvm::StringRef formatName(DumpFormat format) {
  switch (format) {
  case DumpFormat::ElfCore:
    return "elf-core";
  case DumpFormat::Minidump:
    return "minidump";
  }
  return "unknown";
}

llvm::StringRef osName(Os os) {
  switch (os) {
  case Os::Unknown:
    return "unknown";
  case Os::Linux:
    return "linux";
  case Os::Android:
    return "android";
  case Os::FreeBsd:
    return "freebsd";
  case Os::NetBsd:
    return "netbsd";
  case Os::Windows:
    return "windows";
  case Os::MacOs:
    return "macos";
  case Os::Ios:
    return "ios";
  case Os::Solaris:
    return "solaris";
  case Os::Unix:
    return "unix";
  case Os::Ps3:
    return "ps3";
  case Os::NaCl:
    return "nacl";
  }
  return "unknown";
}

llvm::StringRef className(RegionClass cls) {
  switch (cls) {
  case RegionClass::Heap:
    return "heap";
  case RegionClass::Stack:
    return "stack";
  case RegionClass::Image:
    return "image";
  case RegionClass::Anonymous:
    return "anonymous";
  case RegionClass::Other:
    return "other";
  }
  return "other";
}

llvm::StringRef captureName(Capture capture) {
  switch (capture) {
  case Capture::Full:
    return "full";
  case Capture::Partial:
    return "partial";
  case Capture::None:
    return "none";
  }
  return "none";
}

llvm::StringRef sourceName(RegionSource source) {
  switch (source) {
  case RegionSource::Captured:
    return "captured";
  case RegionSource::MemoryInfo:
    return "memory-info";
  case RegionSource::LinuxMaps:
    return "linux-maps";
  case RegionSource::ProgramHeader:
    return "program-header";
  case RegionSource::FileNote:
    return "nt-file";
  case RegionSource::BrkHeap:
    return "brk";
  case RegionSource::ModuleList:
    return "module-list";
  case RegionSource::ThreadList:
    return "thread-list";
  case RegionSource::Teb:
    return "teb";
  case RegionSource::StackPointer:
    return "stack-pointer";
  case RegionSource::InitialStack:
    return "initial-stack";
  }
  return "captured";
}

std::string Permissions::str() const {
  std::string s = exact ? "---" : "???";
  if (read)
    s[0] = 'r';
  if (write)
    s[1] = 'w';
  if (execute)
    s[2] = 'x';
  return s;
}

uint64_t Snapshot::capturedBytes() const {
  uint64_t total = 0;
  for (const MemoryRange &range : memory)
    total += range.bytes.size();
  return total;
}

std::optional<llvm::StringRef>
Snapshot::findModule(llvm::function_ref<bool(llvm::StringRef file_name)> match) const {
  for (const Module &m : modules)
    if (match(fileName(m.path)))
      return llvm::StringRef(m.path);
  for (const Region &r : regions)
    if (!r.backing_file.empty() && match(fileName(r.backing_file)))
      return llvm::StringRef(r.backing_file);
  return std::nullopt;
}

std::optional<llvm::StringRef> Snapshot::findModule(llvm::ArrayRef<ModuleName> names) const {
  return findModule([&](llvm::StringRef file_name) {
    return llvm::any_of(names, [&](const ModuleName &n) { return n.matches(file_name); });
  });
}

const Module *Snapshot::executableModule() const {
  constexpr uint64_t kAtEntry = 9; // <elf.h>; not in LLVM 14's ELF.h
  for (const auto &[type, value] : auxv)
    if (type == kAtEntry)
      for (const Module &m : modules)
        if (value >= m.start && value < m.end)
          return &m;
  return modules.empty() ? nullptr : &modules.front();
}

bool namesModule(llvm::ArrayRef<ModuleName> names, llvm::StringRef path) {
  const llvm::StringRef file_name = fileName(path);
  return llvm::any_of(names, [&](const ModuleName &n) { return n.matches(file_name); });
}

llvm::StringRef fileName(llvm::StringRef path) {
  return llvm::sys::path::filename(path, llvm::sys::path::Style::windows);
}

bool ModuleName::matches(llvm::StringRef file_name) const {
  switch (match) {
  case Match::Exact:
    return file_name == text;
  case Match::AnyCase:
    return file_name.equals_insensitive(text);
  case Match::Prefix:
    return file_name.startswith(text);
  }
  return false;
}

llvm::Expected<std::unique_ptr<Snapshot>> openDump(llvm::StringRef path) {
  // mmap the whole file read-only; never copy it into the heap.
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return createError(buffer.getError().message());
  return openDump(std::move(*buffer));
}

/// How far into a file that is neither a core nor a minidump openDump looks for a Breakpad
/// microdump's BEGIN line (a log holds other lines before it).
constexpr size_t kMicrodumpSearchBytes = 64 * 1024;

namespace {

/// What a Windows kernel crash dump's DumpType (DUMP_HEADER64 +0xF98) says it holds.
llvm::StringRef kernelDumpType(uint32_t type) {
  switch (type) {
  case 1:
    return "complete memory dump";
  case 2:
    return "kernel memory dump";
  case 3:
    return "header only";
  case 4:
    return "small memory (triage) dump";
  case 5:
    return "complete memory dump, bitmap";
  case 6:
    return "kernel memory dump, bitmap";
  default:
    return "";
  }
}

/// The name of a dump format that holds no process, or a process in a format dumpsift does not
/// read, told by its magic ("a Windows kernel crash dump (PAGEDU64, ...)"); nullopt for any other
/// file. Sources: the DUMP_HEADER layouts of rizin's librz/bin/format/dmp (PAGEDU64, DumpType at
/// +0xF98, BugCheckCode at +0x38, the build in MinorVersion at +0xC), the Windows Research
/// Kernel's USERMODE_CRASHDUMP signatures, makedumpfile's and LiME's headers.
std::optional<std::string> foreignDumpName(llvm::StringRef bytes) {
  auto u32 = [&](size_t at) -> std::optional<uint32_t> {
    if (bytes.size() < at + 4)
      return std::nullopt;
    return llvm::support::endian::read32le(bytes.data() + at);
  };
  if (bytes.startswith("PAGEDU64") || bytes.startswith("PAGEDUMP")) {
    const bool wide = bytes.startswith("PAGEDU64");
    std::string what = wide ? "PAGEDU64, 64-bit" : "PAGEDUMP, 32-bit";
    if (std::optional<uint32_t> build = u32(12); build && *build != 0)
      what += ", Windows build " + std::to_string(*build);
    if (wide) {
      if (std::optional<uint32_t> type = u32(0xF98); type && !kernelDumpType(*type).empty())
        what += ", " + kernelDumpType(*type).str();
      if (std::optional<uint32_t> bug_check = u32(0x38))
        what += ", bug check " + hexAddress(*bug_check);
    }
    return "a Windows kernel crash dump (" + what + ")";
  }
  if (bytes.startswith("USERDU64") || bytes.startswith("USERDUMP"))
    return std::string("an old-format Windows user-mode crash dump (") + bytes.take_front(8).str() +
           ", written by userdump or Dr. Watson before minidumps)";
  if (bytes.startswith("KDUMP   "))
    return std::string("a Linux kernel crash dump (makedumpfile's compressed kdump format)");
  if (bytes.startswith("DISKDUMP"))
    return std::string("a Linux kernel crash dump (diskdump format)");
  if (bytes.startswith("EMiL"))
    return std::string("a LiME physical memory image (Linux)");
  if (bytes.startswith("hibr") || bytes.startswith("HIBR") || bytes.startswith("wake") ||
      bytes.startswith("WAKE") || bytes.startswith("RSTR"))
    return std::string("a Windows hibernation file");
  if (llvm::identify_magic(bytes) == llvm::file_magic::macho_core)
    return std::string("a Mach-O core dump (macOS, iOS)");
  return std::nullopt;
}

} // namespace

llvm::Expected<std::unique_ptr<Snapshot>> openDump(std::unique_ptr<llvm::MemoryBuffer> buffer) {
  auto snapshot = std::make_unique<Snapshot>();
  snapshot->path = buffer->getBufferIdentifier().str();
  llvm::StringRef bytes = buffer->getBuffer();
  snapshot->file = std::move(buffer);
  if (bytes.empty())
    return createError("empty file");

  llvm::Error err = llvm::Error::success();
  switch (llvm::identify_magic(bytes)) {
  case llvm::file_magic::elf_core:
    snapshot->format = DumpFormat::ElfCore;
    err = detail::readElfCore(*snapshot);
    break;
  case llvm::file_magic::minidump:
    snapshot->format = DumpFormat::Minidump;
    err = detail::readMinidump(*snapshot);
    break;
  case llvm::file_magic::elf:
  case llvm::file_magic::elf_relocatable:
  case llvm::file_magic::elf_executable:
  case llvm::file_magic::elf_shared_object:
    return createError("an ELF file but not a core dump (e_type is not ET_CORE)");
  default:
    if (bytes.startswith("\x7f"
                         "ELF"))
      return createError("truncated or malformed ELF header");
    // Breakpad's microdump: text that Android's Breakpad writes to logcat, every line behind the
    // log's prefix, between "-----BEGIN BREAKPAD MICRODUMP-----" and its END line.
    if (bytes.take_front(kMicrodumpSearchBytes).contains("-----BEGIN BREAKPAD MICRODUMP-----"))
      return createError("a Breakpad microdump (text from a log), which dumpsift does not read: "
                         "it reads ELF core dumps and minidumps");
    if (std::optional<std::string> name = foreignDumpName(bytes))
      return createError(*name + ", which dumpsift does not read: it reads process dumps (ELF "
                                 "core dumps and minidumps)");
    return createError("not a core dump or minidump (unrecognised magic)");
  }
  if (err)
    return err;
  detail::finalizeSnapshot(*snapshot);
  return snapshot;
}

} // namespace dumpsift
