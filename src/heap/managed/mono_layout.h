// The struct layouts of Mono's runtime and SGen collector that the mono walker and its object
// finder read (64-bit). One row per build family: data, not code. Private to src/heap/managed.
//
// Checked against the debug info of Debian's mono-runtime 6.8.0.105 (gdb `ptype /o`,
// ../shared/docs/notes/holders.md section 4) and on cores of it: the MonoImage, class cache,
// runtime-info, domain and major-block offsets on a core of fixtures/dotnet/Holders.exe (the probe
// found each class of the assembly in its image's class cache, both assemblies in the domain's
// list, each static at its MonoClassField's offset in the static area, and the 48-byte objects of
// a block from byte 0x130).
#pragma once

#include <cstdint>

namespace dumpsift::managed {

struct MonoLayout {
  const char *name;
  // MonoVTable: its class, its rank, the byte whose bit 2 says it has static fields, and where
  // its method slots start (the static area's pointer follows them).
  uint64_t vtable_klass, vtable_rank, vtable_flags, vtable_slots;
  // MonoClass.
  uint64_t class_element_class, class_rank, class_kind, class_instance_size, class_parent,
      class_nested_in, class_image, class_name, class_name_space, class_vtable_size,
      class_element_size, class_fields, class_byval_data, class_byval_type, class_runtime_info;
  uint64_t class_min_size; // bytes of MonoClass that must be readable
  // MonoClassDef (a class of kind 1 or 2): its field count and the next class of its image's
  // class cache bucket. MonoClassGenericInst: its MonoGenericClass.
  uint64_t classdef_field_count, classdef_next_class_cache, ginst_generic_class;
  // MonoGenericClass: container class, context.class_inst, cached class. MonoGenericInst: argc
  // (low 22 bits of the u32), argv.
  uint64_t generic_container, generic_class_inst, generic_cached_class, inst_argc, inst_argv;
  // MonoClassField (32 bytes): type, name, offset (object- or static-area-relative).
  uint64_t field_size, field_type, field_name, field_offset;
  // MonoType: data, attrs (u16), type (u8).
  uint64_t type_data, type_attrs, type_type;
  // MonoImage: raw_data (the mapped file), raw_data_len (u32), filename, guid (the MVID as
  // text), heap_guid (its #GUID stream: data, size), class_cache (MonoInternalHashTable: size
  // u32, table of buckets).
  uint64_t image_raw_data, image_raw_data_len, image_filename, image_guid, image_heap_guid,
      image_class_cache_size, image_class_cache_table;
  // MonoVTable: its domain. MonoDomain: domain_assemblies (a GSList: data, next). MonoAssembly:
  // its image.
  uint64_t vtable_domain, domain_assemblies, assembly_image;
};

constexpr MonoLayout kMono68 = {
    "mono-6.8-x64",
    /*vtable*/ 0,     44,   47,  72,
    /*class*/ 0,      26,   27,  28, 40,  48,    56,    64, 72, 84, 136, 144, 176, 186, 200, 208,
    /*classdef*/ 240, 248,  224,
    /*generic*/ 0,    8,    32,  4,  8,
    /*field*/ 32,     0,    8,   24,
    /*type*/ 0,       8,    10,
    /*image*/ 16,     24,   40,  88, 168, 0x4e8, 0x4f0,
    /*domain*/ 16,    0xc8, 0x60};

// MonoClass kinds (class_kind).
constexpr uint8_t kMonoClassDef = 1, kMonoClassGenericDef = 2, kMonoClassGenericInst = 3,
                  kMonoClassArray = 5;

// SGen's mark-and-sweep major heap (sgen-marksweep.c): blocks of 16 KiB, 16 KiB-aligned, each
// beginning with its MSBlockInfo (obj_size u16 @0, obj_size_index u16 @2, state i32 @4, nused
// i16 @8, free_list @16, next_free @24, then the mark words), objects of one size from 0x130.
// A free slot's first word is the free list's next slot (in the block) or 0.
constexpr uint64_t kMajorBlockSize = 16384;
constexpr uint64_t kMajorBlockSkip = 0x130;
constexpr uint64_t kMaxSmallObject = 8000; // SGEN_MAX_SMALL_OBJ_SIZE
constexpr uint64_t kVTableTagBits = 3;     // SGEN_VTABLE_BITS_MASK: forwarded, pinned

// MonoObject: vtable, synchronisation, then the fields. MonoArray: bounds @16, max_length (u32)
// @24, elements @32.
constexpr uint64_t kMonoObjectHeader = 16;
constexpr uint64_t kMonoArrayLength = 24;
constexpr uint32_t kMonoArrayData = 32;

// Mono's lock-free allocator (mono/utils/lock-free-alloc.c), SGen's internal memory (gray
// queues, pin queues, root records): superblocks of 4, 8 or 16 KiB, aligned to their size, whose
// first word is their Descriptor {node, heap, anchor (u32), slot_size (u32) @0x14, block_size
// (u32) @0x18, max_count (u32) @0x1c, sb @0x20: the first slot, a few bytes into the block}.
// Checked on a core of Holders.exe: 12 superblocks, slot sizes 8 to 8184.
constexpr uint64_t kLockFreeSlotSize = 0x14, kLockFreeBlockSize = 0x18, kLockFreeMaxCount = 0x1c,
                   kLockFreeFirstSlot = 0x20;
constexpr uint64_t kLockFreeHeaderMax = 64;     // the first slot lies at most this far in
constexpr uint64_t kLockFreeLargestSlot = 8184; // larger allocations are mapped apart

// SGen's pointer queues (sgen-pointer-queue.h: {void **data; size_t size; size_t next_slot; int
// mem_type}), the pin queue among them, in the runtime's data; mem_type one of SGen's internal
// memory kinds (the pin queue's is 0). Checked on two Holders cores: the pin queue's 1,024
// entries at a page-aligned mapping, listing the pinned objects.
constexpr uint64_t kPointerQueueSize = 28;
constexpr uint32_t kInternalMemKinds = 64;

// SGen's GC handles (sgen-gchandles.c, sgen-array-list.h): per handle type a list of up to 32
// buckets {entries[32], u32 capacity, u32 slot_hint, u32 max_index, ...} in the runtime's data;
// bucket i holds 32 << i slots, a block of the C heap; a slot holds an object's address with its
// low two bits set. Checked on a core of LohArrays.exe (its pinning handles' bucket).
constexpr unsigned kHandleBuckets = 32;
constexpr uint64_t kHandleBucketBytes = 32 * 8;
constexpr uint64_t kHandleListSize = kHandleBuckets * 8 + 12;

constexpr uint16_t kFieldAttributeStatic = 0x10; // MonoType attrs: FIELD_ATTRIBUTE_STATIC

} // namespace dumpsift::managed
