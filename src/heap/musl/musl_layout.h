// musl mallocng facts the walker relies on (64-bit little-endian: x86_64, aarch64). Internal to
// src/heap/musl.
//
// Every constant below was read in musl's src/malloc/mallocng (meta.h, malloc.c, free.c,
// aligned_alloc.c, donate.c) at the tag v1.2.3, the version Debian 12 ships; those files define
// the same structures, size classes and slot headers at every tag from v1.2.1 to v1.2.5.
// docs/heap-musl.md lists where each one comes from.
#pragma once

#include <cstdint>

namespace dumpsift::musl {

inline constexpr uint64_t kUnit = 16;       // UNIT: slots and groups are 16-aligned
inline constexpr uint64_t kInBand = 4;      // IB: the in-band header before each user pointer
inline constexpr uint64_t kPageUnit = 4096; // maplen counts 4 KiB pages, whatever the page size

// struct malloc_context (`ctx`, the hidden symbol __malloc_context). glue.h always defines
// PAGESIZE, so the struct never has its `pagesize` member.
inline constexpr uint64_t kCtxSecret = 0x00;       // uint64_t secret
inline constexpr uint64_t kCtxInitDone = 0x08;     // int init_done
inline constexpr uint64_t kCtxMetaAreaHead = 0x38; // struct meta_area *meta_area_head
inline constexpr uint64_t kCtxMetaAreaTail = 0x40; // struct meta_area *meta_area_tail
inline constexpr uint64_t kCtxSize = 0x3a0;        // sizeof (struct malloc_context)

// struct meta_area: one 4 KiB page, {u64 check (== ctx.secret), next, int nslots, meta slots[]}.
inline constexpr uint64_t kAreaSize = 4096;
inline constexpr uint64_t kAreaCheck = 0x00;
inline constexpr uint64_t kAreaNext = 0x08;
inline constexpr uint64_t kAreaNslots = 0x10;
inline constexpr uint64_t kAreaSlots = 0x18;
inline constexpr uint64_t kMetaSize = 40; // sizeof (struct meta)
inline constexpr uint32_t kMetasPerArea = (kAreaSize - kAreaSlots) / kMetaSize; // 101

// struct meta: {prev, next, group *mem, int avail_mask, int freed_mask, uintptr_t bits}, where
// bits = last_idx:5 | freeable:1 | sizeclass:6 | maplen:52 (low bits first).
inline constexpr uint64_t kMetaMem = 0x10;
inline constexpr uint64_t kMetaAvailMask = 0x18;
inline constexpr uint64_t kMetaFreedMask = 0x1c;
inline constexpr uint64_t kMetaBits = 0x20;

// struct group: {struct meta *meta; unsigned char active_idx:5; pad}, then the slots.
inline constexpr uint64_t kGroupHeader = kUnit;

/// Size classes 0-47 (in units of 16 bytes); class 63 is an allocation in its own mapping
/// (requests of MMAP_THRESHOLD = 131052 bytes and more). malloc.c `size_classes`.
inline constexpr unsigned kClasses = 48;
inline constexpr unsigned kMmapClass = 63;
inline constexpr uint16_t kSizeClasses[kClasses] = {
    1,   2,   3,   4,    5,    6,    7,    8,    9,    10,   12,   15,   18,   20,   25,   31,
    36,  42,  50,  63,   72,   84,   102,  127,  146,  170,  204,  255,  292,  340,  409,  511,
    584, 682, 818, 1023, 1169, 1364, 1637, 2047, 2340, 2730, 3276, 4095, 4680, 5460, 6552, 8191};

// The slot header: the 4 bytes before a user pointer p. p[-4] is 0, or 1 when a 32-bit group
// offset sits at p-8; p[-3] holds the slot index (bits 0-4) and a code (bits 5-7); the u16 at p-2
// is the offset from the group's storage to p in units (0 with the 32-bit offset).
inline constexpr uint8_t kIndexMask = 31;
inline constexpr unsigned kCodeShift = 5;
inline constexpr uint8_t kCodeReservedInTail = 5; // the reserved byte count is the u32 at end-4
inline constexpr uint8_t kCodeNestedGroup = 6;    // the slot holds a smaller class's group
inline constexpr uint8_t kCodeOffset = 7; // slot start only: the u16 is the distance to p in units
inline constexpr uint8_t kFreedSlot = 0xff; // p[-3] after free()

} // namespace dumpsift::musl
