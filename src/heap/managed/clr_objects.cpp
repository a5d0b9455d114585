#include "clr_objects.h"

#include "ecma_metadata.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>

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
// ContainsPointers (0x01000000), the same in every CLR 4+ version: an object of this type holds
// references (docs/heap-managed.md).
constexpr uint32_t kContainsPointers = 0x01000000u;
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

class ClrObjectFinder final : public ObjectFinder {
public:
  ClrObjectFinder(const AddressSpace &memory, ObjectMarks marks, bool names, ClrFreeObject free)
      : memory_(memory), marks_(std::move(marks)), names_(names), free_(free) {}

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
          each(p, *size, flags & kContainsPointers);
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

  /// The metadata of the module at `module`, found from its simple name's pointer into the
  /// image's #Strings: the nearest metadata root below it whose #Strings holds it. Cached.
  const EcmaMetadata *metadataOf(uint64_t module) {
    auto [it, added] = metadata_.try_emplace(module);
    if (!added)
      return it->second ? &*it->second : nullptr;
    const std::optional<uint64_t> name = memory_.readU64(module + kModuleSimpleName);
    if (!name || *name < 4096)
      return nullptr;
    it->second = EcmaMetadata::holding(memory_, *name, kMetadataSearch);
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

  /// The name of the instance field at `offset` (from the end of the MethodTable word) of an
  /// object with MethodTable `mt`: from the FieldDescs of its class and its parents' (those of a
  /// generic instantiation are its canonical MethodTable's), the Field row of the FieldDesc whose
  /// offset it is. "" when none is.
  std::string fieldName(uint64_t mt, uint64_t offset) {
    uint64_t cls = mt;
    for (unsigned up = 0; up < kMaxParents && cls; ++up) {
      uint64_t canonical = cls;
      std::optional<uint64_t> link = memory_.readU64(cls + kMtClassOrCanon);
      if (link && (*link & 3) == 2) {
        canonical = *link & ~uint64_t(3);
        link = memory_.readU64(canonical + kMtClassOrCanon);
      }
      if (!link || (*link & 3) != 0)
        return "";
      const uint64_t list_at = *link + kClassFieldDescList;
      const std::optional<uint64_t> list = memory_.readU64(list_at);
      if (list && *list) {
        uint64_t fd = list_at + *list;
        for (unsigned i = 0; i < kMaxFieldDescs; ++i, fd += kFieldDescSize) {
          const std::optional<uint64_t> enclosing = memory_.readU64(fd);
          const std::optional<uint32_t> bits = memory_.readU32(fd + 8),
                                        place = memory_.readU32(fd + 12);
          if (!enclosing || !bits || !place || fd + *enclosing != canonical)
            break;
          const bool is_static = (*bits >> 24) & 1;
          if (is_static || (*place & 0x07FFFFFF) != offset)
            continue;
          const uint32_t rid = ((*bits >> 30) & 1) ? (*bits & 0x00FFFFFF) : (*bits & 0x0001FFFF);
          const std::optional<uint64_t> module = memory_.readU64(canonical + kMtModule);
          const EcmaMetadata *md = module ? metadataOf(*module) : nullptr;
          return md ? md->fieldName(rid) : "";
        }
      }
      cls = memory_.readU64(cls + kMtParent).value_or(0);
    }
    return "";
  }

  const AddressSpace &memory_;
  ObjectMarks marks_;
  bool names_;
  ClrFreeObject free_;
  std::unordered_map<uint64_t, std::optional<EcmaMetadata>> metadata_; // by Module
  std::unordered_map<uint64_t, std::string> types_;                    // by MethodTable
};

} // namespace

std::shared_ptr<ObjectFinder> makeClrObjectFinder(const AddressSpace &memory, ObjectMarks marks,
                                                  bool names, ClrFreeObject free) {
  return std::make_shared<ClrObjectFinder>(memory, std::move(marks), names, free);
}

} // namespace dumpsift
