// The managed-runtime heap walkers (CoreCLR, Mono SGen). Private to the heap layer: the registry
// (src/heap/registry.cpp) is the only user; everything else reaches them through heapWalkers().
#pragma once

#include "dumpsift/heap/walker.h"

#include <memory>

namespace dumpsift {

/// "coreclr": arrays on the GC heap of .NET Core / .NET 5+ (64-bit and 32-bit), found without the
/// DAC.
std::unique_ptr<HeapWalker> makeCoreClrWalker();
/// "netfx": the same on the .NET Framework's GC heap: clr.dll (4.x) and mscorwks.dll (2.0-3.5).
std::unique_ptr<HeapWalker> makeNetfxWalker();
/// "mono": arrays in the large object space of Mono's SGen collector (64-bit).
std::unique_ptr<HeapWalker> makeMonoWalker();

} // namespace dumpsift
