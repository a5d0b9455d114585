#include "mono_objects.h"

#include "dumpsift/dump/module_file.h"
#include "dumpsift/support/bytes.h"
#include "scan.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dumpsift {

namespace {

using namespace managed;

constexpr unsigned kMaxMonoDepth = 8;             // nested classes, type arguments, element types
constexpr uint64_t kMaxMonoName = 256;            // longest name read
constexpr uint32_t kMaxMonoFields = 1u << 14;     // fields of one class read, at most
constexpr unsigned kMaxMonoParents = 64;          // classes up the parent chain
constexpr uint32_t kMaxCacheBuckets = 1u << 20;   // buckets of an image's class cache read
constexpr unsigned kMaxBucketChain = 1u << 12;    // classes of one bucket
constexpr uint64_t kMaxClassesVisited = 1u << 21; // classes of all class caches, at most
constexpr uint32_t kMaxTypeArguments = 16;
constexpr uint64_t kMaxStaticArea = 1u << 24; // bytes of one class's statics
constexpr unsigned kMaxAssemblies = 1u << 14; // assemblies of one domain followed

/// MonoTypeEnum values whose field holds a reference (or may: a generic parameter, a generic
/// instantiation that may be a class).
bool referenceType(uint8_t type) {
  switch (type) {
  case 0x0E: // STRING
  case 0x12: // CLASS
  case 0x13: // VAR
  case 0x14: // ARRAY
  case 0x15: // GENERICINST
  case 0x1C: // OBJECT
  case 0x1D: // SZARRAY
  case 0x1E: // MVAR
    return true;
  default:
    return false;
  }
}

/// True when a field or element of MonoTypeEnum `type` may hold a reference: a reference type, or
/// an embedded value type (whose own fields may).
bool mayHoldReference(uint8_t type) {
  return referenceType(type) || type == 0x11; // VALUETYPE
}

/// One field of a class, as its MonoClassField says.
struct MonoField {
  uint64_t offset = 0;
  std::string name;
  uint8_t type = 0;
};

/// What the finder knows of one class (by MonoClass address).
struct MonoClassInfo {
  std::string name;
  bool array = false;
  uint32_t element_size = 0;
  bool element_references = false; // an array whose elements may be references
  uint64_t instance_size = 0;
  bool fields_read = false;
  bool references = false;         // an instance may hold references
  std::vector<MonoField> instance; // by offset, the parents' too
  std::vector<MonoField> statics;  // its own, by offset in its static area
};

/// A class's static area: `size` bytes from `start`, of class `klass`.
struct StaticArea {
  uint64_t start = 0, size = 0, klass = 0;
};

/// The assembly file an image maps, opened when the dump lacks the image's bytes.
struct ImageFile {
  uint64_t raw = 0, size = 0;               // where the process mapped it, and its length
  std::unique_ptr<llvm::MemoryBuffer> file; // null when no file is the image that ran
};

class MonoObjectFinder final : public ObjectFinder {
public:
  MonoObjectFinder(const AddressSpace &memory, const MonoLayout &layout,
                   std::vector<MonoMajorBlock> blocks, uint64_t objects)
      : memory_(memory), layout_(layout), blocks_(std::move(blocks)), objects_(objects) {}

  std::optional<HeldIn> objectHolding(uint64_t slot) override {
    const std::optional<std::pair<uint64_t, uint64_t>> object = objectAt(slot);
    if (!object)
      return std::nullopt;
    const auto [start, klass] = *object;
    const MonoClassInfo &info = classInfo(klass);
    HeldIn h;
    h.object = start;
    h.size = blockOf(slot)->object_size;
    h.type = info.name;
    const uint64_t offset = slot - start;
    if (offset < kMonoObjectHeader) {
      h.reference = false; // the vtable and the lock word
      return h;
    }
    if (info.array) {
      const uint32_t length = memory_.readU32(start + kMonoArrayLength).value_or(0);
      const uint64_t index =
          offset < kMonoArrayData ? length : (offset - kMonoArrayData) / info.element_size;
      if (index < length)
        h.field = "[" + std::to_string(index) + "]";
      h.reference = index < length && info.element_references;
      return h;
    }
    auto it = llvm::partition_point(info.instance,
                                    [&](const MonoField &f) { return f.offset <= offset; });
    if (it != info.instance.begin()) {
      const MonoField &f = *std::prev(it);
      if (f.offset == offset) {
        h.field = f.name;
        h.reference = referenceType(f.type);
      } else if (f.type == 0x11 || f.type == 0x15) { // within an embedded value type
        h.field = f.name;
      }
    }
    if (info.fields_read && info.instance_size && offset >= info.instance_size)
      h.reference = false;
    return h;
  }

  std::optional<HeldIn> staticHolding(uint64_t slot) override {
    if (!statics_read_)
      readStatics();
    auto it = llvm::partition_point(statics_, [&](const StaticArea &a) { return a.start <= slot; });
    if (it == statics_.begin() || slot - std::prev(it)->start >= std::prev(it)->size)
      return std::nullopt;
    const StaticArea &area = *std::prev(it);
    const MonoClassInfo &info = classInfo(area.klass);
    auto field = llvm::find_if(info.statics,
                               [&](const MonoField &f) { return area.start + f.offset == slot; });
    if (field == info.statics.end())
      return std::nullopt;
    HeldIn h;
    h.object = area.start;
    h.size = area.size;
    h.type = info.name;
    h.field = field->name;
    h.reference = mayHoldReference(field->type);
    h.is_static = true;
    return h;
  }

  uint64_t objectCount() const override { return objects_; }

  void eachObject(
      llvm::function_ref<void(uint64_t start, uint64_t size, bool references)> each) override {
    for (const MonoMajorBlock &b : blocks_)
      eachSlot(b, [&](uint64_t start, uint64_t klass) {
        each(start, b.object_size, classInfo(klass).references);
      });
  }

private:
  /// The block that holds `address`, or nullptr.
  const MonoMajorBlock *blockOf(uint64_t address) const {
    auto it =
        llvm::partition_point(blocks_, [&](const MonoMajorBlock &b) { return b.start <= address; });
    if (it == blocks_.begin() || address - std::prev(it)->start >= kMajorBlockSize)
      return nullptr;
    return &*std::prev(it);
  }

  /// The class of the live object at `start` of block `b` (a slot), or nullopt when the slot is
  /// free (its first word 0 or the free list's next slot, in the block) or its vtable unreadable.
  std::optional<uint64_t> classOfSlot(const MonoMajorBlock &b, uint64_t start) const {
    const std::optional<uint64_t> word = memory_.readU64(start);
    if (!word || (*word & ~kVTableTagBits) == 0 || *word - b.start < kMajorBlockSize)
      return std::nullopt;
    const std::optional<uint64_t> klass =
        memory_.readU64((*word & ~kVTableTagBits) + layout_.vtable_klass);
    if (!klass || *klass == 0 || (*klass & 7) != 0)
      return std::nullopt;
    return klass;
  }

  /// The live object holding `address`: its start and class.
  std::optional<std::pair<uint64_t, uint64_t>> objectAt(uint64_t address) const {
    const MonoMajorBlock *b = blockOf(address);
    if (!b || address - b->start < kMajorBlockSkip)
      return std::nullopt;
    const uint64_t index = (address - b->start - kMajorBlockSkip) / b->object_size;
    const uint64_t start = b->start + kMajorBlockSkip + index * b->object_size;
    if (start + b->object_size > b->start + kMajorBlockSize)
      return std::nullopt;
    const std::optional<uint64_t> klass = classOfSlot(*b, start);
    if (!klass)
      return std::nullopt;
    return std::make_pair(start, *klass);
  }

  /// Calls `each(start, klass)` for every live object of block `b`, in address order.
  template <typename Each> void eachSlot(const MonoMajorBlock &b, Each each) const {
    for (uint64_t start = b.start + kMajorBlockSkip;
         start + b.object_size <= b.start + kMajorBlockSize; start += b.object_size)
      if (const std::optional<uint64_t> klass = classOfSlot(b, start))
        each(start, *klass);
  }

  /// The file of the image at `image`, opened once: the path its MonoImage records, used only
  /// when its length is the image's and its module version id (the first GUID of its #GUID
  /// stream) is the one the MonoImage says the runtime loaded.
  const ImageFile &imageFile(uint64_t image) {
    auto [it, added] = images_.try_emplace(image);
    ImageFile &f = it->second;
    if (!added)
      return f;
    f.raw = memory_.readU64(image + layout_.image_raw_data).value_or(0);
    f.size = memory_.readU32(image + layout_.image_raw_data_len).value_or(0);
    const std::optional<uint64_t> path_at = memory_.readU64(image + layout_.image_filename);
    const std::optional<uint64_t> guid_at = memory_.readU64(image + layout_.image_guid);
    const std::optional<uint64_t> heap_guid = memory_.readU64(image + layout_.image_heap_guid);
    const std::string path =
        path_at ? memory_.readCString(*path_at, 4097).value_or("").str() : std::string();
    const std::string guid =
        guid_at ? memory_.readCString(*guid_at, 37).value_or("").str() : std::string();
    if (!f.raw || f.size < 16 || path.empty() || guid.size() != 36 || !heap_guid ||
        *heap_guid < f.raw || *heap_guid - f.raw > f.size - 16)
      return f;
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = mapRegularFile(path);
    if (!file || (*file)->getBufferSize() != f.size)
      return f;
    const uint8_t *g =
        reinterpret_cast<const uint8_t *>((*file)->getBufferStart()) + (*heap_guid - f.raw);
    char text[37];
    std::snprintf(text, sizeof text,
                  "%02X%02X%02X%02X-%02X%02X-%02X%02X-%02X%02X-%02X%02X%02X%02X%02X%02X", g[3],
                  g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8], g[9], g[10], g[11], g[12], g[13],
                  g[14], g[15]);
    if (llvm::StringRef(text).equals_insensitive(guid))
      f.file = std::move(*file);
    return f;
  }

  /// The NUL-terminated name at `address`, which the class `klass` owns: from the dump when it
  /// holds it, else from the file of the class's image; "" when neither does.
  std::string nameAt(uint64_t klass, uint64_t address) {
    if (address == 0)
      return "";
    if (std::optional<llvm::StringRef> text = memory_.readCString(address, kMaxMonoName + 1))
      return printable(*text) ? text->str() : "";
    const std::optional<uint64_t> image = memory_.readU64(klass + layout_.class_image);
    if (!image || *image == 0 || isReservedDenseKey(*image))
      return "";
    const ImageFile &f = imageFile(*image);
    if (!f.file || address < f.raw || address - f.raw >= f.size)
      return "";
    llvm::StringRef rest = f.file->getBuffer().substr(address - f.raw, kMaxMonoName + 1);
    const size_t end = rest.find('\0');
    if (end == llvm::StringRef::npos || !printable(rest.take_front(end)))
      return "";
    return rest.take_front(end).str();
  }

  /// The i32 at `address` (MonoClass sizes and offsets are ints).
  std::optional<int32_t> readI32(uint64_t address) const {
    const std::optional<uint32_t> word = memory_.readU32(address);
    return word ? std::optional<int32_t>(static_cast<int32_t>(*word)) : std::nullopt;
  }

  static bool printable(llvm::StringRef s) {
    return llvm::all_of(s, [](char c) { return c >= 0x20 && c <= 0x7e; });
  }

  /// "Namespace.Name", "Outer+Inner", "List`1<System.Byte[]>": the class's name as the runtime's
  /// Type.FullName spells it, generic arguments in <> as the coreclr finder gives them; "" when
  /// its name cannot be read.
  std::string className(uint64_t klass, unsigned depth = 0) {
    if (depth > kMaxMonoDepth || klass == 0)
      return "";
    const std::optional<uint8_t> kind = memory_.readU8(klass + layout_.class_kind);
    if (kind == kMonoClassGenericInst) {
      const uint64_t generic = memory_.readU64(klass + layout_.ginst_generic_class).value_or(0);
      const std::optional<uint64_t> container =
          generic ? memory_.readU64(generic + layout_.generic_container) : std::nullopt;
      std::string name = container ? className(*container, depth + 1) : "";
      if (name.empty())
        return "";
      const uint64_t inst = memory_.readU64(generic + layout_.generic_class_inst).value_or(0);
      const uint32_t argc =
          inst ? memory_.readU32(inst + layout_.inst_argc).value_or(0) & 0x3FFFFF : 0;
      if (argc == 0 || argc > kMaxTypeArguments)
        return name + "<?>";
      name += "<";
      for (uint32_t i = 0; i < argc; ++i) {
        const std::optional<uint64_t> type = memory_.readU64(inst + layout_.inst_argv + 8 * i);
        const std::string argument = type ? typeName(*type, depth + 1) : "";
        name += (i ? "," : "") + (argument.empty() ? std::string("?") : argument);
      }
      return name + ">";
    }
    const std::string name = nameAt(klass, memory_.readU64(klass + layout_.class_name).value_or(0));
    if (name.empty())
      return "";
    if (const uint64_t outer = memory_.readU64(klass + layout_.class_nested_in).value_or(0)) {
      const std::string enclosing = className(outer, depth + 1);
      return enclosing.empty() ? "" : enclosing + "+" + name;
    }
    const std::string space =
        nameAt(klass, memory_.readU64(klass + layout_.class_name_space).value_or(0));
    return space.empty() ? name : space + "." + name;
  }

  /// The name of the type a MonoType describes.
  std::string typeName(uint64_t type, unsigned depth) {
    const std::optional<uint8_t> kind = memory_.readU8(type + layout_.type_type);
    const uint64_t data = memory_.readU64(type + layout_.type_data).value_or(0);
    if (!kind)
      return "";
    if (llvm::StringRef primitive = elementTypeFullName(*kind); !primitive.empty())
      return primitive.str();
    switch (*kind) {
    case 0x11: // VALUETYPE
    case 0x12: // CLASS
      return className(data, depth + 1);
    case 0x1D: { // SZARRAY: data is the element class
      const std::string element = className(data, depth + 1);
      return element.empty() ? "" : element + "[]";
    }
    case 0x15: { // GENERICINST: data is the MonoGenericClass
      const uint64_t cached =
          data ? memory_.readU64(data + layout_.generic_cached_class).value_or(0) : 0;
      return cached ? className(cached, depth + 1) : "";
    }
    default:
      return "";
    }
  }

  /// Calls `each(field, is_static)` for the fields of `klass` itself (not its parents') until it
  /// returns true. False when they cannot be read.
  template <typename Each> bool eachField(uint64_t klass, Each each) {
    const std::optional<uint8_t> kind = memory_.readU8(klass + layout_.class_kind);
    uint64_t definition = klass;
    if (kind == kMonoClassGenericInst) { // its fields are inflated; the count is the definition's
      const uint64_t generic = memory_.readU64(klass + layout_.ginst_generic_class).value_or(0);
      definition = generic ? memory_.readU64(generic + layout_.generic_container).value_or(0) : 0;
    } else if (kind != kMonoClassDef && kind != kMonoClassGenericDef) {
      return kind.has_value(); // arrays and the like declare no fields
    }
    const std::optional<uint64_t> fields = memory_.readU64(klass + layout_.class_fields);
    const std::optional<uint32_t> count =
        definition ? memory_.readU32(definition + layout_.classdef_field_count) : std::nullopt;
    if (!fields || !count || *count > kMaxMonoFields)
      return false;
    if (*fields == 0)
      return *count == 0;
    for (uint32_t i = 0; i < *count; ++i) {
      const uint64_t at = *fields + uint64_t(i) * layout_.field_size;
      const std::optional<uint64_t> type = memory_.readU64(at + layout_.field_type);
      const std::optional<uint64_t> name = memory_.readU64(at + layout_.field_name);
      const std::optional<int32_t> offset = readI32(at + layout_.field_offset);
      const std::optional<uint16_t> attrs =
          type ? memory_.readU16(*type + layout_.type_attrs) : std::nullopt;
      const std::optional<uint8_t> kind_of =
          type ? memory_.readU8(*type + layout_.type_type) : std::nullopt;
      if (!name || !offset || *offset < 0 || !attrs || !kind_of)
        return false;
      MonoField f;
      f.offset = uint64_t(*offset);
      f.name = nameAt(klass, *name);
      f.type = *kind_of;
      if (each(f, (*attrs & kFieldAttributeStatic) != 0))
        break;
    }
    return true;
  }

  /// What the finder knows of class `klass`, read once.
  const MonoClassInfo &classInfo(uint64_t klass) {
    auto [it, added] = classes_.try_emplace(klass);
    if (!added)
      return it->second;
    MonoClassInfo info;
    info.name = className(klass);
    const std::optional<uint8_t> kind = memory_.readU8(klass + layout_.class_kind);
    if (kind == kMonoClassArray) {
      info.array = true;
      info.element_size = memory_.readU32(klass + layout_.class_element_size).value_or(0);
      const uint64_t element = memory_.readU64(klass + layout_.class_element_class).value_or(0);
      const uint8_t type =
          element ? memory_.readU8(element + layout_.class_byval_type).value_or(0) : 0;
      info.element_references = mayHoldReference(type) || type == 0;
      info.references = info.element_references;
      if (info.element_size == 0) { // unknown: every element slot may be one
        info.element_size = 8;
        info.element_references = info.references = true;
      }
    } else {
      const std::optional<int32_t> size = readI32(klass + layout_.class_instance_size);
      info.instance_size = size && *size > 0 ? uint64_t(*size) : 0;
      info.fields_read = true;
      std::vector<uint64_t> seen; // a parent chain that loops ends where it meets itself
      for (uint64_t cls = klass;
           cls && seen.size() < kMaxMonoParents && !llvm::is_contained(seen, cls);
           cls = memory_.readU64(cls + layout_.class_parent).value_or(0)) {
        seen.push_back(cls);
        info.fields_read &= eachField(cls, [&](const MonoField &f, bool is_static) {
          if (!is_static)
            info.instance.push_back(f);
          else if (cls == klass)
            info.statics.push_back(f);
          return false;
        });
      }
      llvm::sort(info.instance,
                 [](const MonoField &a, const MonoField &b) { return a.offset < b.offset; });
      info.references = !info.fields_read || llvm::any_of(info.instance, [](const MonoField &f) {
        return mayHoldReference(f.type);
      });
    }
    it = classes_.try_emplace(klass).first; // className may have added entries
    it->second = std::move(info);
    return it->second;
  }

  /// Finds the static areas of the classes of the images the heap's objects come from: each
  /// class of an image's class cache whose vtable (in the first domain) has static fields.
  void readStatics() {
    statics_read_ = true;
    // The images: those of the objects' classes, and every assembly's of their domains (a static
    // class has no object).
    std::vector<uint64_t> images, domains;
    for (const MonoMajorBlock &b : blocks_)
      eachSlot(b, [&](uint64_t start, uint64_t klass) {
        if (!seen_classes_.insert({klass, true}).second)
          return;
        if (std::optional<uint64_t> image = memory_.readU64(klass + layout_.class_image);
            image && *image && (*image & 7) == 0)
          images.push_back(*image);
        const uint64_t vtable = memory_.readU64(start).value_or(0) & ~kVTableTagBits;
        if (std::optional<uint64_t> domain = memory_.readU64(vtable + layout_.vtable_domain);
            domain && *domain && (*domain & 7) == 0)
          domains.push_back(*domain);
      });
    llvm::sort(domains);
    domains.erase(std::unique(domains.begin(), domains.end()), domains.end());
    for (uint64_t domain : domains) {
      uint64_t node = memory_.readU64(domain + layout_.domain_assemblies).value_or(0);
      for (unsigned n = 0; node && n < kMaxAssemblies; ++n) {
        const uint64_t assembly = memory_.readU64(node).value_or(0);
        if (std::optional<uint64_t> image =
                assembly ? memory_.readU64(assembly + layout_.assembly_image) : std::nullopt;
            image && *image && (*image & 7) == 0)
          images.push_back(*image);
        node = memory_.readU64(node + 8).value_or(0);
      }
    }
    llvm::sort(images);
    images.erase(std::unique(images.begin(), images.end()), images.end());
    uint64_t visited = 0; // classes of the caches looked at, in all
    for (uint64_t image : images) {
      const uint32_t buckets = memory_.readU32(image + layout_.image_class_cache_size).value_or(0);
      const uint64_t table = memory_.readU64(image + layout_.image_class_cache_table).value_or(0);
      if (!table || buckets > kMaxCacheBuckets)
        continue;
      for (uint32_t i = 0; i < buckets && visited < kMaxClassesVisited; ++i) {
        uint64_t klass = memory_.readU64(table + 8 * uint64_t(i)).value_or(0);
        for (unsigned n = 0; klass && n < kMaxBucketChain && visited < kMaxClassesVisited;
             ++n, ++visited) {
          addStatics(klass);
          klass = memory_.readU64(klass + layout_.classdef_next_class_cache).value_or(0);
        }
      }
    }
    llvm::sort(statics_,
               [](const StaticArea &a, const StaticArea &b) { return a.start < b.start; });
  }

  /// Adds the static area of `klass` (a class definition) when its vtable of the first domain
  /// says it has one: the pointer after the vtable's method slots, of the class's statics size.
  void addStatics(uint64_t klass) {
    if (memory_.readU8(klass + layout_.class_kind) != kMonoClassDef)
      return;
    const uint64_t info = memory_.readU64(klass + layout_.class_runtime_info).value_or(0);
    const uint64_t vtable = info ? memory_.readU64(info + 8).value_or(0) : 0;
    if (!vtable || memory_.readU64(vtable + layout_.vtable_klass) != klass ||
        !(memory_.readU8(vtable + layout_.vtable_flags).value_or(0) & 4))
      return;
    const std::optional<int32_t> slots = readI32(klass + layout_.class_vtable_size);
    const std::optional<int32_t> size = readI32(klass + layout_.class_element_size);
    if (!slots || *slots < 0 || !size || *size <= 0 || uint64_t(*size) > kMaxStaticArea)
      return;
    const uint64_t area =
        memory_.readU64(vtable + layout_.vtable_slots + 8 * uint64_t(*slots)).value_or(0);
    if (area && (area & 7) == 0)
      statics_.push_back({area, uint64_t(*size), klass});
  }

  const AddressSpace &memory_;
  const MonoLayout &layout_;
  std::vector<MonoMajorBlock> blocks_;
  uint64_t objects_ = 0;
  llvm::DenseMap<uint64_t, MonoClassInfo> classes_;
  llvm::DenseMap<uint64_t, ImageFile> images_;
  llvm::DenseMap<uint64_t, bool> seen_classes_;
  bool statics_read_ = false;
  std::vector<StaticArea> statics_;
};

} // namespace

std::shared_ptr<ObjectFinder> makeMonoObjectFinder(const AddressSpace &memory,
                                                   const MonoLayout &layout,
                                                   std::vector<MonoMajorBlock> blocks,
                                                   uint64_t objects) {
  return std::make_shared<MonoObjectFinder>(memory, layout, std::move(blocks), objects);
}

} // namespace dumpsift
