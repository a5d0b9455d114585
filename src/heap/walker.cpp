// The parts of the HeapWalker interface (walker.h) that are not the walkers' own.
#include "dumpsift/heap/walker.h"

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

void HeapStats::add(const HeapStats &other) {
  used_count += other.used_count;
  used_bytes += other.used_bytes;
  free_count += other.free_count;
  free_bytes += other.free_bytes;
  unknown_count += other.unknown_count;
  unknown_bytes += other.unknown_bytes;
}

} // namespace dumpsift
