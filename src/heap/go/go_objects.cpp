// The objects of a Go heap for the holders pass, typed from the executable's DWARF. A Go 1.19
// heap object carries no type, but the program's globals do (DW_TAG_variable with its address and
// type): from each, every pointer whose DWARF type is *T, and every slice of T, that points at the
// start of a heap object makes that object a T (or an array of them), whose own typed pointers go
// on, as a debugger types what a variable reaches; an interface value goes on by its dynamic
// type. An object no typed pointer reaches from a global (only from a goroutine's frame, or
// through an unsafe.Pointer) stays unnamed. See docs/heap-go.md, "Holders".
#include "dumpsift/dump/debug_types.h"
#include "go_heap.h"

#include "llvm/Support/Endian.h"

#include <algorithm>
#include <cstdint>

namespace dumpsift::golang {

namespace {

using Kind = DebugType::Kind;

constexpr uint64_t kMaxObjects = uint64_t(1) << 24; // objects a table of types covers (64 MB)
constexpr unsigned kMaxNesting = 32;                // types inside types followed
constexpr uint64_t kMaxArrayElements = 1u << 20;    // elements of one array value scanned
// A type descriptor (runtime._type, abi.Type): its kind byte, whose bit 5 (kindDirectIface) says
// an interface holds a value of it in its data word itself (a pointer-shaped type), not a pointer
// to a copy. An itab's type descriptor is its second word. Go 1.19 to 1.26 alike.
constexpr uint64_t kTypeKind = 23;
constexpr uint8_t kDirectIface = 1 << 5;
constexpr uint64_t kItabType = 8;

/// An object of the heap: its start, size, where its data begins, and its number among the
/// objects of the spans (for the finder's table of types).
struct HeapObject {
  uint64_t start = 0, size = 0, data = 0;
  uint64_t number = 0;
  bool noscan = false; // in a span of objects without pointers
};

/// An object's entry in the table of types: its type's index, and kArray when it was named as
/// an array (reached through a slice, or holding more than one value of its type).
constexpr uint32_t kUntyped = ~uint32_t(0);
constexpr uint32_t kArray = uint32_t(1) << 31;

class GoObjectFinder final : public ObjectFinder {
public:
  GoObjectFinder(const AddressSpace &memory, std::vector<ObjectSpan> spans)
      : memory_(memory), spans_(std::move(spans)) {
    first_.reserve(spans_.size());
    uint64_t objects = 0;
    for (const ObjectSpan &span : spans_) {
      first_.push_back(objects);
      objects += span.count;
    }
    objects_ = objects;
  }

  std::optional<HeldIn> objectHolding(uint64_t slot) override {
    if (!typed_once_) {
      typed_once_ = true;
      typeObjects();
    }
    const std::optional<HeapObject> object = objectAt(slot);
    if (!object || slot < object->data)
      return std::nullopt;
    const uint32_t entry = object->number < types_of_.size() ? types_of_[object->number] : kUntyped;
    if (entry == kUntyped)
      return std::nullopt;
    const uint32_t type_index = entry & ~kArray;
    const bool array = entry & kArray;
    const DebugType &type = types_.types[type_index];
    const uint64_t offset = slot - object->data, index = offset / type.size;
    const uint64_t count = (object->start + object->size - object->data) / type.size;
    if (index >= count)
      return std::nullopt;
    bool pointer = false;
    std::string field = memberPath(type_index, offset % type.size, pointer, 0);
    if (!pointer) // its type says the word holds no pointer: the type may be wrong, say nothing
      return std::nullopt;
    HeldIn h;
    h.object = object->start;
    h.size = object->size;
    h.type = array ? "[" + std::to_string(count) + "]" + type.name : type.name;
    if (array)
      field = "[" + std::to_string(index) + "]" + field;
    h.field = !field.empty() && field.front() == '.' ? field.substr(1) : field;
    return h;
  }

private:
  /// The object whose [start, start + size) holds `address`, from the spans; nullopt outside them.
  std::optional<HeapObject> objectAt(uint64_t address) const {
    auto it = std::upper_bound(spans_.begin(), spans_.end(), address,
                               [](uint64_t a, const ObjectSpan &s) { return a < s.start; });
    if (it == spans_.begin())
      return std::nullopt;
    const size_t at = size_t(std::prev(it) - spans_.begin());
    const ObjectSpan &span = spans_[at];
    const uint64_t index = (address - span.start) / span.size;
    if (index >= span.count)
      return std::nullopt;
    const uint64_t start = span.start + index * span.size;
    return HeapObject{start, span.size, start + span.data_offset, first_[at] + index, span.noscan};
  }

  /// The object numbered `number` (below objects_).
  HeapObject objectNumbered(uint64_t number) const {
    const size_t at =
        size_t(std::upper_bound(first_.begin(), first_.end(), number) - first_.begin()) - 1;
    const ObjectSpan &span = spans_[at];
    const uint64_t start = span.start + (number - first_[at]) * span.size;
    return HeapObject{start, span.size, start + span.data_offset, number, span.noscan};
  }

  /// Reads the executable's DWARF and types every object its globals reach. Without a usable
  /// executable or DWARF (a stripped build) nothing is typed.
  void typeObjects() {
    if (objects_ > kMaxObjects)
      return;
    std::string source, why;
    const std::unique_ptr<ModuleFile> exe = openExecutable(memory_, source, why, nullptr);
    if (!exe)
      return;
    llvm::Expected<DebugTypes> types = DebugTypes::read(*exe);
    if (!types) {
      llvm::consumeError(types.takeError());
      return;
    }
    types_ = std::move(*types);
    exe_ = exe.get();
    types_base_ = exe->symbolAddress("runtime.types").value_or(0);
    types_of_.assign(objects_, kUntyped);
    for (const DebugVariable &v : types_.variables)
      if (v.type != DebugType::kNone && types_.types[v.type].has_pointers)
        scanValue(v.address, v.type, 0);
    while (!queue_.empty()) {
      const uint32_t number = queue_.back();
      queue_.pop_back();
      const uint32_t type = types_of_[number] & ~kArray;
      const HeapObject object = objectNumbered(number);
      const uint64_t size = types_.types[type].size;
      const uint64_t count = (object.start + object.size - object.data) / size;
      for (uint64_t i = 0; i < count; ++i)
        scanValue(object.data + i * size, type, 0);
    }
    exe_ = nullptr;
    queue_ = {};
  }

  /// Follows the typed pointers of a value of `type` at `address`.
  void scanValue(uint64_t address, uint32_t type, unsigned depth) {
    const DebugType &t = types_.types[type];
    if (!t.has_pointers || depth > kMaxNesting)
      return;
    switch (t.kind) {
    case Kind::Pointer:
      if (const std::optional<uint64_t> p = memory_.readU64(address))
        claim(*p, t.target, false);
      break;
    case Kind::Slice:
      if (const std::optional<uint64_t> p = memory_.readU64(address + t.members.front().offset))
        claim(*p, t.target, true);
      break;
    case Kind::Struct:
      for (const DebugType::Member &m : t.members)
        if (m.type != DebugType::kNone)
          scanValue(address + m.offset, m.type, depth + 1);
      break;
    case Kind::Array: {
      const uint64_t size = types_.types[t.target].size;
      for (uint64_t i = 0; size && i < std::min(t.count, kMaxArrayElements); ++i)
        scanValue(address + i * size, t.target, depth + 1);
      break;
    }
    case Kind::Interface:
      scanInterface(address, t.name == "runtime.iface", depth);
      break;
    case Kind::Other:
      break;
    }
  }

  /// Follows an interface value at `address` (an iface when `itab`, else an eface) by its
  /// dynamic type: the type descriptor its first word names (through the itab) is a DWARF type
  /// by its offset from runtime.types; a pointer-shaped one is the data word itself, any other a
  /// copy of the value the data word points at.
  void scanInterface(uint64_t address, bool itab, unsigned depth) {
    const std::optional<uint64_t> first = word(address);
    const std::optional<uint64_t> data = memory_.readU64(address + 8);
    if (!first || !*first || !data || !*data || !types_base_)
      return;
    const std::optional<uint64_t> descriptor = itab ? word(*first + kItabType) : first;
    if (!descriptor || *descriptor < types_base_)
      return;
    const auto &known = types_.runtime_types;
    auto it = std::lower_bound(known.begin(), known.end(),
                               std::make_pair(*descriptor - types_base_, uint32_t(0)));
    const std::optional<uint8_t> kind = byte(*descriptor + kTypeKind);
    if (it == known.end() || it->first != *descriptor - types_base_ || !kind)
      return;
    if (*kind & kDirectIface)
      scanValue(address + 8, it->second, depth + 1);
    else
      claim(*data, it->second, false);
  }

  /// The bytes [address, address + len): the dump's, else the executable's (its read-only data,
  /// which a core does not hold: type descriptors, static itabs); empty when neither holds them.
  llvm::ArrayRef<uint8_t> bytesAt(uint64_t address, uint64_t len) const {
    if (const uint8_t *p = memory_.tryView(address, len))
      return llvm::ArrayRef<uint8_t>(p, len);
    return exe_ ? exe_->bytesAt(address, len) : llvm::ArrayRef<uint8_t>();
  }
  std::optional<uint64_t> word(uint64_t address) const {
    const llvm::ArrayRef<uint8_t> bytes = bytesAt(address, 8);
    return bytes.size() == 8
               ? std::optional<uint64_t>(llvm::support::endian::read64le(bytes.data()))
               : std::nullopt;
  }
  std::optional<uint8_t> byte(uint64_t address) const {
    const llvm::ArrayRef<uint8_t> bytes = bytesAt(address, 1);
    return bytes.size() == 1 ? std::optional<uint8_t>(bytes[0]) : std::nullopt;
  }

  /// Gives the heap object starting (its data) at `p` the type `type` (as many values of it as
  /// it holds), and queues it to be scanned. A second type for the same object replaces the first
  /// only when it is bigger (a pointer to a struct's first field also points at its start).
  void claim(uint64_t p, uint32_t type, bool array) {
    if (type == DebugType::kNone || !types_.types[type].has_pointers)
      return;
    const uint64_t size = types_.types[type].size;
    const std::optional<HeapObject> object = objectAt(p);
    if (size == 0 || !object || object->data != p || object->noscan)
      return;
    const uint64_t count = (object->start + object->size - object->data) / size;
    uint32_t &entry = types_of_[object->number];
    if (count == 0 || (entry != kUntyped && types_.types[entry & ~kArray].size >= size))
      return;
    entry = type | (array || count > 1 ? kArray : 0);
    queue_.push_back(static_cast<uint32_t>(object->number));
  }

  /// The member at `offset` of a value of `type`, as ".name", ".name.inner" or "[i]" steps;
  /// `pointer` says whether the word there is a pointer by the type (a slice's data pointer is
  /// named as the slice).
  std::string memberPath(uint32_t type, uint64_t offset, bool &pointer, unsigned depth) const {
    pointer = false;
    if (type == DebugType::kNone || depth > kMaxNesting)
      return "";
    const DebugType &t = types_.types[type];
    switch (t.kind) {
    case Kind::Pointer:
      pointer = offset == 0 && t.target != DebugType::kNone;
      return "";
    case Kind::Slice:
      pointer = offset == t.members.front().offset;
      return "";
    case Kind::Struct: {
      auto it =
          std::upper_bound(t.members.begin(), t.members.end(), offset,
                           [](uint64_t o, const DebugType::Member &m) { return o < m.offset; });
      if (it == t.members.begin())
        return "";
      const DebugType::Member &m = *std::prev(it);
      if (m.type == DebugType::kNone || offset - m.offset >= types_.types[m.type].size)
        return ""; // padding
      return "." + m.name + memberPath(m.type, offset - m.offset, pointer, depth + 1);
    }
    case Kind::Interface:
      pointer = offset == 8; // its data word
      return "";
    case Kind::Array: {
      const uint64_t size = t.target != DebugType::kNone ? types_.types[t.target].size : 0;
      if (!size || offset / size >= t.count)
        return "";
      return "[" + std::to_string(offset / size) + "]" +
             memberPath(t.target, offset % size, pointer, depth + 1);
    }
    case Kind::Other:
      return "";
    }
    return "";
  }

  const AddressSpace &memory_;
  std::vector<ObjectSpan> spans_;
  std::vector<uint64_t> first_; // the number of each span's first object
  uint64_t objects_ = 0;        // in all spans
  bool typed_once_ = false;
  DebugTypes types_;
  const ModuleFile *exe_ = nullptr; // while typing: the executable, for its read-only data
  uint64_t types_base_ = 0;         // runtime.types in the process, 0 when unknown
  std::vector<uint32_t> types_of_;  // by object number: its type (| kArray), or kUntyped
  std::vector<uint32_t> queue_;     // numbers of the typed objects not scanned yet
};

} // namespace

std::shared_ptr<ObjectFinder> makeGoObjectFinder(const AddressSpace &memory,
                                                 std::vector<ObjectSpan> spans) {
  return std::make_shared<GoObjectFinder>(memory, std::move(spans));
}

} // namespace dumpsift::golang
