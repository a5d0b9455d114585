// CoreCLR's GC handle table, found by the shape of its segments: the only place native memory
// keeps a managed object alive (GCHandle, the runtime's statics arrays, its own handles). Private
// to src/heap/managed.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace dumpsift {

/// What the handle table holds.
struct ClrHandles {
  uint64_t segments = 0;     // handle table segments found
  unsigned handle_types = 0; // the runtime's HANDLE_MAX_INTERNAL_TYPES the segments were read with
  uint64_t strong = 0;       // slots in use holding an object, in blocks of a strong handle type
  uint64_t weak = 0;         // the same in blocks of a weak type (short, long, dependent, ...)
  /// The strong slots holding an object, as runs of adjacent slots (by start, not overlapping).
  std::vector<HeapArea> strong_slots;
};

/// Finds the handle table segments of a 64-bit CoreCLR or .NET Framework process: each is 64 KiB
/// aligned in captured writable memory outside `gc_areas` (sorted by start), its header of
/// handletablepriv.h's layout (block types and allocation chains in range, a next segment 64 KiB
/// aligned or null, a readable owning table) read for 12 and for 13 handle types, and at least
/// three in four of the objects its slots in use hold lie in `gc_areas`. Reads one header per
/// 64 KiB of writable memory. An empty result (no segment) when none has that shape.
ClrHandles findClrHandles(const AddressSpace &memory, llvm::ArrayRef<HeapArea> gc_areas);

} // namespace dumpsift
