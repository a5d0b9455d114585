// HotSpot's own description of itself: the vmStructs tables that libjvm keeps in its data
// (src/hotspot/share/runtime/vmStructs.hpp, vmStructs.cpp). They name every field, type size and
// constant the serviceability agent needs, for the very build that made the dump. They are found
// here by their shape, without symbols. Private to src/heap/hotspot.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift::hotspot {

/// The file name of HotSpot's library.
inline constexpr ModuleName kLibjvmNames[] = {{"libjvm.so", ModuleName::Match::Exact}};

/// The address span of libjvm's mappings: pointers to its strings and Klass vtables lie inside.
struct LibjvmSpan {
  uint64_t lo = 0, hi = 0;
  bool contains(uint64_t addr) const { return addr >= lo && addr < hi; }
};

/// The span of every region mapped from a file named libjvm.so; nullopt when there is none.
std::optional<LibjvmSpan> findLibjvm(const Snapshot &snapshot);

/// The NUL-terminated name at `addr` inside libjvm: 1 to 255 printable ASCII characters (C++
/// type, field, constant and flag names); nullopt otherwise.
std::optional<llvm::StringRef> nameAt(const AddressSpace &memory, const LibjvmSpan &libjvm,
                                      uint64_t addr);

/// One field of a VMStructEntry: a non-static field's offset in its type, or a static field's
/// address.
struct VmField {
  bool is_static = false;
  uint64_t value = 0; // offset (non-static) or address (static)
  std::string type;   // the C++ type as vmStructs spells it ("HeapRegionManager", "Klass*")
};

/// The four tables (structs, types, int and long constants), decoded into maps keyed by name.
class VmStructs {
public:
  /// Scans the writable data of libjvm for the tables: runs of entries whose name pointers point
  /// at identifier strings inside libjvm, ended by an entry with a null name (the layouts of
  /// VMStructEntry, VMTypeEntry, VMIntConstantEntry and VMLongConstantEntry, fixed for the
  /// serviceability agent). Fails when no struct table is found: the dump lacks libjvm's data or
  /// its read-only strings.
  static llvm::Expected<VmStructs> find(const AddressSpace &memory, const LibjvmSpan &libjvm);

  /// "Type::field", or nullopt.
  const VmField *field(llvm::StringRef type, llvm::StringRef name) const;
  /// A non-static field's offset; nullopt when the table has no such field or it is static.
  std::optional<uint64_t> offset(llvm::StringRef type, llvm::StringRef name) const;
  /// A static field's address; nullopt when absent or not static.
  std::optional<uint64_t> address(llvm::StringRef type, llvm::StringRef name) const;
  /// sizeof(type) from the type table.
  std::optional<uint64_t> typeSize(llvm::StringRef type) const;
  /// An int constant (the low 32 bits of the entry's value, signed) or a long constant.
  std::optional<int32_t> intConstant(llvm::StringRef name) const;
  std::optional<uint64_t> longConstant(llvm::StringRef name) const;

  size_t fieldCount() const { return fields_.size(); }
  size_t typeCount() const { return types_.size(); }
  size_t constantCount() const { return constants_.size(); }

private:
  llvm::StringMap<VmField> fields_;     // "Type::field"
  llvm::StringMap<uint64_t> types_;     // type -> size
  llvm::StringMap<uint64_t> constants_; // name -> raw 64-bit value
};

} // namespace dumpsift::hotspot
