// The region scan: content found by signature in memory that no heap walker claims.
#pragma once

#include "dumpsift/analysis/analysis.h"

#include <functional>

namespace dumpsift {

/// Scans `ranges` for content of the kinds whose signature is strong enough to be believed at any
/// offset (the sniffers with Sniffer::scanLeadBytes: JPEG, PNG, GIF, WebP, gzip, zstd, ZIP, PDF,
/// aws-chunked). Each hit becomes a Buffer whose extent is the format's own length, or, when the
/// format does not say, the run of non-zero bytes up to the next hit (marked `estimated`); content
/// inside what the format's structure accounts for (SniffResult::structure_length) is part of the
/// hit, content after it is a hit of its own. Hits do not overlap; at one offset the sniffers are
/// tried in the registry's priority order. Ranges shorter than options.min_size are skipped, and so
/// are hits. Reports progress in bytes scanned; releases each range's pages once scanned.
void scanUnclaimed(const AddressSpace &memory, const std::vector<UnclaimedRange> &ranges,
                   const AnalyzeOptions &options, ProgressFn progress,
                   const std::function<void(Buffer)> &emit);

} // namespace dumpsift
