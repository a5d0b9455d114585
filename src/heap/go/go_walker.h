// The Go runtime heap walker (Go 1.19 and later, linux/amd64). Private to the heap layer: the
// registry (src/heap/registry.cpp) is the only user. See docs/heap-go.md.
#pragma once

#include "dumpsift/heap/walker.h"

#include <memory>

namespace dumpsift {

/// "go": every object in the in-use spans of a Go program's heap (runtime.mheap_), found in the
/// dump's writable memory, or through the executable's symbol table when the executable is here.
std::unique_ptr<HeapWalker> makeGoWalker();

} // namespace dumpsift
