// Words for an analysis that the text summary and the HTML report both print: the dump in one
// line, the heaps in one line, a size group's size label, its kinds with their qualifiers and what
// holds its buffers.
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/snapshot.h"

#include <string>

namespace dumpsift::detail {

/// "build/story.core: elf-core linux/x86_64, pid 4242 (story), 12.1 MiB captured".
std::string dumpLine(const Snapshot &snapshot);

/// "glibc (1,204 used 9.1 MiB, 12 free 1.0 MiB); unclaimed heap/anonymous memory 2.0 MiB
/// (scanned)", or "no allocator recognised; ..." when no walker walked.
std::string heapsLine(const Analysis &analysis);

/// The heap whose walker made the group's buffers, when that walker's sizes are size classes
/// and no buffer of the group is sized in whole pages instead; nullptr otherwise.
const HeapWalkResult *sizeClassHeap(const Analysis &analysis, const SizeGroup &g);

/// "135,152", "131,096 byte[] len 131,072", "jemalloc size class 163,840".
std::string sizeLabel(const Analysis &analysis, const SizeGroup &g);

/// "jpeg x12 (12 truncated), aws-chunked x12 (payload jpeg 10, none 2; 2 with final chunk)": the
/// kinds of a group, in words.
std::string describeKinds(const Analysis &analysis, const SizeGroup &group);

/// "17 of 17 held at +0x10 of `ChunkedUploader` allocations, anchored from global `g_uploader`
/// (app)", "nothing holds them": a group's holders (summarizeHolders) in one sentence.
std::string holdersSentence(const GroupHolders &summary);

/// "anchored: held by +0x10 of a `ChunkedUploader` allocation at 0x55d0c0a012a0 (2 references),
/// anchored from global `g_uploader` (app) in 2 steps", "unreferenced: nothing points at it": one
/// buffer's verdict, first holder and root in one sentence.
std::string bufferHoldersSentence(const BufferHolders &holders);

} // namespace dumpsift::detail
