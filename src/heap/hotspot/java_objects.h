// The objects of a HotSpot heap for the holders pass: found from the marks the walk leaves (an
// object-start index), named from their Klass and its field records in the dump. Private to
// src/heap/hotspot.
#pragma once

#include "../object_marks.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "jvm.h"

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>

namespace dumpsift::hotspot {

/// The Java name of the class whose Symbol is `symbol`, as Class.getTypeName() spells it:
/// "java/io/ByteArrayOutputStream" is "java.io.ByteArrayOutputStream", "[B" is "byte[]",
/// "[[Ljava/lang/Object;" is "java.lang.Object[][]".
std::string javaTypeName(llvm::StringRef symbol);

/// The finder of the objects of `jvm`'s heap, given the marks of the objects its walk found. It
/// names an object by its class; a word of an instance by its field, of a java.lang.Class by the
/// static field of the class it mirrors, of an object array by its element ("[3]").
std::shared_ptr<ObjectFinder>
makeJavaObjectFinder(const AddressSpace &memory, std::shared_ptr<const Jvm> jvm, ObjectMarks marks);

} // namespace dumpsift::hotspot
