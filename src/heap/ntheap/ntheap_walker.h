// The Windows NT heap walker ("ntheap"): the heaps a process's PEBs list (32-bit and 64-bit, so a
// WOW64 process's both) and those found by their segment signature, walked entry by entry from
// their own records, Windows 7 to 11. See docs/heap-windows.md for the layouts and their sources.
#pragma once

#include "dumpsift/heap/walker.h"

#include <memory>

namespace dumpsift {

/// A new NT heap walker for the registry.
std::unique_ptr<HeapWalker> makeNtHeapWalker();

} // namespace dumpsift
