// The DWARF type model of a module file (debug_types.h), read with LLVM's DWARFContext.
#include "dumpsift/dump/debug_types.h"

#include "dumpsift/support/error.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/DebugInfo/DWARF/DWARFContext.h"
#include "llvm/DebugInfo/DWARF/DWARFDie.h"
#include "llvm/DebugInfo/DWARF/DWARFFormValue.h"
#include "llvm/Object/Decompressor.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Endian.h"

#include <algorithm>

namespace dumpsift {

namespace {

using llvm::DWARFDie;
namespace dwarf = llvm::dwarf;

constexpr unsigned kMaxTypedefHops = 16;       // typedefs and qualifiers followed to a type
constexpr uint64_t kGoKindSlice = 23;          // reflect.Slice, in DW_AT_GO_kind
constexpr unsigned kMaxPointerPasses = 64;     // passes deciding has_pointers (nesting depth)
constexpr uint8_t kOpAddr = dwarf::DW_OP_addr; // a location that is one address
constexpr size_t kAddrLocation = 1 + 8;        // DW_OP_addr and its 8-byte operand
// A compressed debug section says how many bytes it decompresses to, and LLVM allocates them at
// once: zlib expands at most about 1032 times, so a claim past that, or past 1 GiB, is refused.
constexpr uint64_t kMaxExpansion = 1100;
constexpr uint64_t kMaxDebugSection = uint64_t(1) << 30;

/// Go's DW_AT_GO_runtime_type of `die` (written as an address, DW_FORM_addr), 0 when none.
uint64_t goRuntimeType(DWARFDie die) {
  const llvm::Optional<llvm::DWARFFormValue> value = die.find(dwarf::DW_AT_GO_runtime_type);
  if (!value)
    return 0;
  if (llvm::Optional<uint64_t> address = value->getAsAddress())
    return *address;
  return value->getAsUnsignedConstant().getValueOr(0);
}

/// Builds the model from the variables down: each type met gets an index at once and is filled
/// from a work list, so that a chain of types through pointers costs no recursion.
class ModelBuilder {
public:
  ModelBuilder(DebugTypes &out, size_t max_types) : out_(out), max_types_(max_types) {}

  /// The index of `die`'s type (typedefs and qualifiers followed), kNone for none or past the
  /// limit. A new one is filled later (fillPending).
  uint32_t indexOf(DWARFDie die) {
    for (unsigned hop = 0; die.isValid() && hop < kMaxTypedefHops; ++hop) {
      const dwarf::Tag tag = die.getTag();
      if (tag != dwarf::DW_TAG_typedef && tag != dwarf::DW_TAG_const_type &&
          tag != dwarf::DW_TAG_volatile_type && tag != dwarf::DW_TAG_restrict_type &&
          tag != dwarf::DW_TAG_atomic_type)
        break;
      die = die.getAttributeValueAsReferencedDie(dwarf::DW_AT_type);
    }
    if (!die.isValid())
      return DebugType::kNone;
    auto [it, added] = index_.try_emplace(die.getOffset(), DebugType::kNone);
    if (!added)
      return it->second;
    if (out_.types.size() >= max_types_)
      return DebugType::kNone;
    it->second = static_cast<uint32_t>(out_.types.size());
    out_.types.emplace_back();
    pending_.push_back({die, it->second});
    return it->second;
  }

  /// Fills every type met so far, and those they reach.
  void fillPending() {
    while (!pending_.empty()) {
      const auto [die, index] = pending_.back();
      pending_.pop_back();
      fill(die, index);
    }
  }

  /// Completes what needs every type filled: slices' element types, arrays' sizes, has_pointers.
  void finish() {
    std::vector<DebugType> &types = out_.types;
    for (DebugType &t : types)
      if (t.kind == DebugType::Kind::Slice && !t.members.empty() &&
          t.members.front().type != DebugType::kNone)
        t.target = types[t.members.front().type].target;
    for (DebugType &t : types)
      if (t.kind == DebugType::Kind::Array && t.size == 0 && t.target != DebugType::kNone)
        t.size = t.count * types[t.target].size;
    for (DebugType &t : types)
      t.has_pointers = ((t.kind == DebugType::Kind::Pointer || t.kind == DebugType::Kind::Slice) &&
                        t.target != DebugType::kNone) ||
                       t.kind == DebugType::Kind::Interface;
    for (unsigned pass = 0; pass < kMaxPointerPasses; ++pass) {
      bool changed = false;
      for (DebugType &t : types) {
        if (t.has_pointers)
          continue;
        if (t.kind == DebugType::Kind::Struct)
          t.has_pointers = std::any_of(t.members.begin(), t.members.end(), [&](const auto &m) {
            return m.type != DebugType::kNone && types[m.type].has_pointers;
          });
        else if (t.kind == DebugType::Kind::Array)
          t.has_pointers = t.count && t.target != DebugType::kNone && types[t.target].has_pointers;
        changed |= t.has_pointers;
      }
      if (!changed)
        break;
    }
  }

private:
  void fill(DWARFDie die, uint32_t index) {
    DebugType t;
    if (const char *name = die.getName(llvm::DINameKind::ShortName))
      t.name = name;
    t.size = dwarf::toUnsigned(die.find(dwarf::DW_AT_byte_size), 0);
    t.runtime_type = goRuntimeType(die);
    switch (die.getTag()) {
    case dwarf::DW_TAG_pointer_type:
    case dwarf::DW_TAG_reference_type:
    case dwarf::DW_TAG_rvalue_reference_type:
      t.kind = DebugType::Kind::Pointer;
      if (t.size == 0)
        t.size = die.getDwarfUnit()->getAddressByteSize();
      t.target = indexOf(die.getAttributeValueAsReferencedDie(dwarf::DW_AT_type));
      break;
    case dwarf::DW_TAG_structure_type:
    case dwarf::DW_TAG_class_type:
    case dwarf::DW_TAG_union_type:
      t.kind = DebugType::Kind::Struct;
      for (DWARFDie child : die.children()) {
        if (child.getTag() != dwarf::DW_TAG_member)
          continue;
        const llvm::Optional<uint64_t> offset =
            dwarf::toUnsigned(child.find(dwarf::DW_AT_data_member_location));
        if (!offset) // a static member, or an offset given as an expression
          continue;
        DebugType::Member m;
        if (const char *name = child.getName(llvm::DINameKind::ShortName))
          m.name = name;
        m.offset = *offset;
        m.type = indexOf(child.getAttributeValueAsReferencedDie(dwarf::DW_AT_type));
        t.members.push_back(std::move(m));
      }
      std::stable_sort(t.members.begin(), t.members.end(),
                       [](const auto &a, const auto &b) { return a.offset < b.offset; });
      if (dwarf::toUnsigned(die.find(dwarf::DW_AT_GO_kind), 0) == kGoKindSlice &&
          !t.members.empty() && t.members.front().offset == 0)
        t.kind = DebugType::Kind::Slice; // its element type: finish()
      else if ((t.name == "runtime.iface" || t.name == "runtime.eface") && t.size == 16)
        t.kind = DebugType::Kind::Interface;
      break;
    case dwarf::DW_TAG_array_type:
      t.kind = DebugType::Kind::Array;
      t.target = indexOf(die.getAttributeValueAsReferencedDie(dwarf::DW_AT_type));
      t.count = 0;
      for (DWARFDie child : die.children())
        if (child.getTag() == dwarf::DW_TAG_subrange_type) {
          if (auto count = dwarf::toUnsigned(child.find(dwarf::DW_AT_count)))
            t.count = *count;
          else if (auto upper = dwarf::toUnsigned(child.find(dwarf::DW_AT_upper_bound)))
            t.count = *upper + 1;
          break; // the first dimension; another makes it an array of arrays, left as Other
        }
      break;
    default:
      break;
    }
    out_.types[index] = std::move(t);
  }

  DebugTypes &out_;
  size_t max_types_;
  llvm::DenseMap<uint64_t, uint32_t> index_; // DIE offset -> type index
  std::vector<std::pair<DWARFDie, uint32_t>> pending_;
};

/// The size the compressed section `section` of `object` claims to decompress to (its
/// Elf32/64_Chdr's ch_size, or the big-endian size after "ZLIB" of a .zdebug section); 0 when it
/// is too short to say.
uint64_t claimedSize(const llvm::object::ObjectFile &object, llvm::StringRef name,
                     llvm::StringRef contents) {
  namespace endian = llvm::support::endian;
  const auto *data = reinterpret_cast<const uint8_t *>(contents.data());
  if (llvm::object::Decompressor::isGnuStyle(name))
    return contents.size() >= 12 ? endian::read64be(data + 4) : 0;
  const bool little = object.isLittleEndian();
  if (object.getBytesInAddress() == 8) // Elf64_Chdr: ch_type, ch_reserved, ch_size
    return contents.size() >= 24
               ? (little ? endian::read64le(data + 8) : endian::read64be(data + 8))
               : 0;
  return contents.size() >= 12 ? (little ? endian::read32le(data + 4) : endian::read32be(data + 4))
                               : 0;
}

/// An error naming the first compressed debug section of `object` that claims more bytes than
/// its compressed bytes can give (kMaxExpansion) or than kMaxDebugSection; success otherwise.
llvm::Error checkCompressedSections(const llvm::object::ObjectFile &object,
                                    const std::string &path) {
  for (const llvm::object::SectionRef &section : object.sections()) {
    if (!llvm::object::Decompressor::isCompressed(section))
      continue;
    llvm::Expected<llvm::StringRef> name = section.getName();
    llvm::Expected<llvm::StringRef> contents = section.getContents();
    if (!name || !contents) {
      llvm::consumeError(name.takeError());
      llvm::consumeError(contents.takeError());
      continue;
    }
    const uint64_t claimed = claimedSize(object, *name, *contents);
    if (claimed > kMaxDebugSection || claimed / kMaxExpansion > contents->size())
      return createError(path + ": debug section " + *name + " claims " + llvm::Twine(claimed) +
                         " bytes from " + llvm::Twine(contents->size()) + " compressed");
  }
  return llvm::Error::success();
}

/// The address a variable's location names when it is one DW_OP_addr, else nullopt.
std::optional<uint64_t> staticAddress(DWARFDie variable) {
  const llvm::Optional<llvm::DWARFFormValue> location = variable.find(dwarf::DW_AT_location);
  if (!location)
    return std::nullopt;
  const llvm::Optional<llvm::ArrayRef<uint8_t>> block = location->getAsBlock();
  if (!block || block->size() != kAddrLocation || (*block)[0] != kOpAddr)
    return std::nullopt;
  return llvm::support::endian::read64le(block->data() + 1);
}

} // namespace

llvm::Expected<DebugTypes> DebugTypes::read(const ModuleFile &file, size_t max_types) {
  llvm::Expected<std::unique_ptr<llvm::object::ObjectFile>> object =
      llvm::object::ObjectFile::createObjectFile(file.contents());
  if (!object)
    return object.takeError();
  if (llvm::Error e = checkCompressedSections(**object, file.path()))
    return llvm::Expected<DebugTypes>(std::move(e));
  // Damage inside the debug info leaves out what it touches; it is not printed.
  auto ignore = [](llvm::Error e) { llvm::consumeError(std::move(e)); };
  std::unique_ptr<llvm::DWARFContext> context = llvm::DWARFContext::create(
      **object, llvm::DWARFContext::ProcessDebugRelocations::Process, nullptr, "", ignore, ignore);
  DebugTypes out;
  ModelBuilder builder(out, max_types);
  // One pass over each unit's entries: the variables at one address (globals, and a function's
  // static locals), and, for Go, every type with a runtime descriptor (the dynamic types of
  // interface values).
  for (const std::unique_ptr<llvm::DWARFUnit> &unit : context->compile_units()) {
    for (const llvm::DWARFDebugInfoEntry &entry : unit->dies()) {
      const DWARFDie die(unit.get(), &entry);
      const dwarf::Tag tag = die.getTag();
      if (tag == dwarf::DW_TAG_variable) {
        const std::optional<uint64_t> address = staticAddress(die);
        const char *name = die.getName(llvm::DINameKind::LinkageName);
        if (!address || !name || *address == 0)
          continue;
        DebugVariable v;
        v.name = name;
        v.address = *address + file.bias();
        v.type = builder.indexOf(die.getAttributeValueAsReferencedDie(dwarf::DW_AT_type));
        out.variables.push_back(std::move(v));
      } else if (tag == dwarf::DW_TAG_structure_type || tag == dwarf::DW_TAG_pointer_type ||
                 tag == dwarf::DW_TAG_array_type || tag == dwarf::DW_TAG_typedef ||
                 tag == dwarf::DW_TAG_base_type) {
        const uint64_t runtime_type = goRuntimeType(die);
        const uint32_t index = runtime_type ? builder.indexOf(die) : DebugType::kNone;
        if (index != DebugType::kNone)
          out.runtime_types.push_back({runtime_type, index});
      }
    }
    builder.fillPending();
  }
  builder.finish();
  std::sort(out.runtime_types.begin(), out.runtime_types.end());
  out.runtime_types.erase(
      std::unique(out.runtime_types.begin(), out.runtime_types.end(),
                  [](const auto &a, const auto &b) { return a.first == b.first; }),
      out.runtime_types.end());
  std::sort(out.variables.begin(), out.variables.end(),
            [](const DebugVariable &a, const DebugVariable &b) { return a.address < b.address; });
  return out;
}

} // namespace dumpsift
