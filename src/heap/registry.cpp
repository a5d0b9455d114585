// The one list of heap walkers. Adding an allocator: one file plus one line here.
#include "dumpsift/heap/walker.h"
#include "glibc/glibc_walker.h"
#include "managed/walkers.h"

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
    list.push_back(makeCoreClrWalker());
    list.push_back(makeNetfxWalker());
    list.push_back(makeMonoWalker());
    return list;
  }();
  return walkers;
}

} // namespace dumpsift
