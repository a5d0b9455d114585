#include "clr_objects.h"

#include "ecma_metadata.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dumpsift {

namespace {

// The MethodTable of CoreCLR 2.0 on x64 (dotnet/runtime vm/methodtable.h of that era; checked on
// a .NET Core 2.0.0 core, ../shared/docs/notes/holders.md section 3):
constexpr uint64_t kMtBaseSize = 4;  // u32 m_BaseSize
constexpr uint64_t kMtToken = 0x0A;  // u16 m_wToken: the TypeDef RID, 0xFFFF when it overflows
constexpr uint64_t kMtParent = 0x10; // m_pParentMethodTable
constexpr uint64_t kMtModule = 0x18; // m_pLoaderModule (absolute in 2.0)
constexpr uint64_t kMtClassOrCanon = 0x28;     // EEClass (tag 0) or canonical MethodTable (tag 2)
constexpr uint64_t kMtElementOrPerInst = 0x30; // arrays: the element TypeHandle; generics:
                                               // m_pPerInstInfo, the dictionaries' table
// Its flags (u32 at +0): the low 16 bits are the component size when bit 31 is set; the category
// bits say array (0x00080000 under mask 0x000C0000) and, for arrays, SZ array (0x00020000); the
// generics bits of a type without components (mask 0x30) say 0x10 for an instantiation.
constexpr uint32_t kHasComponentSize = 0x80000000u, kArrayMask = 0x000C0000u,
                   kArrayBits = 0x00080000u, kSzArray = 0x00020000u, kGenericsMask = 0x30u,
                   kGenericInstantiation = 0x10u;
constexpr uint64_t kModuleSimpleName = 8;      // Module: its simple name, a pointer into #Strings
constexpr uint64_t kClassFieldDescList = 0x18; // EEClass: m_pFieldDescList, relative pointer
constexpr uint64_t kFieldDescSize = 16;        // FieldDesc: relative pointer to its MethodTable,
                                               // u32 mb:24|static:1|..|full mb:1 (bit 30),
                                               // u32 offset:27|type:5
constexpr uint8_t kElementSzArray = 0x1D; // CorElementType of a TypeDesc (ELEMENT_TYPE_SZARRAY)
constexpr uint64_t kTypeDescArg = 16;     // ArrayTypeDesc: m_Arg, the element TypeHandle
constexpr uint64_t kObjectMarkBits = 7;   // GC mark bits in an object's first word (x64)
constexpr uint64_t kSmallestObject = 24;  // ObjHeader, MethodTable*, one word
constexpr uint64_t kMetadataSearch = 64ull << 20; // below a module's name, for its metadata
constexpr unsigned kMaxSteps = 1u << 16;          // objects stepped over from a mark, at most
constexpr unsigned kMaxDepth = 8;                 // nested element types and type arguments
constexpr unsigned kMaxFieldDescs = 1u << 16;     // FieldDescs of one class read, at most
constexpr unsigned kMaxParents = 64;              // classes up the parent chain
// Statics (CoreCLR 2.0, checked on a .NET Core 2.0.0 core; holders.md section 3.1): a module's
// reference statics are consecutive elements of a pinned Object[], from the one its
// DomainLocalModule's m_pGCStatics points at; a static FieldDesc's offset is its byte offset from
// there (MethodTableBuilder adds the class's place in the module to its own).
constexpr uint64_t kModuleDomainLocalModule = 0x750; // Module: its DomainLocalModule
constexpr uint64_t kDlmGcStatics = 0x20;             // DomainLocalModule::m_pGCStatics
constexpr uint64_t kModuleSearched = 0x1000; // bytes of a Module searched for its TypeDef map
constexpr uint32_t kMaxTypeDefs = 1u << 20;  // TypeDef rows of one module looked at, at most
constexpr uint64_t kArrayElements = 16;      // an SZ array's elements, from its MethodTable word
// FieldDesc bits: static (bit 24), thread static (25), RVA (26) in the u32 at +8; its
// CorElementType in the top 5 bits of the u32 at +12, its offset in the other 27.
constexpr uint32_t kFieldStatic = 1u << 24, kFieldThreadStatic = 1u << 25, kFieldRva = 1u << 26;
constexpr uint32_t kFieldOffsetMask = 0x07FFFFFF;

/// The metadata of the module at `module`, found from its simple name's pointer into the image's
/// #Strings: the nearest metadata root below it whose #Strings holds it.
std::optional<EcmaMetadata> moduleMetadata(const AddressSpace &memory, uint64_t module) {
  const std::optional<uint64_t> name = memory.readU64(module + kModuleSimpleName);
  if (!name || *name < 4096)
    return std::nullopt;
  return EcmaMetadata::holding(memory, *name, kMetadataSearch);
}

/// True for a FieldDesc's element type whose static lives among the GC statics: a reference
/// (class, string, object, arrays, generic instantiations) or a value type, boxed there.
bool gcStaticType(uint8_t type) {
  switch (type) {
  case 0x0E: // STRING
  case 0x11: // VALUETYPE (boxed)
  case 0x12: // CLASS
  case 0x14: // ARRAY
  case 0x15: // GENERICINST
  case 0x1C: // OBJECT
  case 0x1D: // SZARRAY
    return true;
  default:
    return false;
  }
}

/// One FieldDesc's words: the u32 of bits (static, RID) and the u32 of offset and type.
struct FieldDescBits {
  uint32_t bits = 0, place = 0;
  uint32_t rid() const { return ((bits >> 30) & 1) ? (bits & 0x00FFFFFF) : (bits & 0x0001FFFF); }
  uint32_t offset() const { return place & kFieldOffsetMask; }
  uint8_t type() const { return static_cast<uint8_t>(place >> 27); }
};

/// A reference static of a module: its byte offset from the module's first GC static slot.
struct StaticField {
  uint64_t offset = 0;
  uint64_t method_table = 0; // of its class
  uint32_t rid = 0;          // its Field row
};

/// The reference statics of one module, by offset from `base`, the first slot of its GC statics.
struct ModuleStatics {
  uint64_t module = 0, base = 0;
  std::vector<StaticField> fields;
};

class ClrObjectFinder final : public ObjectFinder {
public:
  ClrObjectFinder(const AddressSpace &memory, ObjectMarks marks, bool names, ClrFreeObject free,
                  std::vector<ClrModule> modules)
      : memory_(memory), marks_(std::move(marks)), names_(names), free_(free),
        modules_(std::move(modules)) {}

  std::optional<HeldIn> objectHolding(uint64_t slot) override {
    const ObjectMarks::Mark *it = marks_.below(slot);
    if (!it)
      return std::nullopt;
    uint64_t p = it->start;
    for (unsigned step = 0; step < kMaxSteps && p < it->limit; ++step) {
      const std::optional<uint64_t> word = memory_.readU64(p);
      if (!word)
        return std::nullopt;
      if (*word == 0) { // allocation-context gap, as the walk skips it
        if (slot < p + 8)
          return std::nullopt;
        p += 8;
        continue;
      }
      const uint64_t mt = *word & ~kObjectMarkBits;
      const std::optional<uint64_t> size = objectSize(p, mt);
      if (!size || *size > it->limit - p)
        return std::nullopt;
      if (slot < p + *size)
        return held(p, *size, mt, slot);
      p += *size;
    }
    return std::nullopt;
  }

  uint64_t objectCount() const override { return marks_.objects(); }

  void eachObject(
      llvm::function_ref<void(uint64_t start, uint64_t size, bool references)> each) override {
    marks_.eachStretch([&](const ObjectMarks::Mark &mark, uint64_t end) {
      uint64_t p = mark.start;
      for (unsigned step = 0; step < kMaxSteps && p < end; ++step) {
        const std::optional<uint64_t> word = memory_.readU64(p);
        if (!word)
          return;
        if (*word == 0) { // allocation-context gap, as the walk skips it
          p += 8;
          continue;
        }
        const uint64_t mt = *word & ~kObjectMarkBits;
        const std::optional<uint64_t> size = objectSize(p, mt);
        if (!size || *size > mark.limit - p)
          return;
        const uint32_t flags = memory_.readU32(mt).value_or(0);
        if (!isFree(mt, flags))
          each(p, *size, flags & kClr4ContainsPointers);
        p += *size;
      }
    });
  }

private:
  /// True for the free object (free space between objects).
  bool isFree(uint64_t mt, uint32_t flags) const {
    if (free_.method_table)
      return mt == free_.method_table;
    return flags == free_.flags && memory_.readU32(mt + kMtBaseSize) == free_.base_size &&
           memory_.readU64(mt + kMtParent) == uint64_t(0);
  }

  /// The size of the object at `p` with MethodTable `mt`, 8-aligned; nullopt when unreadable.
  std::optional<uint64_t> objectSize(uint64_t p, uint64_t mt) const {
    const std::optional<uint32_t> flags = memory_.readU32(mt),
                                  base = memory_.readU32(mt + kMtBaseSize);
    if (!flags || !base || *base < kSmallestObject)
      return std::nullopt;
    uint64_t size = *base;
    if (*flags & kHasComponentSize) {
      const std::optional<uint32_t> length = memory_.readU32(p + 8);
      if (!length)
        return std::nullopt;
      size += uint64_t(*length) * (*flags & 0xFFFF);
    }
    return (size + 7) & ~uint64_t(7);
  }

  HeldIn held(uint64_t object, uint64_t size, uint64_t mt, uint64_t slot) {
    HeldIn h;
    h.object = object;
    h.size = size;
    if (!names_ || slot < object + 8)
      return h;
    h.type = typeName(mt);
    const uint32_t flags = memory_.readU32(mt).value_or(0);
    if ((flags & kHasComponentSize) && (flags & kArrayMask) == kArrayBits) {
      if (const std::optional<std::pair<uint64_t, uint32_t>> hit = staticAt(object, size, slot)) {
        const auto [class_table, rid] = *hit; // a module's statics array: the static it is
        const std::optional<uint64_t> module = memory_.readU64(class_table + kMtModule);
        const EcmaMetadata *md = module ? metadataOf(*module) : nullptr;
        h.type = typeName(class_table);
        h.field = md ? md->fieldName(rid) : "";
        h.is_static = true;
        if (!h.type.empty() && !h.field.empty())
          return h;
        h.is_static = false;
        h.type = typeName(mt);
        h.field.clear();
      }
      // The elements start at the base size less the next object's header word.
      const uint64_t data = object + memory_.readU32(mt + kMtBaseSize).value_or(0) - 8;
      const uint64_t element = flags & 0xFFFF;
      if (element && slot >= data)
        h.field = "[" + std::to_string((slot - data) / element) + "]";
    } else if (!(flags & kHasComponentSize)) {
      h.field = fieldName(mt, slot - object - 8);
    }
    return h;
  }

  /// moduleMetadata(module), cached.
  const EcmaMetadata *metadataOf(uint64_t module) {
    auto [it, added] = metadata_.try_emplace(module);
    if (added)
      it->second = moduleMetadata(memory_, module);
    return it->second ? &*it->second : nullptr;
  }

  /// The name of the type with MethodTable `mt`: namespace and name from its module's TypeDef
  /// row, "[]" after an array's element type, type arguments of a generic instantiation in <>.
  /// "" when any part is not known. Cached.
  std::string typeName(uint64_t mt, unsigned depth = 0) {
    if (auto it = types_.find(mt); it != types_.end())
      return it->second;
    if (depth > kMaxDepth)
      return "";
    std::string name;
    const std::optional<uint32_t> flags = memory_.readU32(mt);
    if (flags && (*flags & kHasComponentSize) && (*flags & kArrayMask) == kArrayBits) {
      if (std::optional<uint64_t> element = memory_.readU64(mt + kMtElementOrPerInst)) {
        const std::string of = handleName(*element, depth + 1);
        if (!of.empty())
          name = of + ((*flags & kSzArray) ? "[]" : "[,]");
      }
    } else if (flags) {
      const std::optional<uint16_t> token = memory_.readU16(mt + kMtToken);
      const std::optional<uint64_t> module = memory_.readU64(mt + kMtModule);
      const EcmaMetadata *md = token && *token != 0xFFFF && module ? metadataOf(*module) : nullptr;
      if (md)
        name = md->typeName(*token);
      if (!name.empty() && !(*flags & kHasComponentSize) &&
          (*flags & kGenericsMask) == kGenericInstantiation)
        name += typeArguments(mt, depth);
    }
    types_.emplace(mt, name);
    return name;
  }

  /// "<A,B>": the type arguments of the generic instantiation `mt`, from the last dictionary of
  /// its per-instantiation table (the u16 counts of dictionaries and of type parameters lie in the
  /// 4 bytes before the table); "<?>" when they cannot be read.
  std::string typeArguments(uint64_t mt, unsigned depth) {
    const std::optional<uint64_t> table = memory_.readU64(mt + kMtElementOrPerInst);
    const std::optional<uint16_t> dictionaries = table ? memory_.readU16(*table - 4) : std::nullopt;
    const std::optional<uint16_t> parameters = table ? memory_.readU16(*table - 2) : std::nullopt;
    if (!dictionaries || !parameters || *dictionaries == 0 || *parameters == 0 || *parameters > 16)
      return "<?>";
    const std::optional<uint64_t> dictionary =
        memory_.readU64(*table + 8 * uint64_t(*dictionaries - 1));
    std::string out = "<";
    for (unsigned i = 0; i < *parameters; ++i) {
      const std::optional<uint64_t> argument =
          dictionary ? memory_.readU64(*dictionary + 8 * uint64_t(i)) : std::nullopt;
      std::string name = argument ? handleName(*argument, depth + 1) : "";
      out += (i ? "," : "") + (name.empty() ? std::string("?") : name);
    }
    return out + ">";
  }

  /// The name of a TypeHandle: a MethodTable, or (bit 1 set) a TypeDesc, of which an SZ array's
  /// is named (its element type and "[]").
  std::string handleName(uint64_t handle, unsigned depth) {
    if (depth > kMaxDepth || handle == 0)
      return "";
    if (!(handle & 2))
      return typeName(handle & ~uint64_t(3), depth);
    const uint64_t desc = handle & ~uint64_t(3);
    if (memory_.readU8(desc) != kElementSzArray)
      return "";
    const std::optional<uint64_t> element = memory_.readU64(desc + kTypeDescArg);
    const std::string of = element ? handleName(*element, depth + 1) : "";
    return of.empty() ? "" : of + "[]";
  }

  /// Calls `each` with every FieldDesc of the class with canonical MethodTable `canonical`
  /// (those of its EEClass, up to the first whose enclosing MethodTable is another's) until it
  /// returns true. False when the class's FieldDescs cannot be found.
  bool eachFieldDesc(uint64_t canonical, llvm::function_ref<bool(const FieldDescBits &)> each) {
    const std::optional<uint64_t> link = memory_.readU64(canonical + kMtClassOrCanon);
    if (!link || (*link & 3) != 0)
      return false;
    const uint64_t list_at = *link + kClassFieldDescList;
    const std::optional<uint64_t> list = memory_.readU64(list_at);
    if (!list || !*list)
      return true;
    uint64_t fd = list_at + *list;
    for (unsigned i = 0; i < kMaxFieldDescs; ++i, fd += kFieldDescSize) {
      const std::optional<uint64_t> enclosing = memory_.readU64(fd);
      const std::optional<uint32_t> bits = memory_.readU32(fd + 8),
                                    place = memory_.readU32(fd + 12);
      if (!enclosing || !bits || !place || fd + *enclosing != canonical)
        break;
      if (each(FieldDescBits{*bits, *place}))
        break;
    }
    return true;
  }

  /// The name of the instance field at `offset` (from the end of the MethodTable word) of an
  /// object with MethodTable `mt`: from the FieldDescs of its class and its parents' (those of a
  /// generic instantiation are its canonical MethodTable's), the Field row of the FieldDesc whose
  /// offset it is. "" when none is.
  std::string fieldName(uint64_t mt, uint64_t offset) {
    uint64_t cls = mt;
    for (unsigned up = 0; up < kMaxParents && cls; ++up) {
      uint64_t canonical = cls;
      if (std::optional<uint64_t> link = memory_.readU64(cls + kMtClassOrCanon);
          link && (*link & 3) == 2)
        canonical = *link & ~uint64_t(3);
      std::optional<uint32_t> rid;
      if (!eachFieldDesc(canonical, [&](const FieldDescBits &fd) {
            if (!(fd.bits & kFieldStatic) && fd.offset() == offset)
              rid = fd.rid();
            return rid.has_value();
          }))
        return "";
      if (rid) {
        const std::optional<uint64_t> module = memory_.readU64(canonical + kMtModule);
        const EcmaMetadata *md = module ? metadataOf(*module) : nullptr;
        return md ? md->fieldName(*rid) : "";
      }
      cls = memory_.readU64(cls + kMtParent).value_or(0);
    }
    return "";
  }

  /// The static whose slot `slot` is, when the array `object` (`size` bytes) holds the GC statics
  /// of a module the walk met: the MethodTable of its class and its Field row. The module is the
  /// one whose first static slot is the nearest at or below `slot` inside the array; the static,
  /// the one field of its classes at that distance. nullopt when none is (a module whose types
  /// have no object on the heap, a generic class's statics, which live elsewhere).
  std::optional<std::pair<uint64_t, uint32_t>> staticAt(uint64_t object, uint64_t size,
                                                        uint64_t slot) {
    if (!statics_)
      statics_ = readStatics();
    const ModuleStatics *nearest = nullptr;
    for (const ModuleStatics &m : *statics_)
      if (m.base >= object + kArrayElements && m.base <= slot && m.base < object + size &&
          (!nearest || m.base > nearest->base))
        nearest = &m;
    if (!nearest)
      return std::nullopt;
    const uint64_t offset = slot - nearest->base;
    const auto &fields = nearest->fields;
    auto first = std::lower_bound(fields.begin(), fields.end(), offset,
                                  [](const StaticField &f, uint64_t o) { return f.offset < o; });
    if (first == fields.end() || first->offset != offset ||
        (first + 1 != fields.end() && first[1].offset == offset))
      return std::nullopt;
    return std::make_pair(first->method_table, first->rid);
  }

  /// The reference statics of every module the walk met whose statics can be found: its
  /// DomainLocalModule's first GC static slot, its loaded classes from its TypeDef map (a table
  /// of self-relative pointers to MethodTables by RID, with its count after it in the Module,
  /// found as the one holding the known MethodTable at its RID; at Module+0x320 on .NET Core
  /// 2.0), their static FieldDescs of a reference or boxed type. Generic classes are left out:
  /// their statics are allocated per instantiation.
  std::vector<ModuleStatics> readStatics() {
    std::vector<ModuleStatics> out;
    for (const ClrModule &known : modules_) {
      const std::optional<uint64_t> dlm = memory_.readU64(known.module + kModuleDomainLocalModule);
      const std::optional<uint64_t> base =
          dlm ? memory_.readU64(*dlm + kDlmGcStatics) : std::nullopt;
      const std::optional<uint16_t> known_rid = memory_.readU16(known.method_table + kMtToken);
      const EcmaMetadata *md = metadataOf(known.module);
      if (!base || !*base || (*base & 7) || !known_rid || *known_rid == 0 || *known_rid == 0xFFFF ||
          !md)
        continue;
      // The map (a LookupMap: next, table, count, flags) holds self-relative pointers by RID.
      auto entry = [&](uint64_t table, uint64_t rid) -> uint64_t {
        const uint64_t at = table + 8 * rid, value = memory_.readU64(at).value_or(0);
        return value ? (at + value) & ~uint64_t(7) : 0;
      };
      std::optional<uint64_t> map, count;
      for (uint64_t at = 8; at + 8 < kModuleSearched && !map; at += 8)
        if (std::optional<uint64_t> table = memory_.readU64(known.module + at);
            table && *table >= 4096 && entry(*table, *known_rid) == known.method_table) {
          map = *table;
          count = memory_.readU64(known.module + at + 8);
        }
      if (!map || !count)
        continue;
      ModuleStatics m{known.module, *base, {}};
      const uint64_t rows =
          std::min<uint64_t>({*count, md->typeDefCount() + uint64_t(1), kMaxTypeDefs});
      for (uint32_t rid = 1; rid < rows; ++rid) {
        const uint64_t mt = entry(*map, rid);
        const std::optional<uint32_t> flags = mt ? memory_.readU32(mt) : std::nullopt;
        if (!flags || (*flags & kHasComponentSize) || (*flags & kGenericsMask) ||
            memory_.readU16(mt + kMtToken) != rid ||
            memory_.readU64(mt + kMtModule) != known.module)
          continue;
        eachFieldDesc(mt, [&](const FieldDescBits &fd) {
          if ((fd.bits & (kFieldStatic | kFieldThreadStatic | kFieldRva)) == kFieldStatic &&
              gcStaticType(fd.type()))
            m.fields.push_back({fd.offset(), mt, fd.rid()});
          return false;
        });
      }
      std::sort(m.fields.begin(), m.fields.end(),
                [](const StaticField &a, const StaticField &b) { return a.offset < b.offset; });
      out.push_back(std::move(m));
    }
    return out;
  }

  const AddressSpace &memory_;
  ObjectMarks marks_;
  bool names_;
  ClrFreeObject free_;
  std::vector<ClrModule> modules_;
  std::optional<std::vector<ModuleStatics>> statics_;                  // read on the first question
  std::unordered_map<uint64_t, std::optional<EcmaMetadata>> metadata_; // by Module
  std::unordered_map<uint64_t, std::string> types_;                    // by MethodTable
};

} // namespace

std::string clrClassName(const AddressSpace &memory, uint64_t method_table) {
  const std::optional<uint32_t> flags = memory.readU32(method_table);
  const std::optional<uint16_t> token = memory.readU16(method_table + kMtToken);
  const std::optional<uint64_t> module = memory.readU64(method_table + kMtModule);
  if (!flags || (*flags & kHasComponentSize) || !token || *token == 0xFFFF || !module)
    return "";
  const std::optional<EcmaMetadata> md = moduleMetadata(memory, *module);
  return md ? md->typeName(*token) : "";
}

std::shared_ptr<ObjectFinder> makeClrObjectFinder(const AddressSpace &memory, ObjectMarks marks,
                                                  bool names, ClrFreeObject free,
                                                  std::vector<ClrModule> modules) {
  return std::make_shared<ClrObjectFinder>(memory, std::move(marks), names, free,
                                           std::move(modules));
}

} // namespace dumpsift
