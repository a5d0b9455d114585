// The region scan: content found by signature in memory that no heap walker claims.
#pragma once

#include "dumpsift/analysis/analysis.h"

#include <functional>

namespace dumpsift {

/// Captured heap-class and anonymous memory not covered by any walker's areas, by address.
std::vector<UnclaimedRange> unclaimedMemory(const AddressSpace &memory,
                                            const std::vector<HeapWalkResult> &heaps);

/// Scans `ranges` for content with a strong signature (JPEG, PNG, GIF, WebP, gzip, zstd, ZIP,
/// PDF, aws-chunked). Each hit becomes a Buffer whose extent is the format's own length, or, when
/// the format does not say, the run of non-zero bytes up to the next hit that starts more than
/// 64 KiB in (marked `estimated`). Hits do not overlap.
/// Reports progress in bytes scanned; releases each range's pages once scanned.
void scanUnclaimed(const AddressSpace &memory, const std::vector<UnclaimedRange> &ranges,
                   const AnalyzeOptions &options, ProgressFn progress,
                   const std::function<void(Buffer)> &emit);

} // namespace dumpsift
