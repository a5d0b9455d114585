// The objects of a CoreCLR GC heap for the holders pass: found from marks the walk leaves (an
// object-start index), named from the MethodTable and the module's ECMA-335 metadata. Private to
// src/heap/managed.
#pragma once

#include "../object_marks.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dumpsift {

/// ContainsPointers (0x01000000) in a CLR 4+ MethodTable's flags, the same in every CLR 4+ version:
/// an object of the type holds references (docs/heap-managed.md).
constexpr uint32_t kClr4ContainsPointers = 0x01000000u;

/// The finder of a 64-bit CLR 4+ heap's objects, given the marks of the objects its walk found.
/// It names them where the MethodTable layout is the one checked (.NET Core 2.0:
/// docs/heap-managed.md, "Holders' names"): `names` false leaves every name "" (another layout;
/// the objects are still found).
/// How the walk knows the free object (free space between objects): by its MethodTable's address
/// where the runtime's descriptor gives it, else by its flags, base size and null parent.
struct ClrFreeObject {
  uint64_t method_table = 0; // 0: unknown
  uint32_t flags = 0, base_size = 0;
};

/// A module the walk met (the loader module of a MethodTable of its objects) and one MethodTable
/// of it: the finder finds the module's TypeDef map from it, to name the module's statics.
struct ClrModule {
  uint64_t module = 0, method_table = 0;
};

/// The namespace-qualified name of the class (neither an array nor a generic instantiation) whose
/// 64-bit CLR 4+ MethodTable lies at `method_table` ("System.Byte"), read as the finder reads
/// names (the .NET Core 2.0 layout): its TypeDef row in its module's ECMA-335 metadata. "" when
/// any part is not captured or the type is an array.
std::string clrClassName(const AddressSpace &memory, uint64_t method_table);

std::shared_ptr<ObjectFinder> makeClrObjectFinder(const AddressSpace &memory, ObjectMarks marks,
                                                  bool names, ClrFreeObject free,
                                                  std::vector<ClrModule> modules);

} // namespace dumpsift
