// Format readers behind openDump. Internal to the dump layer.
#pragma once

#include "dumpsift/dump/snapshot.h"

namespace dumpsift::detail {

/// Fills `snapshot` (whose `file` and `path` are set) from an ELF core. Fails only when the file is
/// not a usable ELF core at all; local damage goes to snapshot.diagnostics.
llvm::Error readElfCore(Snapshot &snapshot);

/// Same for a minidump (MDMP).
llvm::Error readMinidump(Snapshot &snapshot);

/// The most memory ranges, and the most regions, one dump's lists may give (PT_LOADs, MemoryList
/// and Memory64List descriptors, MemoryInfoList entries, LinuxMaps lines): 2^19, twice the mappings
/// of a Linux process whose vm.max_map_count was raised to 262,144 (as Elasticsearch asks; the
/// default is 65,530). Each costs the tool a few hundred bytes, so a hostile list of millions of
/// one-byte ranges stays within ~150 MB; entries past the limit are not read, and a warning says
/// so.
inline constexpr uint64_t kMaxRanges = uint64_t(1) << 19;

/// `count` entries of a list that gives memory ranges or regions, cut to kMaxRanges with a warning
/// on `where` ("N entries; only the first 524288 are read") when it is more.
uint64_t cappedRangeCount(uint64_t count, const std::string &where, Diagnostics &diags);

/// Shared finishing step: sorts regions and memory, checks they do not overlap (dropping and
/// warning about overlaps), computes each region's captured byte count, classes the thread stacks
/// and fills the threads' stack ranges from them (markThreadStacks in finalize.cpp). Replaces bytes
/// that are not UTF-8 in every name read from the dump.
void finalizeSnapshot(Snapshot &snapshot);

} // namespace dumpsift::detail
