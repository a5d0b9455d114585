// Symbols from the dumped program's executable, when its file is on this machine and is the build
// that ran: its build ID notes (GNU and Go) must equal the dump's copy of them.
#include "dumpsift/support/hex.h"
#include "go_heap.h"

// llvm/Object/ELF.h, not ELFObjectFile.h: the latter pulls in llvm/Support/JSON.h, which clang-14
// cannot compile as C++20 against libstdc++ 12 (the fuzz build, docs/fuzzing.md).
#include "llvm/Object/ELF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

namespace dumpsift::golang {

namespace {

using ELFT = llvm::object::ELF64LE;

/// Note types that identify a build: NT_GNU_BUILD_ID (owner "GNU") and Go's build ID (owner
/// "Go", type 4, cmd/link's .note.go.buildid).
bool isBuildIdNote(llvm::StringRef owner, uint32_t type) {
  owner = owner.rtrim('\0'); // Go pads its owner name "Go" to 4 bytes with NULs
  return (owner == "GNU" && type == llvm::ELF::NT_GNU_BUILD_ID) || (owner == "Go" && type == 4);
}

enum class Identity { Same, Different, Unknown };

/// Compares the build ID notes of `elf` with the dump's bytes at the same addresses (plus
/// `bias`): Same when every one the dump holds is equal and there is at least one.
Identity compareBuildIds(const llvm::object::ELFFile<ELFT> &elf, const AddressSpace &memory,
                         uint64_t bias) {
  auto headers = elf.program_headers();
  if (!headers) {
    llvm::consumeError(headers.takeError());
    return Identity::Unknown;
  }
  unsigned compared = 0;
  for (const auto &ph : *headers) {
    if (ph.p_type != llvm::ELF::PT_NOTE)
      continue;
    llvm::Error err = llvm::Error::success();
    for (const auto &note : elf.notes(ph, err)) {
      if (!isBuildIdNote(note.getName(), note.getType()))
        continue;
      llvm::ArrayRef<uint8_t> desc = note.getDesc();
      // Where the descriptor lies in the process: the segment's address plus its offset in it.
      uint64_t at =
          ph.p_vaddr + bias + static_cast<uint64_t>(desc.data() - (elf.base() + ph.p_offset));
      const uint8_t *mem = memory.tryView(at, desc.size());
      if (!mem)
        continue;
      if (std::memcmp(mem, desc.data(), desc.size()) != 0) {
        llvm::consumeError(std::move(err));
        return Identity::Different;
      }
      ++compared;
    }
    llvm::consumeError(std::move(err));
  }
  return compared ? Identity::Same : Identity::Unknown;
}

/// The value of the first symbol named `symbol` in `elf`'s .symtab, or nothing (none there, or a
/// damaged table).
std::optional<uint64_t> symbolValue(const llvm::object::ELFFile<ELFT> &elf,
                                    llvm::StringRef symbol) {
  auto sections = elf.sections();
  if (!sections) {
    llvm::consumeError(sections.takeError());
    return std::nullopt;
  }
  for (const ELFT::Shdr &section : *sections) {
    if (section.sh_type != llvm::ELF::SHT_SYMTAB)
      continue;
    auto symbols = elf.symbols(&section);
    auto names = elf.getStringTableForSymtab(section);
    if (!symbols || !names) {
      llvm::consumeError(symbols.takeError());
      llvm::consumeError(names.takeError());
      continue;
    }
    for (const ELFT::Sym &sym : *symbols) {
      llvm::Expected<llvm::StringRef> name = sym.getName(*names);
      if (!name) {
        llvm::consumeError(name.takeError());
        continue;
      }
      if (*name == symbol)
        return sym.st_value;
    }
  }
  return std::nullopt;
}

} // namespace

std::optional<uint64_t> executableSymbol(const AddressSpace &memory, llvm::StringRef symbol,
                                         std::string &source, std::string &why,
                                         Diagnostics &diags) {
  const Snapshot &snap = memory.snapshot();
  const Module *exe = executableModule(snap);
  const bool named = !snap.executable_file.empty();
  std::string path = named ? snap.executable_file : exe ? exe->path : "";
  if (path.empty() || !llvm::sys::fs::exists(path)) {
    why = path.empty() ? "no executable named" : "executable " + path + " not on this machine";
    if (named)
      diags.warn("go", "--exe " + path + ": no such file");
    return std::nullopt;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!file) {
    why = "executable " + path + " unreadable: " + file.getError().message();
    if (named)
      diags.warn("go", "--exe " + path + ": " + why);
    return std::nullopt;
  }
  const llvm::StringRef bytes = (*file)->getBuffer();
  const bool elf64le = bytes.size() > llvm::ELF::EI_DATA && bytes.startswith(llvm::ELF::ElfMagic) &&
                       bytes[llvm::ELF::EI_CLASS] == llvm::ELF::ELFCLASS64 &&
                       bytes[llvm::ELF::EI_DATA] == llvm::ELF::ELFDATA2LSB;
  std::optional<llvm::object::ELFFile<ELFT>> parsed;
  if (elf64le) {
    if (auto created = llvm::object::ELFFile<ELFT>::create(bytes))
      parsed.emplace(std::move(*created));
    else
      llvm::consumeError(created.takeError());
  }
  if (!parsed) {
    why = "executable " + path + " is not a 64-bit little-endian ELF file";
    if (named)
      diags.warn("go", "--exe " + path + ": " + why);
    return std::nullopt;
  }
  const llvm::object::ELFFile<ELFT> &elf = *parsed;
  // A position-independent executable is loaded at the module's start.
  uint64_t bias = 0;
  if (elf.getHeader().e_type == llvm::ELF::ET_DYN && exe)
    bias = exe->start;
  switch (compareBuildIds(elf, memory, bias)) {
  case Identity::Different:
    why = "executable " + path + " is another build than the dumped one";
    diags.warn("go", path + ": its build ID differs from the dumped program's; symbols not used");
    return std::nullopt;
  case Identity::Unknown:
    if (!named) { // a file that merely has the same name proves nothing
      why = "executable " + path + ": its build ID is not in the dump";
      return std::nullopt;
    }
    source = path + ", build ID not in the dump";
    break;
  case Identity::Same:
    source = path;
    break;
  }
  if (std::optional<uint64_t> value = symbolValue(elf, symbol))
    return *value + bias;
  why = "executable " + path + " has no symbol " + symbol.str() + " (stripped)";
  return std::nullopt;
}

} // namespace dumpsift::golang
