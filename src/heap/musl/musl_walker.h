// The musl mallocng heap walker (musl 1.2.1 ... 1.2.5, 64-bit little-endian). See
// docs/heap-musl.md for how it finds the allocator without symbols and what it cannot know.
#pragma once

#include "dumpsift/heap/walker.h"

#include <memory>

namespace dumpsift {

/// A new musl walker for the registry.
std::unique_ptr<HeapWalker> makeMuslWalker();

} // namespace dumpsift
