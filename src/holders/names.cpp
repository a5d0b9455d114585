// Class names from vtables (Itanium C++ ABI, "Virtual Table Layout": offset-to-top at vptr[-2],
// the RTTI pointer at vptr[-1]; a std::type_info holds its vtable pointer, then a pointer to the
// mangled name of the type without its "_ZTS" prefix) and symbol names of globals.
#include "names.h"

#include "dumpsift/dump/words.h"
#include "dumpsift/support/bytes.h"

#include "llvm/Demangle/Demangle.h"

#include <cstdlib>

namespace dumpsift::holders {

namespace {

/// The longest mangled type name read.
constexpr size_t kMaxMangledName = 4096;

} // namespace

std::optional<std::string> demangleItanium(const std::string &mangled) {
  int status = 0;
  char *text = llvm::itaniumDemangle(mangled.c_str(), nullptr, nullptr, &status);
  if (!text || status != llvm::demangle_success) {
    std::free(text);
    return std::nullopt;
  }
  std::string out(text);
  std::free(text);
  return out;
}

std::optional<uint64_t> Names::pointerAt(uint64_t address) {
  const SystemInfo &system = memory_.snapshot().system;
  if (system.pointer_size != 4 && system.pointer_size != 8)
    return std::nullopt;
  llvm::ArrayRef<uint8_t> bytes = files_.bytesAt(address, system.pointer_size);
  if (bytes.size() != system.pointer_size)
    return std::nullopt;
  return readUnsigned(bytes.data(), system.pointer_size, system.byteOrder());
}

std::optional<std::string> Names::cStringAt(uint64_t address, size_t max_bytes) {
  if (std::optional<llvm::StringRef> s = memory_.readCString(address, max_bytes))
    return s->str();
  // From the file, a few bytes at a time (the string may end near the end of its segment).
  std::string out;
  constexpr size_t kStep = 16;
  while (out.size() < max_bytes) {
    llvm::ArrayRef<uint8_t> bytes = files_.bytesAt(address + out.size(), kStep);
    if (bytes.empty())
      bytes = files_.bytesAt(address + out.size(), 1);
    if (bytes.empty())
      return std::nullopt;
    for (uint8_t b : bytes) {
      if (b == 0)
        return out;
      out.push_back(static_cast<char>(b));
    }
  }
  return std::nullopt;
}

llvm::StringRef Names::fromRtti(uint64_t vptr) {
  const uint64_t word = memory_.snapshot().system.pointer_size;
  std::optional<uint64_t> offset_to_top = pointerAt(vptr - 2 * word);
  std::optional<uint64_t> type_info = pointerAt(vptr - word);
  if (!offset_to_top || *offset_to_top != 0 || !type_info || *type_info == 0)
    return "";
  // A type_info is an object of the C++ runtime's classes: its own first word points into a
  // module (libstdc++'s vtables of __class_type_info and the like), its second at the name.
  std::optional<uint64_t> type_info_vptr = pointerAt(*type_info);
  std::optional<uint64_t> name_at = pointerAt(*type_info + word);
  if (!type_info_vptr || !files_.moduleAt(*type_info_vptr) || !name_at)
    return "";
  std::optional<std::string> mangled = cStringAt(*name_at, kMaxMangledName);
  if (!mangled || mangled->empty())
    return "";
  // GCC marks the names of types with internal linkage with a leading '*' (compared by address).
  llvm::StringRef name(*mangled);
  name.consume_front("*");
  std::optional<std::string> text = demangleItanium("_ZTS" + name.str());
  llvm::StringRef type = text ? llvm::StringRef(*text) : llvm::StringRef();
  if (!type.consume_front("typeinfo name for ") || type.empty())
    return "";
  return strings_.save(type);
}

llvm::StringRef Names::fromSymbol(const Module &module, uint64_t vptr) {
  const ModuleFile *file = files_.fileOf(module);
  if (!file)
    return "";
  std::optional<ModuleSymbol> symbol = file->symbolAt(vptr);
  const uint64_t word = memory_.snapshot().system.pointer_size;
  // The address point of a primary vtable: after offset-to-top and the RTTI pointer.
  if (!symbol || !symbol->name.startswith("_ZTV") || vptr != symbol->address + 2 * word)
    return "";
  std::optional<std::string> text = demangleItanium(symbol->name.str());
  llvm::StringRef type = text ? llvm::StringRef(*text) : llvm::StringRef();
  if (!type.consume_front("vtable for ") || type.empty())
    return "";
  return strings_.save(type);
}

llvm::StringRef Names::classOf(uint64_t block) {
  std::optional<uint64_t> vptr = memory_.readPointer(block);
  // Aligned first: no word DenseMap reserves as a key (~0, ~0 - 1) is.
  if (!vptr || *vptr == 0 || *vptr % memory_.snapshot().system.pointer_size != 0 ||
      isReservedDenseKey(*vptr))
    return "";
  auto [it, inserted] = by_vptr_.try_emplace(*vptr, "");
  if (!inserted)
    return it->second;
  // A vtable lies in a module's read-only data (.data.rel.ro after relocation, or .rodata).
  const Region *region = memory_.regionContaining(*vptr);
  const Module *module = files_.moduleAt(*vptr);
  if (!region || region->perms.write || region->cls != RegionClass::Image || !module)
    return "";
  llvm::StringRef name = fromRtti(*vptr);
  if (name.empty())
    name = fromSymbol(*module, *vptr);
  by_vptr_[*vptr] = name;
  return name;
}

std::optional<std::pair<llvm::StringRef, uint64_t>> Names::globalAt(const Module &module,
                                                                    uint64_t address) {
  const ModuleFile *file = files_.fileOf(module);
  if (!file)
    return std::nullopt;
  std::optional<ModuleSymbol> symbol = file->symbolAt(address);
  if (!symbol)
    return std::nullopt;
  llvm::StringRef name = symbol->name;
  if (name.startswith("_Z"))
    if (std::optional<std::string> text = demangleItanium(name.str()))
      return std::make_pair(strings_.save(*text), symbol->address);
  return std::make_pair(strings_.save(name), symbol->address);
}

} // namespace dumpsift::holders
