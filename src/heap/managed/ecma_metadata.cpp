#include "ecma_metadata.h"

#include "llvm/Support/Endian.h"

#include <algorithm>
#include <initializer_list>

namespace dumpsift {

namespace {

// ECMA-335 (6th edition) II.22 table numbers used here.
enum Table : unsigned {
  kModule = 0x00,
  kTypeRef = 0x01,
  kTypeDef = 0x02,
  kFieldPtr = 0x03,
  kField = 0x04,
  kMethodPtr = 0x05,
  kMethodDef = 0x06,
  kModuleRef = 0x1A,
  kTypeSpec = 0x1B,
  kAssemblyRef = 0x23,
};

constexpr uint32_t kMetadataSignature = 0x424A5342; // "BSJB", II.24.2.1
constexpr size_t kMaxName = 1024;                   // bytes of a name read, at most

} // namespace

std::optional<uint32_t> EcmaMetadata::index(uint64_t at, unsigned width) const {
  if (width == 2)
    return memory_->readU16(at);
  return memory_->readU32(at);
}

std::optional<EcmaMetadata> EcmaMetadata::at(const AddressSpace &memory, uint64_t root) {
  if (memory.readU32(root) != kMetadataSignature)
    return std::nullopt;
  EcmaMetadata md(memory);
  if (!md.readStreams(root))
    return std::nullopt;
  return md;
}

std::optional<EcmaMetadata> EcmaMetadata::holding(const AddressSpace &memory, uint64_t name,
                                                  uint64_t search) {
  // Backwards a page at a time: each captured page's words, from the highest 4-byte-aligned one
  // at or below `name`.
  uint64_t at = name & ~uint64_t(3), searched = 0;
  while (at >= 4 && searched < search) {
    const uint64_t page = at & ~uint64_t(4095);
    const uint8_t *bytes = memory.tryView(page, at + 4 - page);
    for (uint64_t word = at; bytes; word -= 4) { // not captured: go on below it
      if (llvm::support::endian::read32le(bytes + (word - page)) == kMetadataSignature)
        if (std::optional<EcmaMetadata> md = EcmaMetadata::at(memory, word);
            md && md->stringsHold(name))
          return md;
      if (word == page)
        break;
    }
    searched += at + 4 - page;
    if (page == 0)
      break;
    at = page - 4;
  }
  return std::nullopt;
}

bool EcmaMetadata::readStreams(uint64_t root) {
  // Without the CLI header the metadata's size is not known: each stream must lie within this.
  constexpr uint64_t size = uint64_t(1) << 30;
  // II.24.2.1: signature, versions, reserved, the version string's length and the string, flags,
  // the stream count; then II.24.2.2 the stream headers: offset, size, a NUL-terminated name
  // padded to 4 bytes.
  const std::optional<uint32_t> version_length = memory_->readU32(root + 12);
  if (!version_length || *version_length > 256)
    return false;
  uint64_t at = root + 16 + *version_length;
  const std::optional<uint16_t> streams = memory_->readU16(at + 2);
  if (!streams || *streams > 16)
    return false;
  at += 4;
  uint64_t tables = 0, tables_size = 0;
  for (unsigned i = 0; i < *streams; ++i) {
    const std::optional<uint32_t> offset = memory_->readU32(at), length = memory_->readU32(at + 4);
    const uint8_t *name = memory_->tryView(at + 8, 32);
    if (!offset || !length || !name || *offset > size || *length > size - *offset)
      return false;
    const size_t name_length = strnlen(reinterpret_cast<const char *>(name), 32);
    if (name_length == 32)
      return false;
    const llvm::StringRef stream(reinterpret_cast<const char *>(name), name_length);
    if (stream == "#~" || stream == "#-") {
      tables = root + *offset;
      tables_size = *length;
    } else if (stream == "#Strings") {
      strings_ = root + *offset;
      strings_size_ = *length;
    }
    at += 8 + ((name_length + 4) & ~size_t(3));
  }
  return tables && strings_size_ && readTables(tables, tables_size);
}

bool EcmaMetadata::readTables(uint64_t tables, uint64_t size) {
  // II.24.2.6: reserved, major, minor, HeapSizes, reserved, Valid (u64), Sorted (u64), then one
  // u32 row count per table present in Valid, then the tables in order.
  const std::optional<uint8_t> heap_sizes = memory_->readU8(tables + 6);
  const std::optional<uint64_t> valid = memory_->readU64(tables + 8);
  if (!heap_sizes || !valid || (*heap_sizes & 0x40))
    return false;
  uint64_t at = tables + 24;
  for (unsigned t = 0; t < 64; ++t) {
    if (!((*valid >> t) & 1))
      continue;
    const std::optional<uint32_t> rows = memory_->readU32(at);
    if (!rows || *rows > (1u << 24))
      return false;
    rows_[t] = *rows;
    at += 4;
  }
  string_width_ = (*heap_sizes & 1) ? 4 : 2;
  const unsigned guid = (*heap_sizes & 2) ? 4 : 2, blob = (*heap_sizes & 4) ? 4 : 2;
  // II.24.2.6: an index into one table is 2 bytes when it has fewer than 2^16 rows; a coded index
  // over several tables with `tag_bits` of tag, when each has fewer than 2^(16 - tag_bits).
  auto simple = [&](unsigned table) { return rows_[table] < (1u << 16) ? 2u : 4u; };
  auto coded = [&](std::initializer_list<unsigned> of, unsigned tag_bits) {
    uint32_t most = 0;
    for (unsigned t : of)
      most = std::max(most, rows_[t]);
    return most < (1u << (16 - tag_bits)) ? 2u : 4u;
  };
  const unsigned module = 2 + string_width_ + 3 * guid;
  const unsigned type_ref =
      coded({kModule, kModuleRef, kAssemblyRef, kTypeRef}, 2) + 2 * string_width_;
  type_def_size_ = 4 + 2 * string_width_ + coded({kTypeDef, kTypeRef, kTypeSpec}, 2) +
                   simple(rows_[kFieldPtr] ? kFieldPtr : kField) +
                   simple(rows_[kMethodPtr] ? kMethodPtr : kMethodDef);
  const unsigned field_ptr = simple(kField);
  field_size_ = 2 + string_width_ + blob;
  type_defs_ = at + uint64_t(rows_[kModule]) * module + uint64_t(rows_[kTypeRef]) * type_ref;
  field_rows_ = type_defs_ + uint64_t(rows_[kTypeDef]) * type_def_size_ +
                uint64_t(rows_[kFieldPtr]) * field_ptr;
  const uint64_t end = field_rows_ + uint64_t(rows_[kField]) * field_size_;
  return end <= tables + size;
}

std::string EcmaMetadata::string(uint32_t index) const {
  if (index >= strings_size_)
    return "";
  const uint64_t n = std::min<uint64_t>(kMaxName, strings_size_ - index);
  const uint8_t *p = memory_->tryView(strings_ + index, n);
  if (!p)
    return "";
  const size_t length = strnlen(reinterpret_cast<const char *>(p), n);
  return length == n ? "" : std::string(reinterpret_cast<const char *>(p), length);
}

uint32_t EcmaMetadata::typeDefCount() const {
  return rows_[kTypeDef];
}

std::string EcmaMetadata::typeName(uint32_t rid) const {
  if (rid == 0 || rid > rows_[kTypeDef])
    return "";
  const uint64_t row = type_defs_ + uint64_t(rid - 1) * type_def_size_;
  const std::optional<uint32_t> name = index(row + 4, string_width_),
                                space = index(row + 4 + string_width_, string_width_);
  if (!name || !space)
    return "";
  std::string type = string(*name), ns = string(*space);
  if (type.empty())
    return "";
  return ns.empty() ? type : ns + "." + type;
}

std::string EcmaMetadata::fieldName(uint32_t rid) const {
  if (rid == 0 || rid > rows_[kField])
    return "";
  const std::optional<uint32_t> name =
      index(field_rows_ + uint64_t(rid - 1) * field_size_ + 2, string_width_);
  return name ? string(*name) : "";
}

} // namespace dumpsift
