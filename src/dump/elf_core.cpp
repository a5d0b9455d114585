// ELF core reader (Linux kernel cores and gdb `gcore` cores; 32/64-bit, either byte order).
//
// What it takes from the file:
//   - PT_LOAD segments -> regions (range, permissions) and zero-copy memory ranges for the part
//     of each segment that is in the file (p_filesz, clamped to p_memsz and to the file size).
//   - PT_NOTE notes named "CORE": NT_PRSTATUS (threads, their general registers), NT_PRPSINFO (pid,
//   name, command line),
//     NT_FILE (file mappings -> backing files, modules), NT_AUXV (auxiliary vector).
//   - Build ids and image ends (bss included) of modules whose ELF header page was captured (GNU
//     build-id note, program headers; best effort).
// What it does not validate: register contents, note types it does not use, and whether the
// captured bytes are what the process really held (sparse cores read back as zeros).
//
// Every count read from the file is bounded by the file size before anything is allocated for it,
// and every per-item warning kind is rate-limited, so hostile input costs time and memory linear
// in the file size at most.
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "readers.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift::detail {

namespace {

using llvm::ArrayRef;
using llvm::StringRef;

// e_phnum value meaning "the real count is in section header 0's sh_info" (not in LLVM 14's ELF.h).
constexpr uint16_t kPnXnum = 0xffff;
// Auxiliary vector types used here (<elf.h>; not in LLVM 14's ELF.h).
constexpr uint64_t kAtNull = 0, kAtPhdr = 3, kAtPagesz = 6, kAtEntry = 9;
// Bounds for reading ELF images out of the dumped memory (build ids, the executable's bss end).
constexpr uint64_t kMaxImagePhdrs = 256;
constexpr uint64_t kMaxImageNoteBytes = 64 * 1024;
constexpr size_t kMaxBuildIdBytes = 64;
constexpr size_t kMaxImagesInspected = 4096;
// How many warnings of one kind are reported one by one before the rest are only counted.
constexpr unsigned kWarningsPerKind = 16;
// How far above the end of the executable's data the kernel may place the brk heap: the brk
// randomization range (arch_randomize_brk: 1 GiB for 64-bit tasks on current x86 kernels, 32 MiB
// for 32-bit tasks and on older kernels), plus a little slack for page rounding.
constexpr uint64_t kBrkRange64 = (1ull << 30) + (1ull << 20);
constexpr uint64_t kBrkRange32 = (32ull << 20) + (1ull << 20);

// Linux register-set layouts: offset of pr_pid and of the stack pointer inside NT_PRSTATUS
// (struct elf_prstatus = elf_prstatus_common, then pr_reg; see kernel include/linux/elfcore.h).
// 64-bit: pr_info(12) pr_cursig(2, padded to 16) pr_sigpend(8) pr_sighold(8) -> pr_pid @0x20;
//         4 timevals of 16 bytes from 0x30 -> pr_reg @0x70.
// 32-bit: pr_sigpend @0x10, pr_sighold @0x14 -> pr_pid @0x18; 4 timevals of 8 from 0x28
//         -> pr_reg @0x48.
constexpr uint64_t kPrPid64 = 0x20, kPrReg64 = 0x70;
constexpr uint64_t kPrPid32 = 0x18, kPrReg32 = 0x48;

/// Offset of the stack pointer inside NT_PRSTATUS for `machine` (an EM_* value) and ELF class, or
/// nullopt when this reader does not know the register layout.
///  x86_64  user_regs_struct: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax
///          rip cs eflags rsp ... -> rsp is register 19.
///  i386    user_regs_struct: ebx ecx edx esi edi ebp eax xds xes xfs xgs orig_eax eip xcs eflags
///          esp xss -> esp is register 15.
///  aarch64 user_pt_regs: regs[31] sp pc pstate -> sp is register 31.
///  arm     elf_gregset_t (18 words): r0..r15 cpsr orig_r0 -> sp (r13) is register 13.
std::optional<uint64_t> stackPointerOffset(unsigned machine, bool is64) {
  if (is64 && machine == llvm::ELF::EM_X86_64)
    return kPrReg64 + 19 * 8;
  if (is64 && machine == llvm::ELF::EM_AARCH64)
    return kPrReg64 + 31 * 8;
  if (!is64 && machine == llvm::ELF::EM_386)
    return kPrReg32 + 15 * 4;
  if (!is64 && machine == llvm::ELF::EM_ARM)
    return kPrReg32 + 13 * 4;
  return std::nullopt;
}

/// One general register in NT_PRSTATUS's pr_reg: its name and its index in the register set.
struct RegisterSlot {
  const char *name;
  uint8_t index;
};

/// The general registers of pr_reg that may hold pointers, for `machine` and ELF class (the
/// layouts stackPointerOffset lists; segment registers, flags and orig_rax/orig_eax left out);
/// empty for a layout this reader does not know.
llvm::ArrayRef<RegisterSlot> generalRegisters(unsigned machine, bool is64) {
  static const RegisterSlot x86_64[] = {
      {"r15", 0},  {"r14", 1},  {"r13", 2},  {"r12", 3},  {"rbp", 4},  {"rbx", 5},
      {"r11", 6},  {"r10", 7},  {"r9", 8},   {"r8", 9},   {"rax", 10}, {"rcx", 11},
      {"rdx", 12}, {"rsi", 13}, {"rdi", 14}, {"rip", 16}, {"rsp", 19}};
  static const RegisterSlot aarch64[] = {
      {"x0", 0},   {"x1", 1},   {"x2", 2},   {"x3", 3},   {"x4", 4},   {"x5", 5},   {"x6", 6},
      {"x7", 7},   {"x8", 8},   {"x9", 9},   {"x10", 10}, {"x11", 11}, {"x12", 12}, {"x13", 13},
      {"x14", 14}, {"x15", 15}, {"x16", 16}, {"x17", 17}, {"x18", 18}, {"x19", 19}, {"x20", 20},
      {"x21", 21}, {"x22", 22}, {"x23", 23}, {"x24", 24}, {"x25", 25}, {"x26", 26}, {"x27", 27},
      {"x28", 28}, {"x29", 29}, {"x30", 30}, {"sp", 31},  {"pc", 32}};
  static const RegisterSlot i386[] = {{"ebx", 0}, {"ecx", 1}, {"edx", 2},  {"esi", 3}, {"edi", 4},
                                      {"ebp", 5}, {"eax", 6}, {"eip", 12}, {"esp", 15}};
  static const RegisterSlot arm[] = {{"r0", 0},   {"r1", 1},  {"r2", 2},   {"r3", 3},
                                     {"r4", 4},   {"r5", 5},  {"r6", 6},   {"r7", 7},
                                     {"r8", 8},   {"r9", 9},  {"r10", 10}, {"r11", 11},
                                     {"r12", 12}, {"sp", 13}, {"lr", 14},  {"pc", 15}};
  if (is64 && machine == llvm::ELF::EM_X86_64)
    return x86_64;
  if (is64 && machine == llvm::ELF::EM_AARCH64)
    return aarch64;
  if (!is64 && machine == llvm::ELF::EM_386)
    return i386;
  if (!is64 && machine == llvm::ELF::EM_ARM)
    return arm;
  return {};
}

/// The architecture of an EM_* value in an ELF of the given class, as target triples spell it
/// ("x86_64", "aarch64", "ppc64", "s390x", "mips64", ...), or "machine-<n>" for one not listed.
std::string archName(unsigned machine, bool is64) {
  switch (machine) {
  case llvm::ELF::EM_X86_64:
    return "x86_64";
  case llvm::ELF::EM_AARCH64:
    return "aarch64";
  case llvm::ELF::EM_386:
    return "x86";
  case llvm::ELF::EM_ARM:
    return "arm";
  case llvm::ELF::EM_PPC:
    return "ppc";
  case llvm::ELF::EM_PPC64:
    return "ppc64";
  case llvm::ELF::EM_S390:
    return is64 ? "s390x" : "s390";
  case llvm::ELF::EM_MIPS:
    return is64 ? "mips64" : "mips";
  case llvm::ELF::EM_RISCV:
    return is64 ? "riscv64" : "riscv32";
  case llvm::ELF::EM_SPARCV9:
    return "sparcv9";
  }
  return "machine-" + std::to_string(machine);
}

/// True when [offset, offset + len) lies inside a buffer of `size` bytes; never overflows.
bool fits(uint64_t size, uint64_t offset, uint64_t len) {
  return offset <= size && len <= size - offset;
}

/// A string field of fixed width: the bytes up to the first NUL (or all of them).
std::string fixedString(ArrayRef<uint8_t> bytes) {
  auto nul = std::find(bytes.begin(), bytes.end(), uint8_t(0));
  return std::string(bytes.begin(), nul);
}

/// True for NT_FILE paths that name anonymous shared memory rather than a file on disk
/// (MAP_SHARED|MAP_ANONYMOUS shows as "/dev/zero (deleted)", SysV shm as "/SYSV...", memfd as
/// "/memfd:..."). Such mappings are data, not images, and are not modules.
bool isAnonymousSharedPath(StringRef path) {
  return path == "/dev/zero (deleted)" || path == "/dev/zero" || path.startswith("/SYSV") ||
         path.startswith("/memfd:");
}

/// The captured bytes [addr, addr + len) when they lie in one memory range of `memory` (sorted by
/// start, non-overlapping); nullptr otherwise.
const uint8_t *viewCaptured(const std::vector<MemoryRange> &memory, uint64_t addr, uint64_t len) {
  auto it = std::upper_bound(memory.begin(), memory.end(), addr,
                             [](uint64_t a, const MemoryRange &m) { return a < m.start; });
  if (it == memory.begin())
    return nullptr;
  --it;
  if (!fits(it->bytes.size(), addr - it->start, len))
    return nullptr;
  return it->bytes.data() + (addr - it->start);
}

/// Reports warnings of one kind individually up to kWarningsPerKind, then counts the rest and
/// reports the count once at the end (flush). Keeps hostile input from flooding Diagnostics.
class WarningLimiter {
public:
  WarningLimiter(Diagnostics &diags, std::string kind) : diags_(diags), kind_(std::move(kind)) {}
  /// Reports (where, message) unless the budget for this kind is spent.
  void warn(std::string where, std::string message) {
    if (++count_ <= kWarningsPerKind)
      diags_.warn(std::move(where), std::move(message));
  }
  /// Reports how many warnings were held back, if any. Call once, after the last warn().
  void flush() {
    if (count_ > kWarningsPerKind)
      diags_.warn("elf core", std::to_string(count_ - kWarningsPerKind) + " more " + kind_ +
                                  " warnings not shown");
  }

private:
  Diagnostics &diags_;
  std::string kind_;
  uint64_t count_ = 0;
};

/// One NT_FILE entry: [start, end) maps `path` from byte offset `file_offset`.
struct FileMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;
  uint32_t path = 0; // index into ElfCoreReader::paths_
};

/// A PT_LOAD segment after validation, before it becomes a region.
struct Segment {
  size_t index = 0; // in the program header table, for messages
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t offset = 0;
  uint64_t captured = 0; // bytes of the segment that are in the file
  uint32_t flags = 0;
};

/// What an ELF image found in the dumped memory says about itself.
struct LoadedImage {
  uint64_t load_end = 0; // highest bias + p_vaddr + p_memsz of its PT_LOADs (end of bss)
  std::string build_id;  // lowercase hex, empty when not found
};

/// Reads one ELF core of layout ELFT into a Snapshot. Construct, call read() once.
template <class ELFT> class ElfCoreReader {
  LLVM_ELF_IMPORT_TYPES_ELFT(ELFT)

public:
  /// `snapshot.file` must hold the bytes `elf` was created over; both must outlive the reader.
  ElfCoreReader(Snapshot &snapshot, const llvm::object::ELFFile<ELFT> &elf)
      : snap_(snapshot), elf_(elf), file_(elf.base(), elf.getBufSize()),
        segment_warnings_(snapshot.diagnostics, "segment"),
        note_warnings_(snapshot.diagnostics, "note") {}

  /// Fills the snapshot. Fails only when no program header can be read; everything else becomes
  /// warnings.
  llvm::Error read() {
    const Elf_Ehdr &header = elf_.getHeader();
    machine_ = header.e_machine;
    SystemInfo &sys = snap_.system;
    sys.os = header.e_ident[llvm::ELF::EI_OSABI] == llvm::ELF::ELFOSABI_FREEBSD ? Os::FreeBsd
                                                                                : Os::Linux;
    sys.arch = archName(machine_, ELFT::Is64Bits);
    sys.pointer_size = ELFT::Is64Bits ? 8 : 4;
    sys.little_endian = ELFT::TargetEndianness == llvm::support::little;

    auto phdrs = programHeaders();
    if (!phdrs)
      return phdrs.takeError();
    readLoads(*phdrs);
    readNotes(*phdrs);
    applyFileMappings();
    buildModules();
    classifyRegions();
    segment_warnings_.flush();
    note_warnings_.flush();
    return llvm::Error::success();
  }

private:
  /// The program header table, bounded by the file: handles PN_XNUM and a table cut short by
  /// the end of the file (warning, the entries that fit). Fails when no entry can be read.
  llvm::Expected<ArrayRef<Elf_Phdr>> programHeaders() {
    const Elf_Ehdr &header = elf_.getHeader();
    uint64_t count = header.e_phnum;
    if (count == 0)
      return createError("no program headers (e_phnum is 0)");
    if (header.e_phentsize != sizeof(Elf_Phdr))
      return createError("e_phentsize is " + llvm::Twine(unsigned(header.e_phentsize)) +
                         ", expected " + llvm::Twine(unsigned(sizeof(Elf_Phdr))));
    if (count == kPnXnum) {
      // The real count is in sh_info of section header 0.
      uint64_t shoff = header.e_shoff;
      if (shoff == 0)
        return createError(
            "e_phnum is PN_XNUM (0xffff) but there is no section header 0 to hold the "
            "real count (e_shoff is 0)");
      if (header.e_shentsize != sizeof(Elf_Shdr))
        return createError("e_phnum is PN_XNUM (0xffff) but e_shentsize is " +
                           llvm::Twine(unsigned(header.e_shentsize)));
      if (!fits(file_.size(), shoff, sizeof(Elf_Shdr)))
        return createError("e_phnum is PN_XNUM (0xffff) but section header 0 (at offset 0x" +
                           llvm::Twine::utohexstr(shoff) + ") lies past the end of the file");
      const auto *sh0 = reinterpret_cast<const Elf_Shdr *>(file_.data() + shoff);
      count = sh0->sh_info;
      if (count == 0)
        return createError(
            "e_phnum is PN_XNUM (0xffff) and section header 0 gives 0 program headers");
    }
    uint64_t phoff = header.e_phoff;
    if (phoff >= file_.size())
      return createError("program header table offset 0x" + llvm::Twine::utohexstr(phoff) +
                         " lies past the end of the file (" + llvm::Twine(file_.size()) +
                         " bytes)");
    uint64_t available = (file_.size() - phoff) / sizeof(Elf_Phdr);
    if (available == 0)
      return createError("program header table at offset 0x" + llvm::Twine::utohexstr(phoff) +
                         " is cut off by the end of the file (" + llvm::Twine(file_.size()) +
                         " bytes)");
    if (count > available) {
      snap_.diagnostics.warn("program header table",
                             "holds " + std::to_string(count) + " entries but only " +
                                 std::to_string(available) +
                                 " fit in the file (truncated core?); using those");
      count = available;
    }
    const auto *first = reinterpret_cast<const Elf_Phdr *>(file_.data() + phoff);
    return ArrayRef<Elf_Phdr>(first, static_cast<size_t>(count));
  }

  /// Turns PT_LOAD segments into regions and memory ranges (sorted, overlaps dropped here so
  /// that warnings can name segment indexes).
  void readLoads(ArrayRef<Elf_Phdr> phdrs) {
    std::vector<Segment> segments;
    for (size_t i = 0; i < phdrs.size(); ++i) {
      const Elf_Phdr &p = phdrs[i];
      if (p.p_type != llvm::ELF::PT_LOAD)
        continue;
      if (segments.size() == kMaxRanges) {
        cappedRangeCount(phdrs.size(), "program headers", snap_.diagnostics);
        break;
      }
      Segment s;
      s.index = i;
      s.vaddr = p.p_vaddr;
      s.memsz = p.p_memsz;
      s.offset = p.p_offset;
      s.flags = p.p_flags;
      uint64_t filesz = p.p_filesz;
      std::string where =
          "segment " + std::to_string(i) + " (PT_LOAD at " + hexAddress(s.vaddr) + ")";
      if (s.memsz == 0)
        continue;
      if (s.vaddr + s.memsz < s.vaddr || s.vaddr + s.memsz == 0) {
        segment_warnings_.warn(where, "p_memsz 0x" + llvm::utohexstr(s.memsz) +
                                          " runs past the top of the address space; ignored");
        continue;
      }
      if (filesz > s.memsz) {
        segment_warnings_.warn(where, "p_filesz 0x" + llvm::utohexstr(filesz) +
                                          " exceeds p_memsz 0x" + llvm::utohexstr(s.memsz) +
                                          "; using p_memsz");
        filesz = s.memsz;
      }
      s.captured = filesz;
      if (filesz > 0 && !fits(file_.size(), s.offset, filesz)) {
        s.captured = s.offset < file_.size() ? file_.size() - s.offset : 0;
        noteTruncation(s.offset + std::min(filesz, UINT64_MAX - s.offset), s.vaddr + s.captured,
                       filesz - s.captured);
        segment_warnings_.warn(where, "file range [0x" + llvm::utohexstr(s.offset) + ", +0x" +
                                          llvm::utohexstr(filesz) +
                                          ") runs past the end of the file; " +
                                          std::to_string(s.captured) + " of " +
                                          std::to_string(filesz) + " bytes captured");
      }
      segments.push_back(s);
    }
    std::stable_sort(segments.begin(), segments.end(),
                     [](const Segment &a, const Segment &b) { return a.vaddr < b.vaddr; });
    snap_.regions.reserve(segments.size());
    snap_.memory.reserve(segments.size());
    const Segment *last = nullptr;
    for (const Segment &s : segments) {
      if (last && s.vaddr < last->vaddr + last->memsz) {
        segment_warnings_.warn("segment " + std::to_string(s.index) + " (PT_LOAD at " +
                                   hexAddress(s.vaddr) + ")",
                               "overlaps segment " + std::to_string(last->index) + " at " +
                                   hexAddress(last->vaddr) + "; ignored");
        continue;
      }
      last = &s;
      Region r;
      r.start = s.vaddr;
      r.size = s.memsz;
      r.perms.read = (s.flags & llvm::ELF::PF_R) != 0;
      r.perms.write = (s.flags & llvm::ELF::PF_W) != 0;
      r.perms.execute = (s.flags & llvm::ELF::PF_X) != 0;
      r.captured = s.captured;
      snap_.regions.push_back(std::move(r));
      if (s.captured > 0)
        snap_.memory.push_back({s.vaddr, file_.slice(s.offset, s.captured)});
    }
  }

  /// Records that the file lacks `missing` bytes of a segment whose data should end at file offset
  /// `expected_end`; `first_missing` is the first address they belong to.
  void noteTruncation(uint64_t expected_end, uint64_t first_missing, uint64_t missing) {
    if (!snap_.truncation)
      snap_.truncation = Truncation{file_.size(), file_.size(), first_missing, 0};
    Truncation &t = *snap_.truncation;
    t.expected_size = std::max(t.expected_size, expected_end);
    t.first_missing_address = std::min(t.first_missing_address, first_missing);
    t.missing_bytes =
        missing > UINT64_MAX - t.missing_bytes ? UINT64_MAX : t.missing_bytes + missing;
  }

  /// Walks every PT_NOTE segment; damaged segments and notes become warnings.
  void readNotes(ArrayRef<Elf_Phdr> phdrs) {
    for (size_t i = 0; i < phdrs.size(); ++i) {
      if (phdrs[i].p_type != llvm::ELF::PT_NOTE)
        continue;
      Elf_Phdr phdr = phdrs[i];
      std::string where = "note segment " + std::to_string(i);
      uint64_t offset = phdr.p_offset;
      uint64_t size = phdr.p_filesz;
      if (offset >= file_.size()) {
        note_warnings_.warn(where, "offset 0x" + llvm::utohexstr(offset) +
                                       " lies past the end of the file; notes skipped");
        continue;
      }
      if (!fits(file_.size(), offset, size)) {
        uint64_t kept = file_.size() - offset;
        note_warnings_.warn(where, "runs past the end of the file; reading the " +
                                       std::to_string(kept) + " of " + std::to_string(size) +
                                       " bytes that are present");
        phdr.p_filesz = kept;
      }
      llvm::Error err = llvm::Error::success();
      size_t index = 0;
      for (const Elf_Note &note : elf_.notes(phdr, err))
        readNote(note, where + ", note " + std::to_string(index++));
      if (err)
        note_warnings_.warn(where, "damaged after " + std::to_string(index) +
                                       " notes: " + llvm::toString(std::move(err)));
    }
  }

  /// Dispatches one note. Notes named "CORE" carry the Linux layouts, "NetBSD-CORE" and
  /// "NetBSD-CORE@<lwpid>" NetBSD's.
  void readNote(const Elf_Note &note, const std::string &where) {
    StringRef name = note.getName();
    if (name.startswith("NetBSD-CORE")) {
      snap_.system.os = Os::NetBsd;
      readNetbsdNote(name, note.getType(), note.getDesc(), where);
      return;
    }
    if (name != "CORE")
      return;
    ArrayRef<uint8_t> desc = note.getDesc();
    switch (note.getType()) {
    case llvm::ELF::NT_PRSTATUS:
      readPrstatus(desc, where);
      break;
    case llvm::ELF::NT_PRPSINFO:
      readPrpsinfo(desc, where);
      break;
    case llvm::ELF::NT_AUXV:
      readAuxv(desc, where);
      break;
    case llvm::ELF::NT_FILE:
      readFileNote(desc, where);
      break;
    default:
      break;
    }
  }

  /// Reads an unsigned integer of the dump's byte order; the caller checked the bounds.
  template <typename T> T get(const uint8_t *p) const {
    return llvm::support::endian::read<T, ELFT::TargetEndianness, 1>(p);
  }
  /// Reads a word of the dump's class (4 or 8 bytes).
  uint64_t getWord(const uint8_t *p) const {
    return ELFT::Is64Bits ? get<uint64_t>(p) : get<uint32_t>(p);
  }
  static constexpr uint64_t kWord = ELFT::Is64Bits ? 8 : 4;

  /// NetBSD's notes (sys/sys/exec_elf.h, sys/kern/core_elf32.c): "NetBSD-CORE" type 1 is the
  /// procinfo (struct netbsd_elfcore_procinfo: cpi_pid @80, cpi_name[32] @124, 160 bytes in
  /// version 1); each LWP writes its registers in notes named "NetBSD-CORE@<lwpid>", one thread
  /// per LWP. The stack pointer is read from amd64's PT_GETREGS (type 33, struct reg: rsp is
  /// register 24).
  void readNetbsdNote(StringRef name, uint32_t type, ArrayRef<uint8_t> desc,
                      const std::string &where) {
    constexpr uint32_t kProcinfo = 1, kAmd64GetRegs = 33;
    constexpr uint64_t kCpiPid = 80, kCpiName = 124, kCpiNameSize = 32;
    constexpr uint64_t kAmd64Rsp = 24 * 8;
    if (name == "NetBSD-CORE") {
      if (type != kProcinfo)
        return;
      if (!fits(desc.size(), kCpiName, kCpiNameSize)) {
        note_warnings_.warn(where, "NetBSD procinfo of " + std::to_string(desc.size()) +
                                       " bytes is too short; ignored");
        return;
      }
      snap_.process.pid = get<uint32_t>(desc.data() + kCpiPid);
      snap_.process.name = fixedString(desc.slice(kCpiName, kCpiNameSize));
      return;
    }
    uint64_t lwpid = 0;
    if (name.drop_front(StringRef("NetBSD-CORE@").size()).getAsInteger(10, lwpid)) {
      note_warnings_.warn(where, "note name '" + name.str() + "' names no LWP; ignored");
      return;
    }
    // An LWP's notes come together; a thread for the first of them.
    if (snap_.threads.empty() || snap_.threads.back().tid != lwpid) {
      Thread t;
      t.tid = lwpid;
      snap_.threads.push_back(t);
    }
    if (machine_ == llvm::ELF::EM_X86_64 && type == kAmd64GetRegs &&
        fits(desc.size(), kAmd64Rsp, 8))
      snap_.threads.back().stack_pointer = get<uint64_t>(desc.data() + kAmd64Rsp);
  }

  /// NT_PRSTATUS: one thread, tid = pr_pid, stack pointer from the register set.
  void readPrstatus(ArrayRef<uint8_t> desc, const std::string &where) {
    uint64_t pid_at = ELFT::Is64Bits ? kPrPid64 : kPrPid32;
    if (!fits(desc.size(), pid_at, 4)) {
      note_warnings_.warn(where, "NT_PRSTATUS of " + std::to_string(desc.size()) +
                                     " bytes is too short for pr_pid; thread skipped");
      return;
    }
    Thread t;
    t.tid = get<uint32_t>(desc.data() + pid_at);
    std::optional<uint64_t> sp_at = stackPointerOffset(machine_, ELFT::Is64Bits);
    if (!sp_at) {
      if (!warned_unknown_sp_)
        snap_.diagnostics.warn("NT_PRSTATUS", "register layout of " +
                                                  archName(machine_, ELFT::Is64Bits) +
                                                  " is not known; thread stack pointers unknown");
      warned_unknown_sp_ = true;
    } else if (!fits(desc.size(), *sp_at, kWord)) {
      note_warnings_.warn(where, "NT_PRSTATUS of " + std::to_string(desc.size()) +
                                     " bytes is too short for the stack pointer");
    } else {
      t.stack_pointer = getWord(desc.data() + *sp_at);
    }
    const uint64_t regs_at = ELFT::Is64Bits ? kPrReg64 : kPrReg32;
    for (const RegisterSlot &slot : generalRegisters(machine_, ELFT::Is64Bits))
      if (fits(desc.size(), regs_at + slot.index * kWord, kWord))
        t.registers.push_back({slot.name, getWord(desc.data() + regs_at + slot.index * kWord)});
    snap_.threads.push_back(std::move(t));
  }

  /// NT_PRPSINFO: pid, program name and the start of the command line.
  /// 64-bit elf_prpsinfo (136 bytes): pr_flag @8, pr_uid/pr_gid u32 @16/20, pr_pid @24,
  /// pr_fname[16] @40, pr_psargs[80] @56. 32-bit: pr_flag @4 then 16-bit uid/gid on i386 and
  /// arm (124 bytes: pr_pid @12, pr_fname @28, pr_psargs @44) or 32-bit uid/gid elsewhere
  /// (128 bytes: pr_pid @16, pr_fname @32, pr_psargs @48); told apart by the size.
  void readPrpsinfo(ArrayRef<uint8_t> desc, const std::string &where) {
    if (have_psinfo_) {
      note_warnings_.warn(where, "second NT_PRPSINFO ignored");
      return;
    }
    uint64_t pid_at = 24, fname_at = 40, args_at = 56;
    if (!ELFT::Is64Bits) {
      bool short_ids = desc.size() < 128;
      pid_at = short_ids ? 12 : 16;
      fname_at = short_ids ? 28 : 32;
      args_at = short_ids ? 44 : 48;
    }
    if (!fits(desc.size(), args_at, 80)) {
      note_warnings_.warn(where, "NT_PRPSINFO of " + std::to_string(desc.size()) +
                                     " bytes is too short; ignored");
      return;
    }
    have_psinfo_ = true;
    snap_.process.pid = get<uint32_t>(desc.data() + pid_at);
    snap_.process.name = fixedString(desc.slice(fname_at, 16));
    std::string args = fixedString(desc.slice(args_at, 80));
    // The kernel turns the NULs between arguments into spaces, leaving one at the end.
    while (!args.empty() && args.back() == ' ')
      args.pop_back();
    snap_.process.command_line = std::move(args);
  }

  /// NT_AUXV: (type, value) word pairs up to AT_NULL.
  void readAuxv(ArrayRef<uint8_t> desc, const std::string &where) {
    if (have_auxv_) {
      note_warnings_.warn(where, "second NT_AUXV ignored");
      return;
    }
    have_auxv_ = true;
    size_t pairs = desc.size() / (2 * kWord);
    snap_.auxv.reserve(pairs);
    for (size_t i = 0; i < pairs; ++i) {
      uint64_t type = getWord(desc.data() + i * 2 * kWord);
      if (type == kAtNull)
        return;
      snap_.auxv.emplace_back(type, getWord(desc.data() + i * 2 * kWord + kWord));
    }
  }

  /// NT_FILE: word count, word page_size, {start, end, file_ofs}[count], then count
  /// NUL-terminated paths. Byte offset = file_ofs * page_size (kernel: page_size 4096, offsets
  /// in pages; gdb: page_size 1, offsets in bytes).
  void readFileNote(ArrayRef<uint8_t> desc, const std::string &where) {
    if (have_files_) {
      note_warnings_.warn(where, "second NT_FILE ignored");
      return;
    }
    if (desc.size() < 2 * kWord) {
      note_warnings_.warn(where, "NT_FILE of " + std::to_string(desc.size()) +
                                     " bytes is too short for its header; ignored");
      return;
    }
    uint64_t count = getWord(desc.data());
    uint64_t page_size = getWord(desc.data() + kWord);
    uint64_t fits_count = (desc.size() - 2 * kWord) / (3 * kWord);
    if (count > fits_count) {
      note_warnings_.warn(where, "NT_FILE claims " + std::to_string(count) + " mappings but its " +
                                     std::to_string(desc.size()) + " bytes hold at most " +
                                     std::to_string(fits_count) + "; ignored");
      return;
    }
    have_files_ = true;
    if (page_size == 0) {
      note_warnings_.warn(where, "NT_FILE page size is 0; file offsets taken as bytes");
      page_size = 1;
    }
    const uint8_t *table = desc.data() + 2 * kWord;
    ArrayRef<uint8_t> names = desc.drop_front(2 * kWord + count * 3 * kWord);
    files_.reserve(count);
    llvm::StringMap<uint32_t> path_index;
    for (uint64_t i = 0; i < count; ++i) {
      // Paths follow the table in the same order, each NUL-terminated.
      auto nul = std::find(names.begin(), names.end(), uint8_t(0));
      if (nul == names.end()) {
        note_warnings_.warn(where, "NT_FILE lists " + std::to_string(count) +
                                       " mappings but only " + std::to_string(i) +
                                       " NUL-terminated paths; the rest ignored");
        break;
      }
      StringRef path(reinterpret_cast<const char *>(names.data()), nul - names.begin());
      names = names.drop_front(path.size() + 1);
      FileMapping m;
      const uint8_t *entry = table + i * 3 * kWord;
      m.start = getWord(entry);
      m.end = getWord(entry + kWord);
      uint64_t ofs = getWord(entry + 2 * kWord);
      if (m.end <= m.start) {
        note_warnings_.warn(where, "NT_FILE mapping " + std::to_string(i) + " of " + path.str() +
                                       " has end <= start; ignored");
        continue;
      }
      if (__builtin_mul_overflow(ofs, page_size, &m.file_offset)) {
        note_warnings_.warn(where, "NT_FILE mapping " + std::to_string(i) +
                                       " has a file offset that overflows; using 0");
        m.file_offset = 0;
      }
      auto [it, inserted] = path_index.try_emplace(path, uint32_t(paths_.size()));
      if (inserted)
        paths_.push_back(path.str());
      m.path = it->second;
      files_.push_back(m);
    }
  }

  /// Gives each region that overlaps an NT_FILE mapping its backing file and file offset.
  void applyFileMappings() {
    if (files_.empty())
      return;
    std::vector<FileMapping> sorted = files_;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const FileMapping &a, const FileMapping &b) { return a.start < b.start; });
    for (Region &r : snap_.regions) {
      auto it = std::upper_bound(sorted.begin(), sorted.end(), r.start,
                                 [](uint64_t a, const FileMapping &m) { return a < m.start; });
      const FileMapping *match = nullptr;
      if (it != sorted.begin() && std::prev(it)->end > r.start)
        match = &*std::prev(it);
      else if (it != sorted.end() && it->start < r.end())
        match = &*it;
      if (!match)
        continue;
      r.backing_file = paths_[match->path];
      r.file_offset = r.start >= match->start ? match->file_offset + (r.start - match->start)
                                              : match->file_offset;
    }
  }

  /// Modules: NT_FILE mappings grouped by path, lowest start .. highest end; build ids where the
  /// module's ELF header is captured.
  void buildModules() {
    std::map<uint32_t, Module> by_path;
    for (const FileMapping &m : files_) {
      if (isAnonymousSharedPath(paths_[m.path]))
        continue;
      auto [it, inserted] = by_path.try_emplace(m.path);
      Module &mod = it->second;
      if (inserted) {
        mod.path = paths_[m.path];
        mod.start = m.start;
        mod.end = m.end;
      } else {
        mod.start = std::min(mod.start, m.start);
        mod.end = std::max(mod.end, m.end);
      }
    }
    snap_.modules.reserve(by_path.size());
    for (auto &entry : by_path)
      snap_.modules.push_back(std::move(entry.second));
    std::sort(snap_.modules.begin(), snap_.modules.end(),
              [](const Module &a, const Module &b) { return a.start < b.start; });
    size_t inspected = 0;
    for (Module &mod : snap_.modules) {
      if (inspected++ >= kMaxImagesInspected)
        break;
      if (std::optional<LoadedImage> image = inspectImage(mod.start)) {
        mod.build_id = image->build_id;
        mod.image_end = image->load_end;
      }
    }
  }

  /// Reads the ELF image whose header is mapped (and captured) at `base`: its load end and its
  /// GNU build id. Best effort and bounded; nullopt when the header is not captured, not ELF, or
  /// not of the core's class and byte order.
  std::optional<LoadedImage> inspectImage(uint64_t base) const {
    const uint8_t *eh = viewCaptured(snap_.memory, base, sizeof(Elf_Ehdr));
    if (!eh || StringRef(reinterpret_cast<const char *>(eh), 4) != "\x7f"
                                                                   "ELF")
      return std::nullopt;
    const auto &header = *reinterpret_cast<const Elf_Ehdr *>(eh);
    if (header.getFileClass() != (ELFT::Is64Bits ? llvm::ELF::ELFCLASS64 : llvm::ELF::ELFCLASS32) ||
        header.getDataEncoding() != (ELFT::TargetEndianness == llvm::support::little
                                         ? llvm::ELF::ELFDATA2LSB
                                         : llvm::ELF::ELFDATA2MSB) ||
        header.e_phentsize != sizeof(Elf_Phdr) || header.e_phnum == 0 ||
        header.e_phnum > kMaxImagePhdrs)
      return std::nullopt;
    uint64_t phoff = header.e_phoff;
    uint64_t table_size = uint64_t(header.e_phnum) * sizeof(Elf_Phdr);
    if (phoff > UINT64_MAX - base)
      return std::nullopt;
    const uint8_t *table = viewCaptured(snap_.memory, base + phoff, table_size);
    if (!table)
      return std::nullopt;
    ArrayRef<Elf_Phdr> phdrs(reinterpret_cast<const Elf_Phdr *>(table), header.e_phnum);

    // The load bias: the PT_LOAD with the lowest file offset is mapped at `base`.
    const Elf_Phdr *first = nullptr;
    for (const Elf_Phdr &p : phdrs)
      if (p.p_type == llvm::ELF::PT_LOAD && (!first || p.p_offset < first->p_offset))
        first = &p;
    if (!first || first->p_offset > first->p_vaddr)
      return std::nullopt;
    uint64_t bias = base - (uint64_t(first->p_vaddr) - uint64_t(first->p_offset));

    LoadedImage image;
    uint64_t note_budget = kMaxImageNoteBytes;
    for (const Elf_Phdr &p : phdrs) {
      if (p.p_type == llvm::ELF::PT_LOAD)
        image.load_end = std::max<uint64_t>(image.load_end, bias + p.p_vaddr + p.p_memsz);
      if (p.p_type != llvm::ELF::PT_NOTE || !image.build_id.empty())
        continue;
      uint64_t size = std::min<uint64_t>(p.p_filesz, note_budget);
      note_budget -= size;
      const uint8_t *notes = viewCaptured(snap_.memory, bias + p.p_vaddr, size);
      if (notes)
        image.build_id = findBuildId(ArrayRef<uint8_t>(notes, size));
    }
    return image;
  }

  /// The GNU build id (NT_GNU_BUILD_ID in a note named "GNU") in a run of notes, as hex; empty
  /// when absent or damaged. Notes are 4-byte aligned.
  std::string findBuildId(ArrayRef<uint8_t> notes) const {
    uint64_t pos = 0;
    while (fits(notes.size(), pos, 12)) {
      uint32_t namesz = get<uint32_t>(notes.data() + pos);
      uint32_t descsz = get<uint32_t>(notes.data() + pos + 4);
      uint32_t type = get<uint32_t>(notes.data() + pos + 8);
      uint64_t name_at = pos + 12;
      uint64_t desc_at = name_at + llvm::alignTo(namesz, 4);
      if (!fits(notes.size(), name_at, namesz) || !fits(notes.size(), desc_at, descsz))
        return {};
      if (type == llvm::ELF::NT_GNU_BUILD_ID && namesz == 4 &&
          StringRef(reinterpret_cast<const char *>(notes.data() + name_at), 4) ==
              StringRef("GNU\0", 4) &&
          descsz > 0 && descsz <= kMaxBuildIdBytes)
        return llvm::toHex(notes.slice(desc_at, descsz), /*LowerCase=*/true);
      pos = desc_at + llvm::alignTo(descsz, 4);
    }
    return {};
  }

  /// Sets each region's class. Image: backed by a file (NT_FILE). Heap: the brk heap, found as
  /// described at findHeap. Anonymous: other writable regions without a file (finalizeSnapshot
  /// turns the thread stacks among them into Stack). Other: the rest (vdso, vvar,
  /// vsyscall, PROT_NONE gaps, read-only anonymous memory).
  void classifyRegions() {
    for (Region &r : snap_.regions) {
      bool file_backed = !r.backing_file.empty() && !isAnonymousSharedPath(r.backing_file);
      r.class_source = file_backed ? RegionSource::FileNote : RegionSource::ProgramHeader;
      if (file_backed)
        r.cls = RegionClass::Image;
      else if (r.perms.write)
        r.cls = RegionClass::Anonymous;
      else
        r.cls = RegionClass::Other;
    }
    if (Region *heap = findHeap()) {
      heap->cls = RegionClass::Heap;
      heap->class_source = RegionSource::BrkHeap;
    }
  }

  /// The module holding AT_PHDR or AT_ENTRY from the auxiliary vector, else the module of the
  /// first NT_FILE entry; nullptr when there is none.
  const Module *findExecutable() const {
    for (uint64_t key : {kAtPhdr, kAtEntry})
      for (const auto &[type, value] : snap_.auxv)
        if (type == key)
          for (const Module &mod : snap_.modules)
            if (value >= mod.start && value < mod.end)
              return &mod;
    for (const FileMapping &m : files_)
      for (const Module &mod : snap_.modules)
        if (mod.path == paths_[m.path])
          return &mod;
    return nullptr;
  }

  /// The brk heap. ELF cores carry no "[heap]" label, so this uses where the kernel puts it:
  /// start_brk is the page-aligned end of the executable's bss plus a random offset below the brk
  /// randomization range (kBrkRange64/32). The end of the bss comes from the executable's own
  /// program headers when its ELF header page is captured, else from the end of its last NT_FILE
  /// mapping. The heap is the first writable region without a backing file that ends above that
  /// point and starts within the range (a region straddling it is bss and heap merged, which
  /// happens without ASLR). A process that never called brk has no such region and gets no heap;
  /// neither does one whose candidate region holds a thread's stack pointer.
  /// glibc-aware code refines this later (main_arena, mp_.sbrk_base).
  Region *findHeap() {
    const Module *exe = findExecutable();
    if (!exe)
      return nullptr;
    uint64_t floor = exe->end;
    if (std::optional<LoadedImage> image = inspectImage(exe->start)) {
      uint64_t page = pageSize();
      uint64_t bss_end = image->load_end;
      if (bss_end <= UINT64_MAX - page)
        bss_end = llvm::alignTo(bss_end, page);
      floor = std::max(floor, bss_end);
    }
    uint64_t range = ELFT::Is64Bits ? kBrkRange64 : kBrkRange32;
    for (Region &r : snap_.regions) { // sorted by start (readLoads)
      if (r.end() <= floor || r.start < exe->start)
        continue;
      if (r.start > floor && r.start - floor > range)
        return nullptr;
      if (!r.backing_file.empty() || !r.perms.write)
        continue;
      // A thread's stack pointer is a fact, the heap a guess: a region holding one is a stack.
      for (const Thread &t : snap_.threads)
        if (t.stack_pointer >= r.start && t.stack_pointer < r.end())
          return nullptr;
      return &r;
    }
    return nullptr;
  }

  /// AT_PAGESZ when sane, else 4096.
  uint64_t pageSize() const {
    for (const auto &[type, value] : snap_.auxv)
      if (type == kAtPagesz && value >= 4096 && value <= (1u << 20) && (value & (value - 1)) == 0)
        return value;
    return 4096;
  }

  Snapshot &snap_;
  const llvm::object::ELFFile<ELFT> &elf_;
  ArrayRef<uint8_t> file_;
  unsigned machine_ = 0;
  WarningLimiter segment_warnings_;
  WarningLimiter note_warnings_;
  std::vector<FileMapping> files_;
  std::vector<std::string> paths_;
  bool have_psinfo_ = false;
  bool have_auxv_ = false;
  bool have_files_ = false;
  bool warned_unknown_sp_ = false;
};

/// Creates the ELFFile view for ELFT and runs the reader over it.
template <class ELFT> llvm::Error readAs(Snapshot &snapshot) {
  StringRef bytes = snapshot.file->getBuffer();
  auto elf = llvm::object::ELFFile<ELFT>::create(bytes);
  if (!elf) {
    llvm::consumeError(elf.takeError());
    return createError("truncated ELF header: the file has " + llvm::Twine(bytes.size()) +
                       " bytes, an ELF" + llvm::Twine(ELFT::Is64Bits ? 64 : 32) + " header needs " +
                       llvm::Twine(unsigned(sizeof(typename ELFT::Ehdr))));
  }
  ElfCoreReader<ELFT> reader(snapshot, *elf);
  return reader.read();
}

} // namespace

llvm::Error readElfCore(Snapshot &snapshot) {
  StringRef bytes = snapshot.file->getBuffer();
  if (bytes.size() < llvm::ELF::EI_NIDENT)
    return createError("truncated ELF header: the file has " + llvm::Twine(bytes.size()) +
                       " bytes");
  uint8_t cls = bytes[llvm::ELF::EI_CLASS];
  uint8_t data = bytes[llvm::ELF::EI_DATA];
  bool little = data == llvm::ELF::ELFDATA2LSB;
  if (data != llvm::ELF::ELFDATA2LSB && data != llvm::ELF::ELFDATA2MSB)
    return createError("unknown ELF data encoding " + llvm::Twine(unsigned(data)) +
                       " (expected 1 for little or 2 for big endian)");
  if (cls == llvm::ELF::ELFCLASS64)
    return little ? readAs<llvm::object::ELF64LE>(snapshot)
                  : readAs<llvm::object::ELF64BE>(snapshot);
  if (cls == llvm::ELF::ELFCLASS32)
    return little ? readAs<llvm::object::ELF32LE>(snapshot)
                  : readAs<llvm::object::ELF32BE>(snapshot);
  return createError("unknown ELF class " + llvm::Twine(unsigned(cls)) +
                     " (expected 1 for 32-bit or 2 for 64-bit)");
}

} // namespace dumpsift::detail
