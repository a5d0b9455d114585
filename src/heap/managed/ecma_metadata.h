// ECMA-335 metadata of a .NET assembly image as it lies in a dump's memory: the metadata root and
// its streams, and the two tables a holder's name needs (TypeDef
// and Field) with their names in #Strings. Private to src/heap/managed.
#pragma once

#include "dumpsift/dump/address_space.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace dumpsift {

/// One image's metadata, read through the AddressSpace it was found in (which must outlive it).
class EcmaMetadata {
public:
  /// The metadata whose root ("BSJB", ECMA-335 II.24.2.1) lies at `root`; nullopt when the bytes
  /// there are no captured metadata root with #~ and #Strings streams whose tables read.
  static std::optional<EcmaMetadata> at(const AddressSpace &memory, uint64_t root);

  /// The metadata whose #Strings heap holds `name` (a runtime's pointer to a module's name): the
  /// nearest root at or below it, 4-byte aligned, within `search` bytes of captured memory; nullopt
  /// when none is. No PE header is needed (a ReadyToRun or NGen image's first page is often not in
  /// a core, its metadata is).
  static std::optional<EcmaMetadata> holding(const AddressSpace &memory, uint64_t name,
                                             uint64_t search);

  /// True when `address` lies in the image's #Strings heap.
  bool stringsHold(uint64_t address) const {
    return address >= strings_ && address < strings_ + strings_size_;
  }

  /// "Namespace.Name" of TypeDef row `rid` (1-based), "Name" when it has no namespace; "" when
  /// the row does not exist or its strings are not readable.
  std::string typeName(uint32_t rid) const;

  /// The name of Field row `rid` (1-based); "" as for typeName.
  std::string fieldName(uint32_t rid) const;

  /// The rows of the TypeDef table: its RIDs run from 1 to this.
  uint32_t typeDefCount() const;

private:
  explicit EcmaMetadata(const AddressSpace &memory) : memory_(&memory) {}
  bool readStreams(uint64_t root);
  bool readTables(uint64_t tables, uint64_t size);
  /// The NUL-terminated string at index `index` of #Strings ("" when out of the heap).
  std::string string(uint32_t index) const;
  /// The u16 or u32 at `at`, by `width`.
  std::optional<uint32_t> index(uint64_t at, unsigned width) const;

  const AddressSpace *memory_;
  uint64_t strings_ = 0, strings_size_ = 0;
  std::array<uint32_t, 64> rows_{};
  unsigned string_width_ = 2;
  uint64_t type_defs_ = 0, field_rows_ = 0; // where the TypeDef and Field tables start
  unsigned type_def_size_ = 0, field_size_ = 0;
};

} // namespace dumpsift
