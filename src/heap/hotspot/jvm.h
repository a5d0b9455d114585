// What the hotspot walker reads about one JVM before it touches an object: the collector, the
// object layout, the heap's spaces and the threads' allocation buffers, all from the vmStructs
// tables and the JVM's flags in the dump. Private to src/heap/hotspot; docs/heap-hotspot.md gives
// each fact's OpenJDK source.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/support/diagnostics.h"
#include "vm_structs.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift::hotspot {

enum class Collector { G1, Parallel, Serial };
llvm::StringRef collectorName(Collector gc); // "G1", "Parallel", "Serial"

/// Where an object's class and an array's length are, and how big an object can be.
struct ObjectLayout {
  bool compressed_oops = false;
  bool compressed_class_pointers = false;
  bool compact_headers = false; // JDK 24+ -XX:+UseCompactObjectHeaders: the class in the mark word
  uint64_t alignment = 8;       // ObjectAlignmentInBytes
  uint64_t klass_offset = 8;    // oopDesc::_metadata (unused with compact headers)
  uint64_t length_offset = 12;  // an array's s32 length
  uint64_t narrow_klass_base = 0;
  unsigned narrow_klass_shift = 0;
  unsigned mark_klass_shift = 42; // markWord::klass_shift (compact headers)
  // Klass and Symbol fields.
  uint64_t klass_layout_helper = 8, klass_name = 24;
  uint64_t symbol_length = 4, symbol_body = 6;
  /// java_lang_Class::_oop_size_offset: where a mirror (java.lang.Class instance) keeps its size
  /// in words; nullopt when the table does not say.
  std::optional<uint64_t> mirror_size_offset;
  /// Inflated locks hide the class of a compact-header object: ObjectMonitor's saved header.
  std::optional<uint64_t> monitor_header_offset;
  bool monitor_table = false; // UseObjectMonitorTable: the mark keeps its class bits
  /// Compressed oops: a reference n between heap objects is narrow_oop_base + (n << shift).
  uint64_t narrow_oop_base = 0;
  unsigned narrow_oop_shift = 0;
};

/// Where a class's names are, for the holders pass's names (docs/heap-hotspot.md, "Holders'
/// names"): a class's fields are records of its InstanceKlass, their names ConstantPool symbols.
struct ClassRecords {
  std::optional<uint64_t> super;              // Klass::_super
  std::optional<uint64_t> constants;          // InstanceKlass::_constants (ConstantPool*)
  std::optional<uint64_t> fields;             // up to JDK 20: InstanceKlass::_fields (Array<u2>*)
  std::optional<uint64_t> java_fields_count;  // up to JDK 20: u2, the Java fields of _fields
  std::optional<uint64_t> fieldinfo_stream;   // JDK 21+: InstanceKlass::_fieldinfo_stream
  uint64_t array_data = 4;                    // Array<u2>::_data (and Array<u1>'s)
  std::optional<uint64_t> constant_pool_size; // sizeof(ConstantPool): its slots follow it
  // Up to JDK 20, a field is `field_slots` u2 values (FieldInfo::*_offset constants); its offset
  // is packed in the low and high slots, tagged (FIELDINFO_TAG_SIZE, FIELDINFO_TAG_OFFSET).
  unsigned field_slots = 6, access_slot = 0, name_slot = 1, signature_slot = 2, low_slot = 4,
           high_slot = 5, tag_size = 2, tag_offset = 1;
  // JDK 21+: the bits of a field's flags (FieldInfo::FieldFlags) that add values to its record.
  unsigned ff_initialized = 0, ff_generic = 2, ff_contended = 4;
  /// java_lang_Class::_klass_offset: where a mirror keeps the Klass it mirrors.
  std::optional<uint64_t> mirror_klass_offset;
};

/// One contiguous piece of the Java heap that holds objects from `bottom` to `top`.
struct Space {
  uint64_t bottom = 0, top = 0, end = 0;
  llvm::StringRef kind; // "eden", "survivor", "old", "humongous", "archive", "free", ...
  bool walk = true;     // false for free regions, humongous continuations and to-space
};

/// The part of a thread's TLAB that is not formatted yet: [top, hard end).
struct TlabGap {
  uint64_t start = 0, end = 0;
};

/// One OopStorage: a set of handles (JNI global references, the VM's OopHandles, ...), the only
/// way native memory holds a Java object for longer than a call.
struct HandleStorage {
  std::string name;  // "JNI Global", "VM Global", "JNI Weak", ...
  bool weak = false; // its handles do not keep their objects alive ("Weak" in its name)
  uint64_t address = 0, blocks = 0, handles = 0; // handles: slots in use
};

/// Everything read about the JVM.
struct Jvm {
  Collector gc = Collector::G1;
  ObjectLayout layout;
  ClassRecords records;
  LibjvmSpan libjvm;
  uint64_t reserved_start = 0, reserved_end = 0; // CollectedHeap::_reserved
  uint64_t region_bytes = 0;                     // G1 region size
  std::vector<Space> spaces;                     // by bottom
  std::vector<TlabGap> tlab_gaps;                // by start, disjoint
  std::vector<HandleStorage> storages;           // by address
  /// The strong storages' slots in use, [first, second), by start and disjoint.
  std::vector<std::pair<uint64_t, uint64_t>> strong_handles;
  /// The Java threads' stacks, [first, second) (JavaThread::_stack_base less _stack_size); empty
  /// when vmStructs does not describe them.
  std::vector<std::pair<uint64_t, uint64_t>> java_stacks;
  size_t threads = 0;
  size_t vm_fields = 0, vm_types = 0, vm_constants = 0;
};

/// Reads the JVM of the process in `memory` (whose libjvm is at `libjvm`). Damage to one region,
/// space or thread is a warning in `diags`; fails only when there is no heap to walk (no vmStructs,
/// an unsupported collector, no readable heap).
llvm::Expected<Jvm> readJvm(const AddressSpace &memory, const LibjvmSpan &libjvm,
                            Diagnostics &diags);

} // namespace dumpsift::hotspot
