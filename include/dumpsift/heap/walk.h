// Running the registered heap walkers over one process: each walker whose platforms include the
// process and whose detect finds its heaps walks them, and every allocation it reports reaches
// one visitor (the analysis, the heap listing, extract --address).
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/diagnostics.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dumpsift {

/// Reports progress: `phase` names the step; done/total in bytes (total 0: unknown).
using ProgressFn = llvm::function_ref<void(llvm::StringRef phase, uint64_t done, uint64_t total)>;

/// Captured bytes in heap and anonymous regions: what heap walkers and the region scan cover (the
/// total that progress counts a walk against).
uint64_t walkableBytes(const AddressSpace &memory);

/// Receives each allocation a walker reports, with the lane of the thread that walked it (see
/// AllocationSink: calls with the same lane never overlap, so each lane can gather into its own
/// slot without locks; the calls of one heap area come in one lane, in address order, and nothing
/// else about their order across lanes is fixed) and the index of that walker's result in the
/// list walkHeaps returns. Lanes are below resolveThreads(threads) of walkHeaps.
using HeapVisitor =
    llvm::function_ref<void(unsigned lane, uint16_t heap, const Allocation &allocation)>;

/// Runs, in registry order, every registered walker (only those named in `only`, when it is not
/// empty) whose platforms (WalkerTraits::platforms) include the process and whose detect says
/// yes, and returns their results in that order, each with its `walker` name; each walks on
/// `threads` threads (0: one per core; see WalkOptions). A walker is not asked about a process of
/// another operating system. On a process of its operating system whose words it does not read
/// (architecture, pointer size, byte order) it is not run either, and when the process maps one
/// of the modules it recognises (WalkerTraits::modules) a warning in `diags` says why. A walker
/// that fails (having reported nothing: see HeapWalker::walk) is a warning in `diags` and has no
/// result. The results and the warnings do not depend on `threads`. Progress, from the calling
/// thread only: "walking NAME heaps", the bytes of the chunks walked against walkableBytes(memory).
std::vector<HeapWalkResult> walkHeaps(
    const AddressSpace &memory, const std::vector<std::string> &only, HeapVisitor visit,
    Diagnostics &diags, ProgressFn progress = [](llvm::StringRef, uint64_t, uint64_t) {},
    unsigned threads = 1);

} // namespace dumpsift
