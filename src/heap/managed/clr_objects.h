// The objects of a CoreCLR GC heap for the holders pass: found from marks the walk leaves (an
// object-start index), named from the MethodTable and the module's ECMA-335 metadata. Private to
// src/heap/managed.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace dumpsift {

/// Object starts a walk of a 64-bit CLR 4+ GC heap found, every kObjectsPerMark-th of each run of
/// objects it walked, each with the end of its run: the holders pass steps from the mark at or
/// below a word to the object that holds it.
struct ClrObjectMarks {
  struct Mark {
    uint64_t start = 0; // an object's start (its MethodTable word)
    uint64_t limit = 0; // the end of the run of objects it is in
  };
  static constexpr unsigned kObjectsPerMark = 64;
  std::vector<Mark> marks; // by start
};

/// The finder of a 64-bit CLR 4+ heap's objects, given the walk's marks. It names them where the
/// MethodTable layout is the one checked (.NET Core 2.0: docs/heap-managed.md, "Holders' names"):
/// `names` false leaves every name "" (another layout; the objects are still found).
std::shared_ptr<ObjectFinder> makeClrObjectFinder(const AddressSpace &memory, ClrObjectMarks marks,
                                                  bool names);

} // namespace dumpsift
