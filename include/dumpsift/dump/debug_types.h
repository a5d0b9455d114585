// The types of a module file's DWARF debug info, as far as naming what memory holds needs them:
// its global variables (name, address, type) and the types they reach (pointers, structures,
// arrays, Go slices), read with LLVM's DWARF reader (compressed sections too) and kept as a small
// model of their own, so that no other layer sees LLVM's DWARF classes.
#pragma once

#include "dumpsift/dump/module_file.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dumpsift {

/// One type of the model. Types refer to each other by index into DebugTypes::types.
struct DebugType {
  static constexpr uint32_t kNone = ~uint32_t(0);
  enum class Kind : uint8_t {
    Other,   // a base type, an enumeration, a function, void: holds no pointer the model follows
    Pointer, // `target` the pointee (kNone: void, unsafe.Pointer)
    Struct,  // `members`
    Array,   // `count` elements of `target`
    Slice,   // Go's slice header: `members` array (a pointer to `target`), len, cap
    /// Go's interface value (runtime.iface: an itab pointer, runtime.eface: a type descriptor
    /// pointer; then the data word): its dynamic type is in the value, not in the DWARF
    Interface,
  };
  struct Member {
    std::string name;
    uint64_t offset = 0;
    uint32_t type = kNone;
  };
  Kind kind = Kind::Other;
  std::string name; // as the producer spells it ("main.Channel", "[]uint8", "*bytes.Buffer")
  uint64_t size = 0;
  uint32_t target = kNone;
  uint64_t count = 0;
  std::vector<Member> members; // by offset
  /// True when a value of it holds a pointer (into memory another value of the model may lie in).
  bool has_pointers = false;
  /// Go: the offset of its type descriptor from the module's runtime.types (DW_AT_GO_runtime_type),
  /// what an interface value's type word points at; 0 when none.
  uint64_t runtime_type = 0;
};

/// A global variable of the module, at its address in the process (the file's plus its bias).
struct DebugVariable {
  std::string name;
  uint64_t address = 0;
  uint32_t type = DebugType::kNone;
};

/// The global variables of a module file's DWARF and the types they reach.
struct DebugTypes {
  std::vector<DebugType> types;
  std::vector<DebugVariable> variables; // by address
  /// Go: every type with a runtime descriptor, as (DebugType::runtime_type, index), by the first:
  /// the dynamic types an interface value may hold, whether a variable reaches them or not.
  std::vector<std::pair<uint64_t, uint32_t>> runtime_types;

  /// Reads `file`'s .debug_info (none: an empty model). At most `max_types` types are kept: a
  /// type past them reads as Other. Fails when the file's DWARF cannot be opened.
  static llvm::Expected<DebugTypes> read(const ModuleFile &file, size_t max_types = 1u << 20);
};

} // namespace dumpsift
