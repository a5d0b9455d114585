// The one list of heap walkers. Adding an allocator: one file plus one line here.
#include "dumpsift/heap/walker.h"
#include "glibc/glibc_walker.h"
#include "go/go_walker.h"
#include "hotspot/hotspot_walker.h"
#include "jemalloc/jemalloc_walker.h"
#include "managed/walkers.h"
#include "mimalloc/mimalloc_walker.h"
#include "musl/musl_walker.h"
#include "ntheap/ntheap_walker.h"
#include "tcmalloc/tcmalloc_walker.h"

namespace dumpsift {

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
    list.push_back(makeNtHeapWalker());
    return list;
  }();
  return walkers;
}

const HeapWalker *findHeapWalker(llvm::StringRef name) {
  for (const std::unique_ptr<HeapWalker> &walker : heapWalkers())
    if (walker->name() == name)
      return walker.get();
  return nullptr;
}

} // namespace dumpsift
