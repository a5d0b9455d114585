// The objects of a CoreCLR GC heap for the holders pass: found from marks the walk leaves (an
// object-start index), named from the MethodTable and the module's ECMA-335 metadata. Private to
// src/heap/managed.
#pragma once

#include "../object_marks.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"

#include <cstdint>
#include <memory>

namespace dumpsift {

/// The finder of a 64-bit CLR 4+ heap's objects, given the marks of the objects its walk found.
/// It names them where the MethodTable layout is the one checked (.NET Core 2.0:
/// docs/heap-managed.md, "Holders' names"): `names` false leaves every name "" (another layout;
/// the objects are still found).
std::shared_ptr<ObjectFinder> makeClrObjectFinder(const AddressSpace &memory, ObjectMarks marks,
                                                  bool names);

} // namespace dumpsift
