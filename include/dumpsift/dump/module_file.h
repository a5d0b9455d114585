// The files of the modules a dump maps, read from this machine where the dump left something out:
// symbol tables (which no process maps) and read-only data (which gcore's default
// coredump_filter does not capture). A file is used only when it is the build that ran: its build
// ID equals the dump's copy of it (never a guess by name), or the user named it and the dump holds
// no build ID to compare. The one place that reads module files (LLVMObject's ELF reader).
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorOr.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

/// One symbol of a module file (.symtab or .dynsym), placed in the process.
struct ModuleSymbol {
  llvm::StringRef name; // as the file spells it (mangled); valid while its ModuleFile lives
  uint64_t address = 0; // in the process: the file's value plus the module's load bias
  uint64_t size = 0;
  bool function = false; // STT_FUNC; otherwise a data object (STT_OBJECT, STT_TLS, STT_COMMON)
};

/// The ELF file of one module, checked against the dump (openModuleFile).
class ModuleFile {
public:
  virtual ~ModuleFile() = default;
  /// The file's path on this machine.
  const std::string &path() const { return path_; }
  /// True when its build ID equals the dump's copy; false for a file the user named whose build
  /// ID the dump does not hold (see openModuleFile).
  bool buildIdChecked() const { return build_id_checked_; }
  /// What the process added to the file's addresses (0 for a fixed-address executable).
  uint64_t bias() const { return bias_; }
  /// True when it has a .symtab (a file that was not stripped).
  virtual bool hasSymbolTable() const = 0;
  /// The process address of the first symbol named `name`: .symtab's, else .dynsym's.
  virtual std::optional<uint64_t> symbolAddress(llvm::StringRef name) const = 0;
  /// The smallest data object (functions too, with `functions`) of .symtab and .dynsym whose
  /// [address, address + size) holds the process address `address`; nullopt when none does.
  virtual std::optional<ModuleSymbol> symbolAt(uint64_t address, bool functions = false) const = 0;
  /// The file's bytes that the process maps at [address, address + len) (from one PT_LOAD's file
  /// bytes, not its bss); empty when the file does not hold them all.
  virtual llvm::ArrayRef<uint8_t> bytesAt(uint64_t address, uint64_t len) const = 0;
  /// The whole file, as it is mapped, for the readers of its other sections (debug_types.h).
  virtual llvm::MemoryBufferRef contents() const = 0;

protected:
  std::string path_;
  bool build_id_checked_ = false;
  uint64_t bias_ = 0;
};

/// The file at `path` mapped read-only, when it is a regular file: a path a dump names (NT_FILE, a
/// MonoImage's filename) may be a device or a FIFO, whose reading would never end. The error
/// says why not.
llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> mapRegularFile(const llvm::Twine &path);

/// Why a file could not serve as a module's file.
enum class ModuleFileProblem : uint8_t {
  None,
  Missing,    // no such file
  Unreadable, // it cannot be read (the detail says why)
  NotElf,     // not an ELF file of the dump's class and byte order
  OtherBuild, // its build ID differs from the dump's copy: another build of the module
  NoBuildId,  // the dump holds no build ID to compare, and the user did not name the file
};

/// A file opened for a module, or the reason it is not used.
struct OpenedModuleFile {
  std::unique_ptr<ModuleFile> file;
  ModuleFileProblem problem = ModuleFileProblem::None;
  std::string detail; // the system's message for Unreadable
};

/// Opens `path` as the file of `module` (which may be empty: then the file is taken as loaded where
/// it says). The load bias of a position-independent file is module.start less its first
/// PT_LOAD's page. Its identity: the file's GNU build ID is compared with module.build_id where
/// both exist; otherwise its build ID notes (GNU and Go's) are compared with the dump's bytes at
/// the addresses where the process maps them. Equal: used. Different: OtherBuild. Nothing to
/// compare: used only when `named` (a file the user gave, as --exe), else NoBuildId, for a file
/// that merely has the module's name proves nothing. Never reads more than the file's own bounds
/// say.
OpenedModuleFile openModuleFile(const AddressSpace &memory, const Module &module,
                                const std::string &path, bool named);

/// "its build ID differs from the dumped module's" and the like: `problem` in words.
std::string moduleFileProblemText(ModuleFileProblem problem, llvm::StringRef detail);

/// The module files of one process, each looked for once.
class ModuleFiles {
public:
  /// `search_dirs` are tried in order before the path the dump records (--module-path, as a
  /// debugger's sysroot); the memory must outlive this object. Without `read_files` no file is
  /// opened (fileOf gives nullptr, bytesAt the dump's bytes only): what is found then does not
  /// depend on this machine.
  ModuleFiles(const AddressSpace &memory, std::vector<std::string> search_dirs,
              bool read_files = true);
  ~ModuleFiles();
  ModuleFiles(const ModuleFiles &) = delete;
  ModuleFiles &operator=(const ModuleFiles &) = delete;

  /// The file of `module` (one of the snapshot's modules), found at the first call: the file the
  /// user named for the executable (Snapshot::executable_file, for Snapshot::executableModule()),
  /// then under each search directory DIR, DIR + the recorded path and DIR/<its file name>, then
  /// the recorded path itself. The first candidate that opens and is the build that ran is used;
  /// nullptr when none is (whyNot says why).
  const ModuleFile *fileOf(const Module &module);
  /// Why fileOf(module) found no file: the last candidate's problem, in words ("" before the
  /// first call or when a file was found).
  std::string whyNot(const Module &module) const;
  /// The module whose image holds `address` ([start, max(end, image_end))), or nullptr.
  const Module *moduleAt(uint64_t address) const;
  /// The bytes [address, address + len) of the process: from the dump when it holds them all,
  /// else from the file of the module that maps them (fileOf); empty when neither holds them.
  llvm::ArrayRef<uint8_t> bytesAt(uint64_t address, uint64_t len);
  /// The files found so far, by module start.
  std::vector<const ModuleFile *> filesUsed() const;

private:
  struct Lookup {
    std::unique_ptr<ModuleFile> file;
    std::string why;
  };
  const AddressSpace &memory_;
  std::vector<std::string> search_dirs_;
  bool read_files_ = true;
  std::vector<const Module *> by_start_; // the snapshot's modules, sorted by start
  std::map<const Module *, Lookup> found_;
};

} // namespace dumpsift
