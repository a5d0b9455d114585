// Names for holders: the C++ class of a block whose first word is a vtable, and the symbol of a
// module's global. Internal to src/holders.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/module_file.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/StringSaver.h"

#include <cstdint>
#include <optional>
#include <string>

namespace dumpsift::holders {

/// Demangles `mangled` (a whole Itanium name, "_Z..."), or nullopt when it is not one.
std::optional<std::string> demangleItanium(const std::string &mangled);

/// Names holders from the dump's bytes, else from the module files (ModuleFiles: only the build
/// that ran); caches what it found per vtable. Keeps its strings in `strings`.
class Names {
public:
  Names(const AddressSpace &memory, ModuleFiles &files, llvm::UniqueStringSaver &strings)
      : memory_(memory), files_(files), strings_(strings) {}

  /// The class of the object at `block` when its first word is the address point of a primary
  /// C++ vtable in a module's read-only data: from the Itanium RTTI record before it (vptr[-1] ->
  /// type_info -> its mangled name; offset-to-top at vptr[-2] must be 0, the object whole), else
  /// from a _ZTV symbol of the module whose extent holds the vtable at that address point;
  /// demangled. "" when neither names it (no vtable, or the bytes are neither in the dump nor in
  /// a module file of the build that ran).
  llvm::StringRef classOf(uint64_t block);

  /// The data symbol of `module` holding `address`, demangled, and where it starts; nullopt when
  /// the module's file is not usable or names none.
  std::optional<std::pair<llvm::StringRef, uint64_t>> globalAt(const Module &module,
                                                               uint64_t address);

private:
  std::optional<uint64_t> pointerAt(uint64_t address);
  std::optional<std::string> cStringAt(uint64_t address, size_t max_bytes);
  llvm::StringRef fromRtti(uint64_t vptr);
  llvm::StringRef fromSymbol(const Module &module, uint64_t vptr);

  const AddressSpace &memory_;
  ModuleFiles &files_;
  llvm::UniqueStringSaver &strings_;
  llvm::DenseMap<uint64_t, llvm::StringRef> by_vptr_;
};

} // namespace dumpsift::holders
