// The managed-runtime heap walkers (CoreCLR, Mono SGen). Private to the heap layer: the registry
// (src/heap/registry.cpp) is the only user; everything else reaches them through heapWalkers().
#pragma once

#include "dumpsift/heap/walker.h"

#include <memory>

namespace dumpsift {

/// "coreclr": arrays on the GC heap of .NET Core / .NET 5+ (64-bit), found without the DAC.
std::unique_ptr<HeapWalker> makeCoreClrWalker();
/// "mono": arrays in the large object space of Mono's SGen collector (64-bit).
std::unique_ptr<HeapWalker> makeMonoWalker();

} // namespace dumpsift
