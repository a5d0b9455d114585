// The HotSpot (JVM) heap walker. Private to the heap layer: the registry (src/heap/registry.cpp) is
// the only user; everything else reaches it through heapWalkers().
#pragma once

#include "dumpsift/heap/walker.h"

#include <memory>

namespace dumpsift {

/// "hotspot": every primitive array (byte[], int[], char[], long[], ...) in the Java heap of a
/// HotSpot JVM (JDK 11 to 25; G1, Parallel, Serial), found through the JVM's vmStructs tables in
/// the dump, without symbols or the serviceability agent.
std::unique_ptr<HeapWalker> makeHotSpotWalker();

} // namespace dumpsift
