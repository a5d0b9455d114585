// Reading the JVM from its vmStructs: flags, object layout, the heap's spaces (G1 regions,
// Parallel and Serial generations) and the TLABs of the Java threads; and, by their shape, the
// OopStorages that hold its handles. Names differ between JDK releases (HeapRegion became
// G1HeapRegion, GenCollectedHeap SerialHeap, ...); each lookup lists the spellings of JDK 11 to
// 25, newest first. docs/heap-hotspot.md has the sources.
#include "jvm.h"

#include "dumpsift/dump/words.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <bit>
#include <initializer_list>

namespace dumpsift::hotspot {

llvm::StringRef collectorName(Collector gc) {
  switch (gc) {
  case Collector::G1:
    return "G1";
  case Collector::Parallel:
    return "Parallel";
  case Collector::Serial:
    return "Serial";
  }
  return "G1";
}

namespace {

/// Bounds on counts read from the dump (no real JVM comes near them).
constexpr uint64_t kMaxFlags = 20000;
constexpr uint64_t kMaxThreads = 1 << 16;
constexpr uint64_t kMaxRegions = 1 << 21;
constexpr uint64_t kMaxHandleBlocks = 1 << 20; // of all storages together
constexpr uint64_t kMaxHandleRuns = 1 << 20;   // runs of slots in use, of all storages together
constexpr uint64_t kMaxStorageName = 64;

/// A (type, field) spelling of one vmStructs entry.
struct Name {
  llvm::StringRef type, field;
};

/// The vmStructs tables' fields and the dump's words they locate; every read says whether the
/// dump holds the bytes.
class Reader {
public:
  Reader(const AddressSpace &memory, const VmStructs &vm) : memory_(memory), vm_(vm) {}

  /// The first of `names` that the table has, as a non-static field.
  const VmField *field(std::initializer_list<Name> names) const {
    for (const Name &n : names)
      if (const VmField *f = vm_.field(n.type, n.field); f && !f->is_static)
        return f;
    return nullptr;
  }
  std::optional<uint64_t> offset(std::initializer_list<Name> names) const {
    const VmField *f = field(names);
    return f ? std::optional<uint64_t>(f->value) : std::nullopt;
  }
  /// The address of the first of `names` that the table has as a static field.
  std::optional<uint64_t> staticAddress(std::initializer_list<Name> names) const {
    for (const Name &n : names)
      if (auto a = vm_.address(n.type, n.field))
        return a;
    return std::nullopt;
  }
  /// The word at the first field of `names` in the object at `object`.
  std::optional<uint64_t> wordField(uint64_t object, std::initializer_list<Name> names) const {
    auto off = offset(names);
    return off ? memory_.readU64(object + *off) : std::nullopt;
  }
  /// The word a static field of `names` holds.
  std::optional<uint64_t> staticWord(std::initializer_list<Name> names) const {
    auto a = staticAddress(names);
    return a ? memory_.readU64(*a) : std::nullopt;
  }

  const AddressSpace &memory() const { return memory_; }
  const VmStructs &vm() const { return vm_; }

private:
  const AddressSpace &memory_;
  const VmStructs &vm_;
};

/// The JVM's flags (JVMFlag::flags, numFlags): name -> the address of the value.
class Flags {
public:
  Flags(const Reader &r, const LibjvmSpan &libjvm, Diagnostics &diags) {
    auto table = r.staticWord({{"JVMFlag", "flags"}, {"Flag", "flags"}});
    auto count = r.staticWord({{"JVMFlag", "numFlags"}, {"Flag", "numFlags"}});
    auto stride = r.vm().typeSize("JVMFlag");
    auto name = r.offset({{"JVMFlag", "_name"}, {"Flag", "_name"}});
    auto addr = r.offset({{"JVMFlag", "_addr"}, {"Flag", "_addr"}});
    if (!stride)
      stride = r.vm().typeSize("Flag");
    if (!table || !count || !stride || !name || !addr || *stride == 0) {
      diags.warn("hotspot", "the JVM's flag table is not in the dump; defaults assumed");
      return;
    }
    for (uint64_t i = 0; i < std::min(*count, kMaxFlags); ++i) {
      const uint64_t entry = *table + i * *stride;
      auto name_ptr = r.memory().readU64(entry + *name);
      auto value = r.memory().readU64(entry + *addr);
      if (!name_ptr || !value)
        continue;
      if (auto n = nameAt(r.memory(), libjvm, *name_ptr))
        values_.try_emplace(*n, *value);
    }
  }
  std::optional<bool> boolean(const Reader &r, llvm::StringRef name) const {
    auto it = values_.find(name);
    if (it == values_.end())
      return std::nullopt;
    auto v = r.memory().readU8(it->second);
    return v ? std::optional<bool>(*v != 0) : std::nullopt;
  }
  std::optional<uint64_t> word(const Reader &r, llvm::StringRef name) const {
    auto it = values_.find(name);
    return it == values_.end() ? std::nullopt : r.memory().readU64(it->second);
  }
  bool empty() const { return values_.empty(); }

private:
  llvm::StringMap<uint64_t> values_;
};

llvm::Expected<Collector> collectorOf(const Reader &r, const Flags &flags) {
  if (flags.boolean(r, "UseG1GC").value_or(false))
    return Collector::G1;
  if (flags.boolean(r, "UseParallelGC").value_or(false))
    return Collector::Parallel;
  if (flags.boolean(r, "UseSerialGC").value_or(false))
    return Collector::Serial;
  for (llvm::StringRef other : {"UseZGC", "UseShenandoahGC", "UseEpsilonGC"})
    if (flags.boolean(r, other).value_or(false))
      return createError("the JVM runs " + other.drop_front(3) +
                         ", which this walker does not read");
  return createError(
      "the JVM's collector is unknown (no UseG1GC, UseParallelGC or UseSerialGC flag set)");
}

/// The base and shift of a compressed pointer encoding: `holder`::_base and _shift (JDK 25),
/// `holder`::_narrow_<what>._base and ._shift (JDK 15 to 24), Universe::_narrow_<what>.* (JDK 11).
/// Leaves them as they are where the table does not say.
void readNarrowEncoding(const Reader &r, llvm::StringRef holder, llvm::StringRef what,
                        uint64_t &base, unsigned &shift) {
  const std::string field = ("_narrow_" + what).str();
  const std::string base_in = field + "._base", shift_in = field + "._shift";
  base = r.staticWord({{holder, "_base"}, {holder, base_in}, {"Universe", base_in}}).value_or(base);
  auto at = r.staticAddress({{holder, "_shift"}, {holder, shift_in}, {"Universe", shift_in}});
  if (auto s = at ? r.memory().readU32(*at) : std::nullopt; s && *s < 32)
    shift = *s;
}

ObjectLayout layoutOf(const Reader &r, const Flags &flags) {
  ObjectLayout l;
  l.compressed_oops = flags.boolean(r, "UseCompressedOops").value_or(false);
  l.compressed_class_pointers = flags.boolean(r, "UseCompressedClassPointers").value_or(false);
  l.compact_headers = flags.boolean(r, "UseCompactObjectHeaders").value_or(false);
  l.monitor_table = flags.boolean(r, "UseObjectMonitorTable").value_or(false);
  if (auto a = flags.word(r, "ObjectAlignmentInBytes");
      a && *a >= 8 && *a <= 256 && !(*a & (*a - 1)))
    l.alignment = *a;
  l.klass_offset =
      r.offset({{"oopDesc", "_metadata._compressed_klass"}, {"oopDesc", "_metadata._klass"}})
          .value_or(8);
  // arrayOopDesc::length_offset_in_bytes: the length follows the header (arrayOop.hpp).
  l.length_offset = l.compact_headers ? 8 : l.compressed_class_pointers ? 12 : 16;
  if (l.compressed_class_pointers || l.compact_headers)
    readNarrowEncoding(r, "CompressedKlassPointers", "klass", l.narrow_klass_base,
                       l.narrow_klass_shift);
  if (auto s = r.vm().longConstant("markWord::klass_shift"); s && *s < 64)
    l.mark_klass_shift = static_cast<unsigned>(*s);
  l.klass_layout_helper = r.offset({{"Klass", "_layout_helper"}}).value_or(8);
  l.klass_name = r.offset({{"Klass", "_name"}}).value_or(24);
  l.symbol_length = r.offset({{"Symbol", "_length"}}).value_or(4);
  l.symbol_body = r.offset({{"Symbol", "_body"}, {"Symbol", "_body[0]"}}).value_or(6);
  if (auto a = r.staticAddress({{"java_lang_Class", "_oop_size_offset"}}))
    if (auto v = r.memory().readU32(*a); v && *v < 4096)
      l.mirror_size_offset = *v;
  l.monitor_header_offset =
      r.offset({{"ObjectMonitor", "_header"}, {"ObjectMonitor", "_metadata"}});
  if (l.compressed_oops)
    readNarrowEncoding(r, "CompressedOops", "oop", l.narrow_oop_base, l.narrow_oop_shift);
  return l;
}

ClassRecords recordsOf(const Reader &r) {
  ClassRecords c;
  const VmStructs &vm = r.vm();
  c.super = r.offset({{"Klass", "_super"}});
  c.constants = r.offset({{"InstanceKlass", "_constants"}});
  c.fields = r.offset({{"InstanceKlass", "_fields"}});
  c.java_fields_count = r.offset({{"InstanceKlass", "_java_fields_count"}});
  c.fieldinfo_stream = r.offset({{"InstanceKlass", "_fieldinfo_stream"}});
  c.array_data = r.offset({{"Array<u2>", "_data"}, {"Array<u1>", "_data"}}).value_or(4);
  c.constant_pool_size = vm.typeSize("ConstantPool");
  auto constant = [&](llvm::StringRef name, unsigned &value, unsigned limit) {
    if (auto v = vm.intConstant(name); v && *v >= 0 && unsigned(*v) < limit)
      value = unsigned(*v);
  };
  constant("FieldInfo::field_slots", c.field_slots, 16);
  constant("FieldInfo::access_flags_offset", c.access_slot, c.field_slots);
  constant("FieldInfo::name_index_offset", c.name_slot, c.field_slots);
  constant("FieldInfo::signature_index_offset", c.signature_slot, c.field_slots);
  constant("FieldInfo::low_packed_offset", c.low_slot, c.field_slots);
  constant("FieldInfo::high_packed_offset", c.high_slot, c.field_slots);
  constant("FIELDINFO_TAG_SIZE", c.tag_size, 8);
  constant("FIELDINFO_TAG_OFFSET", c.tag_offset, 1u << c.tag_size);
  constant("FieldInfo::FieldFlags::_ff_initialized", c.ff_initialized, 32);
  constant("FieldInfo::FieldFlags::_ff_generic", c.ff_generic, 32);
  constant("FieldInfo::FieldFlags::_ff_contended", c.ff_contended, 32);
  if (auto a = r.staticAddress({{"java_lang_Class", "_klass_offset"}}))
    if (auto v = r.memory().readU32(*a); v && *v < 4096)
      c.mirror_klass_offset = *v;
  return c;
}

// --- G1 -------------------------------------------------------------------------------------

/// The G1 region tags (HeapRegionType::Tag, g1HeapRegionType.hpp) as the int constants give them.
struct RegionTags {
  int32_t free = 0, eden = 2, survivor = 3, starts_humongous = 12, continues_humongous = 13;
  int32_t old_mask = 16, archive_mask = 32; // 0 when the JDK has none (archive: 11 to 19)
  bool has_archive = true;

  explicit RegionTags(const VmStructs &vm) {
    for (llvm::StringRef prefix : {"G1HeapRegionType::", "HeapRegionType::"}) {
      auto get = [&](llvm::StringRef name) { return vm.intConstant((prefix + name).str()); };
      if (!get("FreeTag"))
        continue;
      free = *get("FreeTag");
      eden = get("EdenTag").value_or(eden);
      survivor = get("SurvTag").value_or(get("SurvivorTag").value_or(survivor));
      starts_humongous = get("StartsHumongousTag").value_or(starts_humongous);
      continues_humongous = get("ContinuesHumongousTag").value_or(continues_humongous);
      old_mask = get("OldMask").value_or(get("OldTag").value_or(old_mask));
      auto archive = get("ArchiveMask");
      has_archive = archive.has_value();
      archive_mask = archive.value_or(0);
      return;
    }
  }

  /// The kind of a region with `tag`, and whether its objects start at its bottom.
  std::pair<llvm::StringRef, bool> kind(int32_t tag) const {
    if (tag == free)
      return {"free", false};
    if (tag == eden)
      return {"eden", true};
    if (tag == survivor)
      return {"survivor", true};
    if (tag == starts_humongous)
      return {"humongous", true};
    if (tag == continues_humongous)
      return {"humongous", false};
    if (archive_mask && (tag & archive_mask))
      return {"archive", true};
    if (old_mask && (tag & old_mask))
      return {"old", true};
    return {"unknown", true};
  }
};

void readG1(const Reader &r, uint64_t heap, Jvm &jvm, Diagnostics &diags) {
  const VmField *hrm = r.field({{"G1CollectedHeap", "_hrm"}});
  auto regions = r.offset({{"G1HeapRegionManager", "_regions"}, {"HeapRegionManager", "_regions"}});
  auto base_off = r.offset({{"G1HeapRegionTable", "_base"}});
  auto length_off = r.offset({{"G1HeapRegionTable", "_length"}});
  auto bottom =
      r.offset({{"G1HeapRegion", "_bottom"}, {"HeapRegion", "_bottom"}, {"Space", "_bottom"}});
  auto end = r.offset({{"G1HeapRegion", "_end"}, {"HeapRegion", "_end"}, {"Space", "_end"}});
  auto top =
      r.offset({{"G1HeapRegion", "_top"}, {"HeapRegion", "_top"}, {"G1ContiguousSpace", "_top"}});
  auto type = r.offset({{"G1HeapRegion", "_type"}, {"HeapRegion", "_type"}});
  auto tag = r.offset({{"G1HeapRegionType", "_tag"}, {"HeapRegionType", "_tag"}});
  auto grain = r.staticAddress({{"G1HeapRegion", "GrainBytes"}, {"HeapRegion", "GrainBytes"}});
  if (!hrm || !regions || !base_off || !length_off || !bottom || !end || !top || !type || !tag ||
      !grain) {
    diags.warn("hotspot", "G1's region table is not described in vmStructs; no region walked");
    return;
  }
  // JDK 12 to 16 hold the region manager by pointer, 11 and 17+ embed it.
  std::optional<uint64_t> manager = heap + hrm->value;
  if (llvm::StringRef(hrm->type).endswith("*"))
    manager = r.memory().readU64(*manager);
  auto array = manager ? r.memory().readU64(*manager + *regions + *base_off) : std::nullopt;
  auto length = manager ? r.memory().readU64(*manager + *regions + *length_off) : std::nullopt;
  auto grain_bytes = r.memory().readU64(*grain);
  if (!array || !length || !grain_bytes || *grain_bytes == 0) {
    diags.warn("hotspot", "G1's region table is not in the dump; no region walked");
    return;
  }
  const uint64_t table = *array, region_bytes = *grain_bytes;
  jvm.region_bytes = region_bytes;
  uint64_t count = *length;
  const uint64_t fit = (jvm.reserved_end - jvm.reserved_start) / region_bytes;
  if (count > std::min(fit, kMaxRegions)) {
    diags.warn(hexAddress(table), "G1's region table claims " + std::to_string(count) +
                                      " regions; the reserved heap holds " + std::to_string(fit));
    count = std::min(fit, kMaxRegions);
  }
  const RegionTags tags(r.vm());
  for (uint64_t i = 0; i < count; ++i) {
    auto region = r.memory().readU64(table + 8 * i);
    if (!region || *region == 0) // not committed
      continue;
    auto b = r.memory().readU64(*region + *bottom), e = r.memory().readU64(*region + *end),
         t = r.memory().readU64(*region + *top);
    auto g = r.memory().readU32(*region + *type + *tag);
    const std::string where = "G1 region " + std::to_string(i) + " at " + hexAddress(*region);
    if (!b || !e || !t || !g) {
      diags.warn(where, "the region's fields are not in the dump");
      continue;
    }
    if (*e - *b != region_bytes || *b < jvm.reserved_start || *e > jvm.reserved_end) {
      diags.warn(where, "region [" + hexAddress(*b) + ", " + hexAddress(*e) +
                            ") is not a region of the reserved heap");
      continue;
    }
    Space s{*b, *t, *e, "", true};
    if (*t < *b || *t > *e) {
      diags.warn(where, "the region's top " + hexAddress(*t) + " is outside [" + hexAddress(*b) +
                            ", " + hexAddress(*e) + "]; walked to its end");
      s.top = *e;
    }
    auto [kind, walk] = tags.kind(static_cast<int32_t>(*g));
    s.kind = kind;
    s.walk = walk;
    if (kind == "unknown")
      diags.warn(where, "unknown region type tag " + std::to_string(*g) + "; walked as old");
    jvm.spaces.push_back(s);
  }
}

// --- Parallel and Serial ---------------------------------------------------------------------

/// A space object (MutableSpace, ContiguousSpace) at `space`, or nullopt with a warning.
std::optional<Space> readSpace(const Reader &r, std::optional<uint64_t> space, llvm::StringRef kind,
                               std::initializer_list<Name> bottom, std::initializer_list<Name> top,
                               std::initializer_list<Name> end, const Jvm &jvm,
                               Diagnostics &diags) {
  if (!space || *space == 0) {
    diags.warn("hotspot", ("the " + kind + " space is not in the dump").str());
    return std::nullopt;
  }
  auto b = r.wordField(*space, bottom), t = r.wordField(*space, top), e = r.wordField(*space, end);
  if (!b || !t || !e || *b > *e || *b < jvm.reserved_start || *e > jvm.reserved_end) {
    diags.warn(hexAddress(*space), ("the " + kind + " space's bounds are not readable").str());
    return std::nullopt;
  }
  Space s{*b, *t, *e, kind, true};
  if (*t < *b || *t > *e) {
    diags.warn(hexAddress(*space), ("the " + kind + " space's top " + hexAddress(*t) +
                                    " is outside its bounds; walked to its end")
                                       .str());
    s.top = *e;
  }
  return s;
}

void readParallel(const Reader &r, Jvm &jvm, Diagnostics &diags) {
  auto young = r.staticWord({{"ParallelScavengeHeap", "_young_gen"}});
  auto old = r.staticWord({{"ParallelScavengeHeap", "_old_gen"}});
  const std::initializer_list<Name> bottom{{"MutableSpace", "_bottom"}},
      top{{"MutableSpace", "_top"}}, end{{"MutableSpace", "_end"}};
  auto space = [&](std::optional<uint64_t> gen, Name field) {
    return gen ? r.wordField(*gen, {field}) : std::nullopt;
  };
  // The serviceability agent walks eden, from-space and old; to-space is empty between
  // collections (ParallelScavengeHeap.java).
  const std::pair<Name, llvm::StringRef> parts[] = {{{"PSYoungGen", "_eden_space"}, "eden"},
                                                    {{"PSYoungGen", "_from_space"}, "survivor"},
                                                    {{"PSYoungGen", "_to_space"}, "survivor-to"}};
  for (const auto &[field, kind] : parts)
    if (auto s = readSpace(r, space(young, field), kind, bottom, top, end, jvm, diags)) {
      s->walk = kind != "survivor-to";
      jvm.spaces.push_back(*s);
    }
  if (auto s = readSpace(r, space(old, {"PSOldGen", "_object_space"}), "old", bottom, top, end, jvm,
                         diags))
    jvm.spaces.push_back(*s);
}

void readSerial(const Reader &r, uint64_t heap, Jvm &jvm, Diagnostics &diags) {
  auto young =
      r.wordField(heap, {{"SerialHeap", "_young_gen"}, {"GenCollectedHeap", "_young_gen"}});
  auto old = r.wordField(heap, {{"SerialHeap", "_old_gen"}, {"GenCollectedHeap", "_old_gen"}});
  // ContiguousSpace lost its vtable and its Space base in JDK 23 (fields at 0, 8, 16).
  const std::initializer_list<Name> bottom{{"ContiguousSpace", "_bottom"}, {"Space", "_bottom"}},
      top{{"ContiguousSpace", "_top"}}, end{{"ContiguousSpace", "_end"}, {"Space", "_end"}};
  auto space = [&](std::optional<uint64_t> gen, Name field) {
    return gen ? r.wordField(*gen, {field}) : std::nullopt;
  };
  const std::pair<Name, llvm::StringRef> parts[] = {
      {{"DefNewGeneration", "_eden_space"}, "eden"},
      {{"DefNewGeneration", "_from_space"}, "survivor"},
      {{"DefNewGeneration", "_to_space"}, "survivor-to"}};
  for (const auto &[field, kind] : parts)
    if (auto s = readSpace(r, space(young, field), kind, bottom, top, end, jvm, diags)) {
      s->walk = kind != "survivor-to";
      jvm.spaces.push_back(*s);
    }
  if (auto s = readSpace(r, space(old, {"TenuredGeneration", "_the_space"}), "old", bottom, top,
                         end, jvm, diags))
    jvm.spaces.push_back(*s);
}

// --- TLABs -----------------------------------------------------------------------------------

/// Every Java thread's address: ThreadsSMRSupport's list (JDK 10+), else the linked list of
/// Threads::_thread_list.
std::vector<uint64_t> javaThreads(const Reader &r, Diagnostics &diags) {
  std::vector<uint64_t> threads;
  if (auto list = r.staticWord({{"ThreadsSMRSupport", "_java_thread_list"}})) {
    auto length_off = r.offset({{"ThreadsList", "_length"}});
    auto threads_off = r.offset({{"ThreadsList", "_threads"}});
    auto length = length_off ? r.memory().readU32(*list + *length_off) : std::nullopt;
    auto array = threads_off ? r.memory().readU64(*list + *threads_off) : std::nullopt;
    if (length && array) {
      if (*length > kMaxThreads)
        diags.warn(hexAddress(*list), "the thread list claims " + std::to_string(*length) +
                                          " threads; the first " + std::to_string(kMaxThreads) +
                                          " are read");
      for (uint64_t i = 0; i < std::min<uint64_t>(*length, kMaxThreads); ++i)
        if (auto t = r.memory().readU64(*array + 8 * i); t && *t)
          threads.push_back(*t);
      return threads;
    }
  }
  auto next = r.offset({{"JavaThread", "_next"}});
  auto first = r.staticWord({{"Threads", "_thread_list"}});
  for (auto t = first; next && t && *t && threads.size() < kMaxThreads;
       t = r.memory().readU64(*t + *next))
    threads.push_back(*t);
  if (threads.size() == kMaxThreads)
    diags.warn("hotspot", "the thread list does not end; the first " + std::to_string(kMaxThreads) +
                              " threads are read");
  return threads;
}

/// The unformatted tails of the threads' TLABs: [top, end + alignment reserve), as the
/// serviceability agent skips them (ThreadLocalAllocBuffer.java hardEnd()).
void readTlabs(const Reader &r, Jvm &jvm, Diagnostics &diags) {
  auto tlab = r.offset({{"Thread", "_tlab"}, {"JavaThread", "_tlab"}});
  auto start = r.offset({{"ThreadLocalAllocBuffer", "_start"}});
  auto top = r.offset({{"ThreadLocalAllocBuffer", "_top"}});
  auto end = r.offset({{"ThreadLocalAllocBuffer", "_end"}});
  if (!tlab || !start || !top || !end) {
    diags.warn("hotspot", "TLABs are not described in vmStructs; their tails may read as damage");
    return;
  }
  // The reserve (threadLocalAllocBuffer.hpp end_reserve()): the larger of the allocation
  // prefetch reserve and, in words, a filler int[]'s header (CollectedHeap::_lab_alignment_reserve
  // where vmStructs has it, JDK 21+; else typeArrayOopDesc::header_size(T_INT), which truncates
  // to whole words), aligned to the object alignment.
  uint64_t reserve_words = 0;
  if (auto a = r.staticAddress({{"ThreadLocalAllocBuffer", "_reserve_for_allocation_prefetch"}}))
    if (auto v = r.memory().readU32(*a); v && *v < (1u << 20))
      reserve_words = *v;
  uint64_t header_words = (jvm.layout.length_offset + 4) / 8;
  if (auto a = r.staticAddress({{"CollectedHeap", "_lab_alignment_reserve"}}))
    if (auto v = r.memory().readU64(*a); v && *v < 64)
      header_words = *v;
  const uint64_t align = jvm.layout.alignment;
  const uint64_t reserve = (std::max(reserve_words, header_words) * 8 + align - 1) & ~(align - 1);
  const std::vector<uint64_t> threads = javaThreads(r, diags);
  jvm.threads = threads.size();
  // Their stacks: the only ones whose words may hold a Java object (the VM's own threads, such as
  // the collector's, hold heap addresses as bookkeeping).
  auto stack_base = r.offset({{"JavaThread", "_stack_base"}, {"Thread", "_stack_base"}});
  auto stack_size = r.offset({{"JavaThread", "_stack_size"}, {"Thread", "_stack_size"}});
  for (uint64_t t : threads) {
    auto b = stack_base ? r.memory().readU64(t + *stack_base) : std::nullopt;
    auto n = stack_size ? r.memory().readU64(t + *stack_size) : std::nullopt;
    if (b && n && *n && *n <= *b)
      jvm.java_stacks.push_back({*b - *n, *b});
  }
  for (uint64_t t : threads) {
    auto s = r.memory().readU64(t + *tlab + *start), p = r.memory().readU64(t + *tlab + *top),
         e = r.memory().readU64(t + *tlab + *end);
    if (!s || !p || !e || *s == 0)
      continue;
    if (*p < *s || *e < *p || *s < jvm.reserved_start || *e > jvm.reserved_end) {
      diags.warn(hexAddress(t), "thread's TLAB [" + hexAddress(*s) + ", " + hexAddress(*e) +
                                    ") with top " + hexAddress(*p) + " is not in the heap");
      continue;
    }
    jvm.tlab_gaps.push_back({*p, *e + reserve});
  }
  std::sort(jvm.tlab_gaps.begin(), jvm.tlab_gaps.end(),
            [](const TlabGap &a, const TlabGap &b) { return a.start < b.start; });
  // Overlapping gaps (a damaged thread) are merged, so that the walk sees disjoint ones.
  std::vector<TlabGap> merged;
  for (const TlabGap &g : jvm.tlab_gaps) {
    if (!merged.empty() && g.start <= merged.back().end)
      merged.back().end = std::max(merged.back().end, g.end);
    else
      merged.push_back(g);
  }
  jvm.tlab_gaps = std::move(merged);
}

// --- Handles ---------------------------------------------------------------------------------

/// OopStorage's layout (oopStorage.hpp, oopStorageInternals.hpp; not in vmStructs), on 64-bit:
/// the storage begins {const char *_name; ActiveArray *_active_array}; an ActiveArray
/// {size_t _size; size_t _block_count; int _refcount} is followed by its Block pointers, from
/// +24; a Block, aligned to 64 bytes (a section of 8 slots), is {oop _data[64]; uintx
/// _allocated_bitmask; intptr_t _owner_address; ...}. Read on JDK 17 with gdb over libjvm's symbols
/// (OopStorageSet::_storages); a candidate is taken only when every one of its blocks points back
/// at it.
constexpr uint64_t kBlockSlots = 64, kBlockBytes = 8 * kBlockSlots, kBlockAlignment = 64;
constexpr uint64_t kActiveArrayBlocks = 24;
constexpr uint64_t kBlockBitmask = kBlockBytes, kBlockOwner = kBlockBytes + 8;

/// The storage at `storage` when it has OopStorage's shape and at least one block (its slots in
/// use appended to `slots` when it is strong; at most `budget` blocks read); nullopt otherwise.
/// Its name is a C string (a copy in the C heap on JDK 17).
std::optional<HandleStorage> readStorage(const AddressSpace &memory, uint64_t storage,
                                         uint64_t budget,
                                         std::vector<std::pair<uint64_t, uint64_t>> &slots) {
  auto array = memory.readU64(storage + 8);
  auto size = array ? memory.readU64(*array) : std::nullopt;
  auto count = array ? memory.readU64(*array + 8) : std::nullopt;
  if (!size || !count || *count == 0 || *count > *size || *count > budget)
    return std::nullopt;
  auto block_of = [&](uint64_t i) -> std::optional<uint64_t> {
    auto block = memory.readU64(*array + kActiveArrayBlocks + 8 * i);
    if (!block || *block % kBlockAlignment != 0 || memory.readU64(*block + kBlockOwner) != storage)
      return std::nullopt;
    return block;
  };
  if (!block_of(0)) // the cheap test first: the first block points back at the storage
    return std::nullopt;
  auto name_ptr = memory.readU64(storage);
  std::optional<llvm::StringRef> name =
      name_ptr ? memory.readCString(*name_ptr, kMaxStorageName) : std::nullopt;
  if (!name || name->empty() || !llvm::all_of(*name, [](char c) { return c >= 0x20 && c < 0x7f; }))
    return std::nullopt;
  HandleStorage s;
  s.name = name->str();
  s.weak = name->contains("Weak");
  s.address = storage;
  s.blocks = *count;
  std::vector<std::pair<uint64_t, uint64_t>> found;
  for (uint64_t i = 0; i < *count; ++i) {
    auto block = block_of(i);
    auto mask = block ? memory.readU64(*block + kBlockBitmask) : std::nullopt;
    if (!mask)
      return std::nullopt;
    s.handles += static_cast<uint64_t>(std::popcount(*mask));
    // Runs of slots in use, as [start, end).
    for (uint64_t bits = *mask; bits;) {
      const unsigned first = static_cast<unsigned>(std::countr_zero(bits));
      const unsigned length = static_cast<unsigned>(std::countr_one(bits >> first));
      if (slots.size() + found.size() >= kMaxHandleRuns)
        return std::nullopt; // more runs than any JVM has: not a storage
      found.push_back({*block + 8 * first, *block + 8 * (first + length)});
      bits = first + length >= 64 ? 0 : bits & ~((uint64_t(1) << (first + length)) - 1);
    }
  }
  if (!s.weak)
    slots.insert(slots.end(), found.begin(), found.end());
  return s;
}

/// Finds the OopStorages: the words of libjvm's writable data and of the .bss right after it
/// (OopStorageSet::_storages, JNIHandles::_global_handles) that point at one. Bounded: at most
/// kMaxHandleBlocks blocks and kMaxHandleRuns runs of slots in all; a candidate claiming more
/// is not taken.
void readHandles(const AddressSpace &memory, Jvm &jvm) {
  const LibjvmSpan &libjvm = jvm.libjvm;
  uint64_t lo = libjvm.lo, hi = libjvm.hi;
  if (const Region *bss = memory.regionContaining(hi);
      bss && bss->start == hi && bss->backing_file.empty() && bss->perms.write)
    hi = bss->end();
  llvm::DenseSet<uint64_t> tried;
  uint64_t budget = kMaxHandleBlocks;
  for (const MemoryRange &m : memory.snapshot().memory) {
    if (m.end() <= lo || m.start >= hi)
      continue;
    const Region *region = memory.regionContaining(m.start);
    if (!region || !region->perms.write)
      continue;
    const uint64_t first = std::max(m.start, lo), last = std::min(m.end(), hi);
    for (uint64_t at = (first + 7) & ~uint64_t(7); at + 8 <= last; at += 8) {
      const uint64_t word = read64le(m.bytes.data() + (at - m.start));
      if (word % 8 != 0 || word < 4096 || libjvm.contains(word) || !tried.insert(word).second)
        continue;
      if (auto s = readStorage(memory, word, budget, jvm.strong_handles)) {
        budget -= s->blocks;
        jvm.storages.push_back(std::move(*s));
      }
    }
  }
  std::sort(jvm.storages.begin(), jvm.storages.end(),
            [](const HandleStorage &a, const HandleStorage &b) { return a.address < b.address; });
  std::sort(jvm.strong_handles.begin(), jvm.strong_handles.end());
  // Two storages cannot share a block (each block names its owner), so the runs are disjoint.
}

} // namespace

llvm::Expected<Jvm> readJvm(const AddressSpace &memory, const LibjvmSpan &libjvm,
                            Diagnostics &diags) {
  auto vm = VmStructs::find(memory, libjvm);
  if (!vm)
    return vm.takeError();
  Reader r(memory, *vm);
  Jvm jvm;
  jvm.libjvm = libjvm;
  jvm.vm_fields = vm->fieldCount();
  jvm.vm_types = vm->typeCount();
  jvm.vm_constants = vm->constantCount();
  Flags flags(r, libjvm, diags);
  auto gc = collectorOf(r, flags);
  if (!gc)
    return gc.takeError();
  jvm.gc = *gc;
  jvm.layout = layoutOf(r, flags);
  jvm.records = recordsOf(r);

  auto heap = r.staticWord({{"Universe", "_collectedHeap"}});
  auto reserved = r.offset({{"CollectedHeap", "_reserved"}});
  auto start_off = r.offset({{"MemRegion", "_start"}});
  auto words_off = r.offset({{"MemRegion", "_word_size"}});
  if (!heap || !*heap || !reserved || !start_off || !words_off)
    return createError("Universe::_collectedHeap is not in the dump");
  auto start = r.memory().readU64(*heap + *reserved + *start_off);
  auto words = r.memory().readU64(*heap + *reserved + *words_off);
  if (!start || !words || *words == 0 || *words > (uint64_t(1) << 50) / 8 ||
      *start + *words * 8 < *start)
    return createError("the heap's reserved range at " + hexAddress(*heap) + " is not readable");
  jvm.reserved_start = *start;
  jvm.reserved_end = *start + *words * 8;

  switch (jvm.gc) {
  case Collector::G1:
    readG1(r, *heap, jvm, diags);
    break;
  case Collector::Parallel:
    readParallel(r, jvm, diags);
    break;
  case Collector::Serial:
    readSerial(r, *heap, jvm, diags);
    break;
  }
  std::sort(jvm.spaces.begin(), jvm.spaces.end(),
            [](const Space &a, const Space &b) { return a.bottom < b.bottom; });
  if (!flags.boolean(r, "UseTLAB").has_value() || *flags.boolean(r, "UseTLAB"))
    readTlabs(r, jvm, diags);
  readHandles(memory, jvm);
  return jvm;
}

} // namespace dumpsift::hotspot
