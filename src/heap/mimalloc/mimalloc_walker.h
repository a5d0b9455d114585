// The mimalloc heap walker (mimalloc 2.0.9, 64-bit little-endian, release build). See
// docs/heap-mimalloc.md for how it finds segments, pages and free blocks, and what it cannot know.
#pragma once

#include "dumpsift/heap/walker.h"

#include <memory>

namespace dumpsift {

/// A new mimalloc walker for the registry.
std::unique_ptr<HeapWalker> makeMimallocWalker();

} // namespace dumpsift
