// The region scan: content found by signature in memory that no heap walker claims.
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/sniff/budget.h"

#include <functional>

namespace dumpsift {

/// Scans `ranges` for content of the kinds whose signature is strong enough to be believed at any
/// offset (the sniffers with Sniffer::scanLeadBytes), then of the kinds believed where they are
/// valid to their end (Sniffer::closedLeadBytes, closedLength: JSON text). Content found inside a
/// frame that carries it (Sniffer::frameAround: an AMQP body frame) is reported as that frame.
/// Each hit becomes a Buffer whose extent is the format's own length, or, when
/// the format does not say, the run of non-zero bytes up to the next hit (marked `estimated`);
/// content inside what the format's structure accounts for (SniffResult::structure_length) is part
/// of the hit, content after it is a hit of its own. Hits do not overlap; at one offset the
/// sniffers are tried in the registry's priority order. Ranges shorter than options.min_size are
/// skipped, and so are hits.
///
/// With `windows_private` (a Windows dump, docs/heap-windows.md: its unclaimed memory is private
/// memory, VirtualAlloc'd blocks and heaps no walker read) the scan stands in for a walker there: a
/// whole captured range where the scan found nothing and whose content runs from its first byte,
/// zeros only after it, is one allocation (a VirtualAlloc'd block) and becomes one Buffer of the
/// range's size (`whole_pages`, its kind left to sniffing); elsewhere, runs of zeros and of
/// high-entropy bytes of at least options.min_size between the hits become Buffers with estimated
/// extents.
///
/// The sniffers draw on `budget` (the run's, in range order); where it ran out, a warning in
/// `diags` names the range. Reports progress in bytes scanned; releases each range's pages once
/// scanned.
void scanUnclaimed(const AddressSpace &memory, const std::vector<UnclaimedRange> &ranges,
                   const AnalyzeOptions &options, bool windows_private, SniffBudget &budget,
                   Diagnostics &diags, ProgressFn progress,
                   const std::function<void(Buffer)> &emit);

/// Scans the captured payload of every free block of kStaleScanMinBytes or more among `buffers`
/// (those a walker reported free) for content with a strong signature, as scanUnclaimed scans
/// unclaimed memory (the hits of at least options.min_size, each with its extent), and records
/// each hit in the block's stale_content at its offset from the payload start. The sniffers draw
/// on `budget`, the blocks taken in address order. A block's own bookkeeping at its start (free
/// list links) holds no signature, so a hit is what the block held before it was freed.
void scanFreeBlocks(const AddressSpace &memory, std::vector<Buffer> &buffers,
                    const AnalyzeOptions &options, SniffBudget &budget);

} // namespace dumpsift
