// Module files read from this machine (module_file.h): ELF files of either class and byte order,
// their build ID notes, symbol tables and the file bytes behind their PT_LOADs.
#include "dumpsift/dump/module_file.h"

// llvm/Object/ELF.h, not ELFObjectFile.h: the latter pulls in llvm/Support/JSON.h, which clang-14
// cannot compile as C++20 against libstdc++ 12 (the fuzz build, docs/fuzzing.md).
#include "llvm/ADT/StringExtras.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstring>

namespace dumpsift {

namespace {

/// Note types that identify a build: NT_GNU_BUILD_ID (owner "GNU") and Go's build ID (owner "Go",
/// type 4, cmd/link's .note.go.buildid).
bool isBuildIdNote(llvm::StringRef owner, uint32_t type) {
  owner = owner.rtrim('\0'); // Go pads its owner name "Go" to 4 bytes with NULs
  return (owner == "GNU" && type == llvm::ELF::NT_GNU_BUILD_ID) || (owner == "Go" && type == 4);
}

enum class Identity { Same, Different, Unknown };

/// Page size the first PT_LOAD's address is rounded down to for the load bias.
constexpr uint64_t kPage = 4096;

/// A module file of ELF layout ELFT.
template <class ELFT> class ElfModuleFile final : public ModuleFile {
  LLVM_ELF_IMPORT_TYPES_ELFT(ELFT)

public:
  ElfModuleFile(std::unique_ptr<llvm::MemoryBuffer> buffer, llvm::object::ELFFile<ELFT> elf)
      : buffer_(std::move(buffer)), elf_(std::move(elf)) {}

  /// Sets the path, the load bias for `module` and the identity check; returns the problem.
  ModuleFileProblem place(const AddressSpace &memory, const Module &module, const std::string &path,
                          bool named) {
    path_ = path;
    auto headers = elf_.program_headers();
    if (!headers) {
      llvm::consumeError(headers.takeError());
      return ModuleFileProblem::NotElf;
    }
    loads_.clear();
    for (const Elf_Phdr &ph : *headers)
      if (ph.p_type == llvm::ELF::PT_LOAD)
        loads_.push_back(&ph);
    std::sort(loads_.begin(), loads_.end(),
              [](const Elf_Phdr *a, const Elf_Phdr *b) { return a->p_vaddr < b->p_vaddr; });
    bias_ = 0;
    if (elf_.getHeader().e_type == llvm::ELF::ET_DYN && module.start && !loads_.empty())
      bias_ = module.start - (uint64_t(loads_.front()->p_vaddr) & ~(kPage - 1));
    switch (identity(memory, module, *headers)) {
    case Identity::Different:
      return ModuleFileProblem::OtherBuild;
    case Identity::Unknown:
      if (!named)
        return ModuleFileProblem::NoBuildId;
      build_id_checked_ = false;
      return ModuleFileProblem::None;
    case Identity::Same:
      build_id_checked_ = true;
      return ModuleFileProblem::None;
    }
    return ModuleFileProblem::None;
  }

  bool hasSymbolTable() const override {
    symbols();
    return has_symtab_;
  }

  std::optional<uint64_t> symbolAddress(llvm::StringRef name) const override {
    // .symtab first (sorted so: see symbols()), then .dynsym.
    std::optional<uint64_t> dynamic;
    for (const Entry &e : symbols())
      if (e.symbol.name == name) {
        if (!e.dynamic)
          return e.symbol.address;
        if (!dynamic)
          dynamic = e.symbol.address;
      }
    return dynamic;
  }

  std::optional<ModuleSymbol> symbolAt(uint64_t address, bool functions) const override {
    const std::vector<Entry> &all = symbols();
    // Entries sorted by address: the candidates start at or below `address`. Symbols nest rarely
    // and never deeply, so a bounded look back finds the smallest that holds it.
    auto it = std::upper_bound(all.begin(), all.end(), address,
                               [](uint64_t a, const Entry &e) { return a < e.symbol.address; });
    std::optional<ModuleSymbol> best;
    for (unsigned back = 0; it != all.begin() && back < kLookBack; ++back) {
      const ModuleSymbol &s = (--it)->symbol;
      if (s.function && !functions)
        continue;
      const bool holds = s.size ? address - s.address < s.size : address == s.address;
      if (holds && (!best || s.size < best->size))
        best = s;
    }
    return best;
  }

  llvm::MemoryBufferRef contents() const override { return buffer_->getMemBufferRef(); }

  llvm::ArrayRef<uint8_t> bytesAt(uint64_t address, uint64_t len) const override {
    const uint64_t vaddr = address - bias_;
    const llvm::StringRef file = buffer_->getBuffer();
    for (const Elf_Phdr *ph : loads_) {
      const uint64_t start = ph->p_vaddr, filesz = ph->p_filesz;
      if (vaddr < start || vaddr - start >= filesz || len > filesz - (vaddr - start))
        continue;
      const uint64_t offset = uint64_t(ph->p_offset) + (vaddr - start);
      if (offset > file.size() || len > file.size() - offset)
        return {};
      return llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(file.data()) + offset, len);
    }
    return {};
  }

private:
  struct Entry {
    ModuleSymbol symbol;
    bool dynamic = false; // from .dynsym
  };
  static constexpr unsigned kLookBack = 64;

  /// The file's GNU build ID as lowercase hex, or "" when it has none.
  std::string gnuBuildId(llvm::ArrayRef<Elf_Phdr> headers) const {
    for (const Elf_Phdr &ph : headers) {
      if (ph.p_type != llvm::ELF::PT_NOTE)
        continue;
      llvm::Error err = llvm::Error::success();
      for (const Elf_Note &note : elf_.notes(ph, err))
        if (note.getName() == "GNU" && note.getType() == llvm::ELF::NT_GNU_BUILD_ID) {
          std::string hex = llvm::toHex(note.getDesc(), /*LowerCase=*/true);
          llvm::consumeError(std::move(err));
          return hex;
        }
      llvm::consumeError(std::move(err));
    }
    return "";
  }

  /// Same when the file's build ID equals the dump's copy (Module::build_id, else the notes'
  /// bytes where the process maps them, every one the dump holds), Different when one differs,
  /// Unknown when the dump holds none of them.
  Identity identity(const AddressSpace &memory, const Module &module,
                    llvm::ArrayRef<Elf_Phdr> headers) const {
    if (!module.build_id.empty()) {
      const std::string own = gnuBuildId(headers);
      if (!own.empty())
        return own == module.build_id ? Identity::Same : Identity::Different;
    }
    unsigned compared = 0;
    for (const Elf_Phdr &ph : headers) {
      if (ph.p_type != llvm::ELF::PT_NOTE)
        continue;
      llvm::Error err = llvm::Error::success();
      for (const Elf_Note &note : elf_.notes(ph, err)) {
        if (!isBuildIdNote(note.getName(), note.getType()))
          continue;
        llvm::ArrayRef<uint8_t> desc = note.getDesc();
        // Where the descriptor lies in the process: the segment's address plus its offset in it.
        const uint64_t at =
            ph.p_vaddr + bias_ + static_cast<uint64_t>(desc.data() - (elf_.base() + ph.p_offset));
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

  /// Every named data and function symbol of .symtab and .dynsym, by address (.symtab's first
  /// among equals), read at the first call.
  const std::vector<Entry> &symbols() const {
    if (symbols_read_)
      return symbols_;
    symbols_read_ = true;
    auto sections = elf_.sections();
    if (!sections) {
      llvm::consumeError(sections.takeError());
      return symbols_;
    }
    for (const Elf_Shdr &section : *sections) {
      if (section.sh_type != llvm::ELF::SHT_SYMTAB && section.sh_type != llvm::ELF::SHT_DYNSYM)
        continue;
      const bool dynamic = section.sh_type == llvm::ELF::SHT_DYNSYM;
      has_symtab_ |= !dynamic;
      auto table = elf_.symbols(&section);
      auto names = elf_.getStringTableForSymtab(section);
      if (!table || !names) {
        llvm::consumeError(table.takeError());
        llvm::consumeError(names.takeError());
        continue;
      }
      for (const Elf_Sym &sym : *table) {
        const unsigned type = sym.getType();
        const bool function = type == llvm::ELF::STT_FUNC;
        if (sym.st_shndx == llvm::ELF::SHN_UNDEF ||
            !(function || type == llvm::ELF::STT_OBJECT || type == llvm::ELF::STT_COMMON ||
              type == llvm::ELF::STT_TLS))
          continue;
        llvm::Expected<llvm::StringRef> name = sym.getName(*names);
        if (!name) {
          llvm::consumeError(name.takeError());
          continue;
        }
        if (name->empty())
          continue;
        symbols_.push_back(
            {{*name, uint64_t(sym.st_value) + bias_, sym.st_size, function}, dynamic});
      }
    }
    std::stable_sort(symbols_.begin(), symbols_.end(), [](const Entry &a, const Entry &b) {
      return a.symbol.address != b.symbol.address ? a.symbol.address < b.symbol.address
                                                  : a.dynamic < b.dynamic;
    });
    return symbols_;
  }

  std::unique_ptr<llvm::MemoryBuffer> buffer_;
  llvm::object::ELFFile<ELFT> elf_;
  std::vector<const Elf_Phdr *> loads_; // by address
  mutable std::vector<Entry> symbols_;
  mutable bool symbols_read_ = false;
  mutable bool has_symtab_ = false;
};

/// Opens the ELF file in `buffer` as layout ELFT and places it for `module`.
template <class ELFT>
OpenedModuleFile openAs(std::unique_ptr<llvm::MemoryBuffer> buffer, const AddressSpace &memory,
                        const Module &module, const std::string &path, bool named) {
  OpenedModuleFile out;
  auto elf = llvm::object::ELFFile<ELFT>::create(buffer->getBuffer());
  if (!elf) {
    llvm::consumeError(elf.takeError());
    out.problem = ModuleFileProblem::NotElf;
    return out;
  }
  auto file = std::make_unique<ElfModuleFile<ELFT>>(std::move(buffer), std::move(*elf));
  out.problem = file->place(memory, module, path, named);
  if (out.problem == ModuleFileProblem::None)
    out.file = std::move(file);
  return out;
}

} // namespace

llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> mapRegularFile(const llvm::Twine &path) {
  llvm::sys::fs::file_status status;
  if (std::error_code error = llvm::sys::fs::status(path, status))
    return error;
  if (!llvm::sys::fs::is_regular_file(status))
    return std::make_error_code(std::errc::invalid_argument); // "Invalid argument"
  return llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
}

OpenedModuleFile openModuleFile(const AddressSpace &memory, const Module &module,
                                const std::string &path, bool named) {
  OpenedModuleFile out;
  if (path.empty() || !llvm::sys::fs::exists(path)) {
    out.problem = ModuleFileProblem::Missing;
    return out;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = mapRegularFile(path);
  if (!file) {
    out.problem = ModuleFileProblem::Unreadable;
    out.detail = file.getError().message();
    return out;
  }
  const llvm::StringRef bytes = (*file)->getBuffer();
  const SystemInfo &system = memory.snapshot().system;
  const uint8_t want_class =
      system.pointer_size == 8 ? llvm::ELF::ELFCLASS64 : llvm::ELF::ELFCLASS32;
  const uint8_t want_data = system.little_endian ? llvm::ELF::ELFDATA2LSB : llvm::ELF::ELFDATA2MSB;
  if (bytes.size() <= llvm::ELF::EI_DATA || !bytes.startswith(llvm::ELF::ElfMagic) ||
      uint8_t(bytes[llvm::ELF::EI_CLASS]) != want_class ||
      uint8_t(bytes[llvm::ELF::EI_DATA]) != want_data) {
    out.problem = ModuleFileProblem::NotElf;
    return out;
  }
  using namespace llvm::object;
  if (want_class == llvm::ELF::ELFCLASS64)
    return system.little_endian ? openAs<ELF64LE>(std::move(*file), memory, module, path, named)
                                : openAs<ELF64BE>(std::move(*file), memory, module, path, named);
  return system.little_endian ? openAs<ELF32LE>(std::move(*file), memory, module, path, named)
                              : openAs<ELF32BE>(std::move(*file), memory, module, path, named);
}

std::string moduleFileProblemText(ModuleFileProblem problem, llvm::StringRef detail) {
  switch (problem) {
  case ModuleFileProblem::None:
    return "";
  case ModuleFileProblem::Missing:
    return "not on this machine";
  case ModuleFileProblem::Unreadable:
    return "unreadable: " + detail.str();
  case ModuleFileProblem::NotElf:
    return "not an ELF file of the dump's class and byte order";
  case ModuleFileProblem::OtherBuild:
    return "another build than the dumped one (its build ID differs)";
  case ModuleFileProblem::NoBuildId:
    return "its build ID is not in the dump, so nothing shows it is the build that ran";
  }
  return "";
}

ModuleFiles::ModuleFiles(const AddressSpace &memory, std::vector<std::string> search_dirs,
                         bool read_files)
    : memory_(memory), search_dirs_(std::move(search_dirs)), read_files_(read_files) {
  for (const Module &m : memory.snapshot().modules)
    by_start_.push_back(&m);
  std::stable_sort(by_start_.begin(), by_start_.end(),
                   [](const Module *a, const Module *b) { return a->start < b->start; });
}

ModuleFiles::~ModuleFiles() = default;

const ModuleFile *ModuleFiles::fileOf(const Module &module) {
  if (!read_files_)
    return nullptr;
  auto [it, inserted] = found_.try_emplace(&module);
  Lookup &lookup = it->second;
  if (!inserted)
    return lookup.file.get();
  std::vector<std::pair<std::string, bool>> candidates; // path, named by the user
  const Snapshot &snap = memory_.snapshot();
  if (!snap.executable_file.empty() && snap.executableModule() == &module)
    candidates.emplace_back(snap.executable_file, true);
  const llvm::StringRef name = fileName(module.path);
  for (const std::string &dir : search_dirs_) {
    llvm::SmallString<256> under(dir);
    llvm::sys::path::append(under, module.path);
    candidates.emplace_back(std::string(under.str()), false);
    llvm::SmallString<256> flat(dir);
    llvm::sys::path::append(flat, name);
    candidates.emplace_back(std::string(flat.str()), false);
  }
  candidates.emplace_back(module.path, false);
  // The reason kept: a candidate that is there but unusable says more than a missing one; among
  // missing ones, the recorded path (the last) says the most.
  bool found_unusable = false;
  for (const auto &[path, named] : candidates) {
    OpenedModuleFile opened = openModuleFile(memory_, module, path, named);
    if (opened.file) {
      lookup.file = std::move(opened.file);
      lookup.why.clear();
      break;
    }
    const bool missing = opened.problem == ModuleFileProblem::Missing;
    if (!missing || !found_unusable)
      lookup.why = path + ": " + moduleFileProblemText(opened.problem, opened.detail);
    found_unusable |= !missing;
  }
  return lookup.file.get();
}

std::string ModuleFiles::whyNot(const Module &module) const {
  auto it = found_.find(&module);
  return it == found_.end() ? "" : it->second.why;
}

const Module *ModuleFiles::moduleAt(uint64_t address) const {
  auto it = std::upper_bound(by_start_.begin(), by_start_.end(), address,
                             [](uint64_t a, const Module *m) { return a < m->start; });
  // Modules do not overlap; the nearest start below `address` is the only candidate, but a
  // module's image end (its bss) may reach past the next one's start in a hostile dump: look at
  // a few.
  for (unsigned back = 0; it != by_start_.begin() && back < 4; ++back) {
    const Module *m = *--it;
    if (address < std::max(m->end, m->image_end))
      return m;
  }
  return nullptr;
}

llvm::ArrayRef<uint8_t> ModuleFiles::bytesAt(uint64_t address, uint64_t len) {
  if (const uint8_t *p = memory_.tryView(address, len))
    return llvm::ArrayRef<uint8_t>(p, len);
  const Module *module = moduleAt(address);
  if (!module)
    return {};
  const ModuleFile *file = fileOf(*module);
  return file ? file->bytesAt(address, len) : llvm::ArrayRef<uint8_t>();
}

std::vector<const ModuleFile *> ModuleFiles::filesUsed() const {
  std::vector<const ModuleFile *> out;
  for (const Module *m : by_start_)
    if (auto it = found_.find(m); it != found_.end() && it->second.file)
      out.push_back(it->second.file.get());
  return out;
}

} // namespace dumpsift
