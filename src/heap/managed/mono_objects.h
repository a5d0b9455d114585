// The objects of a Mono SGen heap for the holders pass: those of the major heap's blocks the walk
// found, named from their vtable's MonoClass (name, namespace, fields), with the names read from
// the assembly file the image maps when the dump did not capture it; and the classes' static
// areas, so that a static is named as the static it is. Private to src/heap/managed.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "mono_layout.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace dumpsift {

/// A block of SGen's major heap: kMajorBlockSize bytes from `start`, objects of `object_size`.
struct MonoMajorBlock {
  uint64_t start = 0;
  uint32_t object_size = 0;
};

/// The finder of a Mono heap's objects: `blocks` by start (not overlapping), `objects` the live
/// objects the walk counted in them. The statics it names are those of the classes in the class
/// caches of the images its objects' classes come from. The memory must outlive it.
std::shared_ptr<ObjectFinder> makeMonoObjectFinder(const AddressSpace &memory,
                                                   const managed::MonoLayout &layout,
                                                   std::vector<MonoMajorBlock> blocks,
                                                   uint64_t objects);

} // namespace dumpsift
