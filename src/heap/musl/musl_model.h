// What the musl walker learns about a process before it walks slots: the allocator context and
// every live group its meta areas describe. Internal to src/heap/musl.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/diagnostics.h"
#include "musl_layout.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift::musl {

/// musl's malloc_context as read from the dump.
struct Context {
  uint64_t address = 0; // &__malloc_context
  uint64_t secret = 0;
  uint64_t meta_area_head = 0;
  uint64_t meta_area_tail = 0;
  std::string where;       // the file whose data holds it, or "anonymous memory"
  unsigned candidates = 0; // how many places passed the signature (1 unless something is odd)
};

/// Finds ctx by its signature in the writable data of the executable and libraries (and the
/// anonymous memory right after each, their .bss); in every writable region when the dump names
/// no file. A candidate has init_done == 1, a non-zero secret, a page-aligned tail, and a head
/// meta area that is captured, holds 101 metas and carries that secret. nullopt when none does
/// (not a musl process, or malloc was never called). Reads the 64-bit little-endian layout (the
/// walker's platforms). Never fails.
std::optional<Context> findContext(const AddressSpace &memory);

/// One group as its struct meta describes it.
struct Group {
  uint64_t mem = 0;    // the group header; slots start 16 bytes later
  uint64_t meta = 0;   // its struct meta
  uint64_t maplen = 0; // pages of its own mapping (0: nested in a slot, or donated)
  uint32_t avail_mask = 0, freed_mask = 0; // bits above last_idx cleared
  uint8_t last_idx = 0;
  uint8_t sizeclass = 0; // 0-47, or 63
  bool freeable = false;

  unsigned slots() const { return unsigned(last_idx) + 1; }
  /// get_stride: a single slot fills its whole mapping; else the size class's stride.
  uint64_t stride() const {
    return last_idx == 0 && maplen ? maplen * kPageUnit - kUnit
                                   : kUnit * kSizeClasses[sizeclass < kClasses ? sizeclass : 0];
  }
  /// Where the last slot ends.
  uint64_t slotsEnd() const { return mem + kGroupHeader + stride() * slots(); }
  /// The memory the group claims: its mapping, or its header and slots.
  uint64_t claimEnd() const { return maplen ? mem + maplen * kPageUnit : slotsEnd(); }
  bool ownMapping() const { return maplen != 0; }
};

/// Every group of the meta-area chain, sorted by `mem`.
struct Plan {
  std::vector<Group> groups;
  std::vector<HeapArea> meta_areas; // one per 4 KiB area page, in chain order
  uint64_t metas_rejected = 0;      // metas that describe no valid group
};

/// Walks the meta-area chain from ctx's head (each area captured, carrying the secret, 101
/// slots; loops and absurd lengths are cut with a warning) and keeps each meta whose group is
/// consistent: a 16-aligned `mem` whose header points back at the meta, a known size class, a
/// mapping that holds the slots. What is wrong with the rest becomes one warning per area.
Plan collectGroups(const AddressSpace &memory, const Context &ctx, Diagnostics &diags);

} // namespace dumpsift::musl
