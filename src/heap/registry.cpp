// The one list of heap walkers. Adding an allocator: one file plus one line here.
#include "dumpsift/heap/walker.h"
#include "glibc/glibc_walker.h"
#include "managed/walkers.h"

namespace dumpsift {

const std::vector<std::unique_ptr<HeapWalker>> &heapWalkers() {
  static const std::vector<std::unique_ptr<HeapWalker>> walkers = [] {
    std::vector<std::unique_ptr<HeapWalker>> list;
    list.push_back(makeGlibcWalker());
    list.push_back(makeCoreClrWalker());
    list.push_back(makeMonoWalker());
    return list;
  }();
  return walkers;
}

} // namespace dumpsift
