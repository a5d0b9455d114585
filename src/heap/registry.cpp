// The one list of heap walkers. Adding an allocator: one file plus one line here.
#include "dumpsift/heap/walker.h"
#include "glibc/glibc_walker.h"
#include "jemalloc/jemalloc_walker.h"
#include "hotspot/hotspot_walker.h"
#include "go/go_walker.h"
#include "managed/walkers.h"
#include "mimalloc/mimalloc_walker.h"
#include "musl/musl_walker.h"
#include "tcmalloc/tcmalloc_walker.h"

namespace dumpsift {

llvm::StringRef stateName(AllocState state) {
  switch (state) {
  case AllocState::Used:
    return "used";
  case AllocState::Free:
    return "free";
  case AllocState::Unknown:
    return "unknown";
  }
  return "unknown";
}

void HeapStats::add(const Allocation &a) {
  switch (a.state) {
  case AllocState::Used:
    ++used_count;
    used_bytes += a.size;
    break;
  case AllocState::Free:
    ++free_count;
    free_bytes += a.size;
    break;
  case AllocState::Unknown:
    ++unknown_count;
    unknown_bytes += a.size;
    break;
  }
}

const std::vector<std::unique_ptr<HeapWalker>> &heapWalkers() {
  static const std::vector<std::unique_ptr<HeapWalker>> walkers = [] {
    std::vector<std::unique_ptr<HeapWalker>> list;
    list.push_back(makeGlibcWalker());
    list.push_back(makeJemallocWalker());
    list.push_back(makeMimallocWalker());
    list.push_back(makeCoreClrWalker());
    list.push_back(makeNetfxWalker());
    list.push_back(makeMonoWalker());
    list.push_back(makeMuslWalker());
    list.push_back(makeTcmallocWalker());
    list.push_back(makeHotSpotWalker());
    list.push_back(makeGoWalker());
    return list;
  }();
  return walkers;
}

} // namespace dumpsift
