// Finding HotSpot's vmStructs tables by their shape. The entry layouts are fixed for the
// serviceability agent (src/hotspot/share/runtime/vmStructs.hpp: "Do not change the sizes or
// signedness of the integer values in these data structures"):
//   VMStructEntry      {char* typeName; char* fieldName; char* typeString; int32 isStatic;
//                       uint64 offset; void* address}                                  48 bytes
//   VMTypeEntry        {char* typeName; char* superclassName; int32 isOopType, isIntegerType,
//                       isUnsigned; uint64 size}                                        40 bytes
//   VMIntConstantEntry {char* name; int32 value}, VMLongConstantEntry {char* name; uint64 value}
//                                                                                       16 bytes
// Each table ends with an entry whose name is null (vmStructs.cpp, the *_end macros). The arrays
// live in libjvm's .data; their strings in its .rodata.
#include "vm_structs.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"

#include <algorithm>
#include <array>

namespace dumpsift::hotspot {

namespace {

constexpr uint64_t kMaxNameBytes = 256;
/// A run shorter than this is not a table (the smallest real one has hundreds of entries).
constexpr size_t kMinEntries = 8;
/// No table is longer: bounds the work and the maps on hostile input.
constexpr size_t kMaxEntries = 1 << 15;

/// Names are C++ spellings ("_klasses[static_cast<int>(vmClassID::Object_klass_knum)]"):
/// printable ASCII.
bool isNameChar(char c) {
  return c >= 0x20 && c < 0x7f;
}

/// Reads the names that table entries point at (see nameAt).
class NameReader {
public:
  NameReader(const AddressSpace &memory, const LibjvmSpan &libjvm)
      : memory_(memory), libjvm_(libjvm) {}

  std::optional<llvm::StringRef> at(uint64_t addr) const { return nameAt(memory_, libjvm_, addr); }
  /// A pointer that may be null or must be a name.
  bool nullOrName(uint64_t addr) const { return addr == 0 || at(addr).has_value(); }

private:
  const AddressSpace &memory_;
  const LibjvmSpan &libjvm_;
};

/// Calls take(offset, count) for every run in `bytes` of at least kMinEntries entries of `Stride`
/// bytes that `valid` accepts, ended by an entry whose first word is zero, and skips the run.
/// Linear: a broken chain is not walked again from its later entries.
template <size_t Stride, typename Valid, typename Take>
void findRuns(llvm::ArrayRef<uint8_t> bytes, Valid valid, Take take) {
  static_assert(Stride % 8 == 0);
  std::array<size_t, Stride / 8> dead_until{}; // per 8-byte phase of the stride
  size_t pos = 0;
  while (pos + Stride <= bytes.size()) {
    size_t &dead = dead_until[(pos / 8) % (Stride / 8)];
    if (pos < dead) {
      pos += 8;
      continue;
    }
    size_t n = 0, q = pos;
    while (q + Stride <= bytes.size() && n < kMaxEntries && read64le(bytes.data() + q) != 0 &&
           valid(bytes.data() + q)) {
      ++n;
      q += Stride;
    }
    if (n >= kMinEntries && q + Stride <= bytes.size() && read64le(bytes.data() + q) == 0) {
      take(pos, n);
      pos = q + Stride;
      continue;
    }
    dead = q; // every chain starting at pos + k * Stride ends at q too
    pos += 8;
  }
}

} // namespace

std::optional<llvm::StringRef> nameAt(const AddressSpace &memory, const LibjvmSpan &libjvm,
                                      uint64_t addr) {
  if (!libjvm.contains(addr))
    return std::nullopt;
  std::optional<llvm::StringRef> name = memory.readCString(addr, kMaxNameBytes);
  if (!name || name->empty() || !llvm::all_of(*name, isNameChar))
    return std::nullopt;
  return name;
}

std::optional<LibjvmSpan> findLibjvm(const Snapshot &snapshot) {
  std::optional<LibjvmSpan> span;
  for (const Region &r : snapshot.regions) {
    if (!namesModule(kLibjvmNames, r.backing_file))
      continue;
    if (!span)
      span = LibjvmSpan{r.start, r.end()};
    span->lo = std::min(span->lo, r.start);
    span->hi = std::max(span->hi, r.end());
  }
  return span;
}

llvm::Expected<VmStructs> VmStructs::find(const AddressSpace &memory, const LibjvmSpan &libjvm) {
  VmStructs vm;
  NameReader names(memory, libjvm);
  const Snapshot &snap = memory.snapshot();
  for (const MemoryRange &m : snap.memory) {
    if (m.end() <= libjvm.lo || m.start >= libjvm.hi)
      continue;
    const Region *r = memory.regionContaining(m.start);
    if (!r || !r->perms.write)
      continue;
    llvm::ArrayRef<uint8_t> bytes = m.bytes;
    findRuns<48>(
        bytes,
        [&](const uint8_t *e) {
          const uint32_t is_static = read32le(e + 24);
          const uint64_t offset = read64le(e + 32), address = read64le(e + 40);
          return names.at(read64le(e)) && names.at(read64le(e + 8)) &&
                 names.nullOrName(read64le(e + 16)) && is_static <= 1 &&
                 (is_static ? address != 0 : address == 0 && offset < (1u << 24));
        },
        [&](size_t at, size_t n) {
          for (size_t k = 0; k < n; ++k) {
            const uint8_t *e = bytes.data() + at + 48 * k;
            VmField f;
            f.is_static = read32le(e + 24) == 1;
            f.value = f.is_static ? read64le(e + 40) : read64le(e + 32);
            if (uint64_t t = read64le(e + 16))
              f.type = names.at(t)->str();
            std::string key = (*names.at(read64le(e)) + "::" + *names.at(read64le(e + 8))).str();
            vm.fields_.try_emplace(key, std::move(f));
          }
        });
    findRuns<40>(
        bytes,
        [&](const uint8_t *e) {
          return names.at(read64le(e)) && names.nullOrName(read64le(e + 8)) &&
                 read32le(e + 16) <= 1 && read32le(e + 20) <= 1 && read32le(e + 24) <= 1 &&
                 read64le(e + 32) < (uint64_t(1) << 32);
        },
        [&](size_t at, size_t n) {
          for (size_t k = 0; k < n; ++k) {
            const uint8_t *e = bytes.data() + at + 40 * k;
            vm.types_.try_emplace(*names.at(read64le(e)), read64le(e + 32));
          }
        });
    // Other tables of names in libjvm (register names, for instance) have this shape too; their
    // entries land in the map beside the constants and are never asked for.
    findRuns<16>(
        bytes, [&](const uint8_t *e) { return names.at(read64le(e)).has_value(); },
        [&](size_t at, size_t n) {
          for (size_t k = 0; k < n; ++k) {
            const uint8_t *e = bytes.data() + at + 16 * k;
            vm.constants_.try_emplace(*names.at(read64le(e)), read64le(e + 8));
          }
        });
  }
  if (vm.fields_.empty())
    return createError("no vmStructs table in libjvm's data at " + hexAddress(libjvm.lo) +
                       " (the dump lacks libjvm's data or its read-only strings; HotSpot's "
                       "DumpPrivateMappingsInCore, on by default, puts them in cores)");
  return vm;
}

const VmField *VmStructs::field(llvm::StringRef type, llvm::StringRef name) const {
  auto it = fields_.find((type + "::" + name).str());
  return it == fields_.end() ? nullptr : &it->second;
}

std::optional<uint64_t> VmStructs::offset(llvm::StringRef type, llvm::StringRef name) const {
  const VmField *f = field(type, name);
  if (!f || f->is_static)
    return std::nullopt;
  return f->value;
}

std::optional<uint64_t> VmStructs::address(llvm::StringRef type, llvm::StringRef name) const {
  const VmField *f = field(type, name);
  if (!f || !f->is_static)
    return std::nullopt;
  return f->value;
}

std::optional<uint64_t> VmStructs::typeSize(llvm::StringRef type) const {
  auto it = types_.find(type);
  return it == types_.end() ? std::nullopt : std::optional<uint64_t>(it->second);
}

std::optional<int32_t> VmStructs::intConstant(llvm::StringRef name) const {
  auto it = constants_.find(name);
  if (it == constants_.end())
    return std::nullopt;
  return static_cast<int32_t>(static_cast<uint32_t>(it->second));
}

std::optional<uint64_t> VmStructs::longConstant(llvm::StringRef name) const {
  auto it = constants_.find(name);
  return it == constants_.end() ? std::nullopt : std::optional<uint64_t>(it->second);
}

} // namespace dumpsift::hotspot
