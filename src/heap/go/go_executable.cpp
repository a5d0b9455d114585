// Symbols from the dumped program's executable, when its file is on this machine and is the build
// that ran: its build ID notes (GNU and Go) must equal the dump's copy of them.
#include "dumpsift/support/hex.h"
#include "go_heap.h"

#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/FileSystem.h"

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
  auto binary = llvm::object::ObjectFile::createObjectFile(path);
  if (!binary) {
    why = "executable " + path + " unreadable: " + llvm::toString(binary.takeError());
    if (named)
      diags.warn("go", "--exe " + path + ": " + why);
    return std::nullopt;
  }
  const auto *elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(binary->getBinary());
  if (!elf) {
    why = "executable " + path + " is not a 64-bit little-endian ELF file";
    if (named)
      diags.warn("go", "--exe " + path + ": " + why);
    return std::nullopt;
  }
  // A position-independent executable is loaded at the module's start.
  uint64_t bias = 0;
  if (elf->getELFFile().getHeader().e_type == llvm::ELF::ET_DYN && exe)
    bias = exe->start;
  switch (compareBuildIds(elf->getELFFile(), memory, bias)) {
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
  for (const llvm::object::ELFSymbolRef &sym : elf->symbols()) {
    llvm::Expected<llvm::StringRef> name = sym.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (*name != symbol)
      continue;
    llvm::Expected<uint64_t> value = sym.getValue();
    if (!value) {
      llvm::consumeError(value.takeError());
      continue;
    }
    return *value + bias;
  }
  why = "executable " + path + " has no symbol " + symbol.str() + " (stripped)";
  return std::nullopt;
}

} // namespace dumpsift::golang
