// The glibc ptmalloc heap walker (glibc 2.31 ... 2.40, 64-bit little-endian). See
// docs/heap-glibc.md for how it finds each kind of heap and what it cannot know.
#pragma once

#include "dumpsift/heap/walker.h"

#include <memory>

namespace dumpsift {

/// A new glibc walker for the registry.
std::unique_ptr<HeapWalker> makeGlibcWalker();

} // namespace dumpsift
