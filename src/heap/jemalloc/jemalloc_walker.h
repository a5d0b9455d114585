// The jemalloc 5.3 heap walker (x86-64, preloaded or linked in statically). See
// docs/heap-jemalloc.md for how it finds jemalloc's structures and what it cannot know.
#pragma once

#include "dumpsift/heap/walker.h"

#include <memory>

namespace dumpsift {

/// A new jemalloc walker for the registry.
std::unique_ptr<HeapWalker> makeJemallocWalker();

} // namespace dumpsift
