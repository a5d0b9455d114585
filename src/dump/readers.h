// Format readers behind openDump. Internal to the dump layer.
#pragma once

#include "dumpsift/dump/snapshot.h"

namespace dumpsift::detail {

/// Fills `snapshot` (whose `file` and `path` are set) from an ELF core. Fails only when the file is
/// not a usable ELF core at all; local damage goes to snapshot.diagnostics.
llvm::Error readElfCore(Snapshot &snapshot);

/// Same for a minidump (MDMP).
llvm::Error readMinidump(Snapshot &snapshot);

/// Shared finishing step: sorts regions and memory, checks they do not overlap (dropping and
/// warning about overlaps), computes each region's captured byte count, classes the thread stacks
/// and fills the threads' stack ranges from them (markThreadStacks in finalize.cpp). Replaces bytes
/// that are not UTF-8 in every name read from the dump.
void finalizeSnapshot(Snapshot &snapshot);

} // namespace dumpsift::detail
