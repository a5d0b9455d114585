// The gperftools tcmalloc heap walker (gperftools 2.10, 64-bit little-endian). See
// docs/heap-tcmalloc.md for how it finds tcmalloc's structures and what it cannot know.
#pragma once

#include "dumpsift/heap/walker.h"

#include <memory>

namespace dumpsift {

/// A new tcmalloc walker for the registry.
std::unique_ptr<HeapWalker> makeTcmallocWalker();

} // namespace dumpsift
