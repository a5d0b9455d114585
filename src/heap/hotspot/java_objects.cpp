#include "java_objects.h"

#include "objects.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

namespace dumpsift::hotspot {

namespace {

constexpr unsigned kMaxObjectSteps = 1u << 16;  // objects stepped over from a mark, at most
constexpr unsigned kMaxSuperClasses = 64;       // classes up the super chain
constexpr uint32_t kMaxFieldRecords = 1u << 16; // fields of one class read, at most
constexpr uint32_t kMaxFieldStream = 1u << 20;  // bytes of one class's field stream, at most
constexpr uint64_t kAccStatic = 0x0008;         // JVM_ACC_STATIC (JVMS 4.5)

/// One field of a class, as its records give it: where it is and the ConstantPool indexes of its
/// name and signature.
struct FieldRecord {
  uint64_t offset = 0;
  bool is_static = false;
  uint32_t name_index = 0, signature_index = 0;
};

/// A field found at an offset: its name, and whether its signature makes it a reference.
struct FieldHit {
  std::string name;
  bool reference = true;
};

/// Reads the UNSIGNED5 numbers of a JDK 21+ field stream (unsigned5.hpp: one to five bytes,
/// X = 1, L = 191, H = 64).
class Unsigned5Reader {
public:
  explicit Unsigned5Reader(llvm::ArrayRef<uint8_t> bytes) : bytes_(bytes) {}

  /// The next number; nullopt at the end or on a byte no encoding has.
  std::optional<uint32_t> next() {
    uint64_t sum = 0;
    for (unsigned i = 0; i < 5; ++i) {
      if (at_ >= bytes_.size() || bytes_[at_] < 1)
        return std::nullopt;
      const uint8_t b = bytes_[at_++];
      sum += uint64_t(b - 1) << (6 * i);
      if (b < 192 || i == 4)
        return sum <= UINT32_MAX ? std::optional<uint32_t>(uint32_t(sum)) : std::nullopt;
    }
    return std::nullopt;
  }

private:
  llvm::ArrayRef<uint8_t> bytes_;
  size_t at_ = 0;
};

class JavaObjectFinder final : public ObjectFinder {
public:
  JavaObjectFinder(const AddressSpace &memory, std::shared_ptr<const Jvm> jvm, ObjectMarks marks)
      : memory_(memory), jvm_(std::move(jvm)), parser_(memory, *jvm_), marks_(std::move(marks)) {}

  std::optional<HeldIn> objectHolding(uint64_t slot) override {
    const ObjectMarks::Mark *mark = marks_.below(slot);
    if (!mark)
      return std::nullopt;
    uint64_t p = mark->start;
    for (unsigned step = 0; step < kMaxObjectSteps && p < mark->limit; ++step) {
      Object o;
      if (!parser_.parse(p, mark->limit, o) || o.size == 0)
        return std::nullopt;
      if (slot < p + o.size)
        return held(p, o, slot);
      p += o.size;
    }
    return std::nullopt;
  }

  uint64_t objectCount() const override { return marks_.objects(); }

  void eachObject(
      llvm::function_ref<void(uint64_t start, uint64_t size, bool references)> each) override {
    marks_.eachStretch([&](const ObjectMarks::Mark &mark, uint64_t end) {
      uint64_t p = mark.start;
      for (unsigned step = 0; step < kMaxObjectSteps && p < end; ++step) {
        Object o;
        if (!parser_.parse(p, mark.limit, o) || o.size == 0)
          return;
        switch (o.info.kind) {
        case KlassInfo::Invalid:
        case KlassInfo::FillerArray:
        case KlassInfo::FillerObject:
          break; // free space
        default:
          each(p, o.size, o.info.kind != KlassInfo::PrimitiveArray);
        }
        p += o.size;
      }
    });
  }

private:
  HeldIn held(uint64_t object, const Object &o, uint64_t slot) {
    HeldIn h;
    h.object = object;
    h.size = o.size;
    h.type = className(o.klass);
    const uint64_t offset = slot - object;
    auto take = [&](const std::optional<FieldHit> &field) {
      if (field) {
        h.field = field->name;
        h.reference = field->reference;
      }
    };
    switch (o.info.kind) {
    case KlassInfo::ObjectArray:
      if (offset >= o.info.header && (offset - o.info.header) % referenceBytes() == 0)
        h.field = "[" + std::to_string((offset - o.info.header) / referenceBytes()) + "]";
      else
        h.reference = offset >= o.info.header; // the header holds none
      break;
    case KlassInfo::PrimitiveArray:
      h.reference = false;
      break;
    case KlassInfo::Instance:
      take(fieldAt(o.klass, offset, false));
      break;
    case KlassInfo::Mirror:
      // A static field lies in the mirror of its class (javaClasses.cpp), at the offset its
      // record gives; the mirror's own fields are java.lang.Class's.
      if (const auto &at = jvm_->records.mirror_klass_offset)
        if (auto mirrored = memory_.readU64(object + *at); mirrored && *mirrored)
          if (auto field = fieldAt(*mirrored, offset, true)) {
            h.type = className(*mirrored);
            take(field);
            h.is_static = !h.field.empty();
            break;
          }
      take(fieldAt(o.klass, offset, false));
      break;
    default:
      break;
    }
    return h;
  }

  uint64_t referenceBytes() const { return jvm_->layout.compressed_oops ? 4 : 8; }

  /// The bytes a field of `signature` takes (JVMS 4.3.2); a reference's when unknown.
  uint64_t fieldBytes(llvm::StringRef signature) const {
    switch (signature.empty() ? 'L' : signature.front()) {
    case 'B':
    case 'Z':
      return 1;
    case 'C':
    case 'S':
      return 2;
    case 'I':
    case 'F':
      return 4;
    case 'J':
    case 'D':
      return 8;
    default:
      return referenceBytes();
    }
  }

  /// The Symbol at `symbol` as text; "" when unreadable.
  llvm::StringRef symbolText(uint64_t symbol) const {
    const ObjectLayout &l = jvm_->layout;
    const std::optional<uint16_t> length = memory_.readU16(symbol + l.symbol_length);
    if (!length || *length == 0)
      return "";
    const uint8_t *body = memory_.tryView(symbol + l.symbol_body, *length);
    return body ? llvm::StringRef(reinterpret_cast<const char *>(body), *length) : "";
  }

  /// The Java name of `klass`; "" when unreadable. Cached.
  const std::string &className(uint64_t klass) {
    auto [it, added] = class_names_.try_emplace(klass);
    if (added)
      if (auto name = memory_.readU64(klass + jvm_->layout.klass_name))
        it->second = javaTypeName(symbolText(*name));
    return it->second;
  }

  /// The symbol at `index` of the ConstantPool at `pool`; "" when unreadable.
  llvm::StringRef constantSymbol(uint64_t pool, uint32_t index) const {
    const auto &size = jvm_->records.constant_pool_size;
    if (!size)
      return "";
    const std::optional<uint64_t> entry = memory_.readU64(pool + *size + 8 * uint64_t(index));
    return entry ? symbolText(*entry & ~uint64_t(1)) : "";
  }

  /// The fields `klass` itself declares (not its super classes'), from its records. Cached.
  const std::vector<FieldRecord> &fieldsOf(uint64_t klass) {
    auto [it, added] = fields_.try_emplace(klass);
    if (added)
      it->second = readFields(klass);
    return it->second;
  }

  std::vector<FieldRecord> readFields(uint64_t klass) const {
    const ClassRecords &c = jvm_->records;
    std::vector<FieldRecord> out;
    if (c.fields && c.java_fields_count) { // up to JDK 20: u2 slots per field
      const std::optional<uint64_t> array = memory_.readU64(klass + *c.fields);
      const std::optional<uint16_t> count = memory_.readU16(klass + *c.java_fields_count);
      const std::optional<uint32_t> length = array ? memory_.readU32(*array) : std::nullopt;
      if (!count || !length || uint64_t(*count) * c.field_slots > *length)
        return out;
      const uint8_t *slots =
          memory_.tryView(*array + c.array_data, uint64_t(*count) * c.field_slots * 2);
      if (!slots)
        return out;
      const uint32_t tag_mask = (1u << c.tag_size) - 1;
      for (uint32_t i = 0; i < *count; ++i) {
        auto slot = [&](unsigned s) { return read16le(slots + 2 * (i * c.field_slots + s)); };
        const uint32_t packed = uint32_t(slot(c.high_slot)) << 16 | slot(c.low_slot);
        if ((packed & tag_mask) != c.tag_offset)
          continue; // no offset yet (a field of a class not linked)
        out.push_back({packed >> c.tag_size, (slot(c.access_slot) & kAccStatic) != 0,
                       slot(c.name_slot), slot(c.signature_slot)});
      }
      return out;
    }
    if (!c.fieldinfo_stream) // JDK 21+: a stream of numbers
      return out;
    const std::optional<uint64_t> array = memory_.readU64(klass + *c.fieldinfo_stream);
    const std::optional<uint32_t> length = array ? memory_.readU32(*array) : std::nullopt;
    if (!length || *length > kMaxFieldStream)
      return out;
    const uint8_t *bytes = memory_.tryView(*array + c.array_data, *length);
    if (!bytes)
      return out;
    Unsigned5Reader in(llvm::ArrayRef<uint8_t>(bytes, *length));
    const std::optional<uint32_t> java_fields = in.next(), injected = in.next();
    if (!java_fields || !injected || *java_fields > kMaxFieldRecords)
      return out;
    for (uint32_t i = 0; i < *java_fields; ++i) {
      const auto name = in.next(), signature = in.next(), offset = in.next(), access = in.next(),
                 flags = in.next();
      if (!flags)
        return out;
      for (unsigned bit : {c.ff_initialized, c.ff_generic, c.ff_contended})
        if ((*flags >> bit) & 1 && !in.next())
          return out;
      out.push_back({*offset, (*access & kAccStatic) != 0, *name, *signature});
    }
    return out;
  }

  /// The field at `offset` of an object of `klass` (or, `is_static`, of its mirror), looked for
  /// in the class and its super classes; nullopt when no field the records declare starts there
  /// (the header, padding, or a field the VM injects).
  std::optional<FieldHit> fieldAt(uint64_t klass, uint64_t offset, bool is_static) {
    const ClassRecords &c = jvm_->records;
    if (!c.constants)
      return std::nullopt;
    for (unsigned depth = 0; klass && depth < kMaxSuperClasses; ++depth) {
      const std::optional<uint64_t> pool = memory_.readU64(klass + *c.constants);
      for (const FieldRecord &f : fieldsOf(klass)) {
        if (f.is_static != is_static || offset < f.offset || offset >= f.offset + 8 || !pool)
          continue;
        // A reference's signature is a class ("Ljava/lang/Object;") or an array ("[B"); the
        // word is the field only at its start, and within the field's bytes when it is wider.
        const llvm::StringRef signature = constantSymbol(*pool, f.signature_index);
        const bool reference =
            signature.empty() || signature.front() == 'L' || signature.front() == '[';
        if (offset == f.offset)
          return FieldHit{constantSymbol(*pool, f.name_index).str(), reference};
        if (offset < f.offset + fieldBytes(signature))
          return FieldHit{constantSymbol(*pool, f.name_index).str(), false};
      }
      if (is_static || !c.super) // statics are the mirrored class's own
        return std::nullopt;
      klass = memory_.readU64(klass + *c.super).value_or(0);
    }
    return std::nullopt;
  }

  const AddressSpace &memory_;
  std::shared_ptr<const Jvm> jvm_;
  ObjectParser parser_;
  ObjectMarks marks_;
  std::unordered_map<uint64_t, std::string> class_names_;
  std::unordered_map<uint64_t, std::vector<FieldRecord>> fields_;
};

} // namespace

std::string javaTypeName(llvm::StringRef symbol) {
  size_t dimensions = 0;
  while (dimensions < symbol.size() && symbol[dimensions] == '[')
    ++dimensions;
  llvm::StringRef element = symbol.drop_front(dimensions);
  std::string name;
  if (dimensions && element.size() == 1) {
    switch (element[0]) {
    case 'Z':
      name = "boolean";
      break;
    case 'B':
      name = "byte";
      break;
    case 'C':
      name = "char";
      break;
    case 'S':
      name = "short";
      break;
    case 'I':
      name = "int";
      break;
    case 'J':
      name = "long";
      break;
    case 'F':
      name = "float";
      break;
    case 'D':
      name = "double";
      break;
    default:
      name = element.str();
      break;
    }
  } else if (dimensions && element.startswith("L") && element.endswith(";")) {
    name = element.drop_front().drop_back().str();
  } else {
    name = element.str();
  }
  std::replace(name.begin(), name.end(), '/', '.');
  for (size_t d = 0; d < dimensions; ++d)
    name += "[]";
  return name;
}

std::shared_ptr<ObjectFinder> makeJavaObjectFinder(const AddressSpace &memory,
                                                   std::shared_ptr<const Jvm> jvm,
                                                   ObjectMarks marks) {
  return std::make_shared<JavaObjectFinder>(memory, std::move(jvm), std::move(marks));
}

} // namespace dumpsift::hotspot
