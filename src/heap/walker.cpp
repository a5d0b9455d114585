// The parts of the HeapWalker interface (walker.h) that are not the walkers' own.
#include "dumpsift/heap/walker.h"

#include "llvm/ADT/STLExtras.h"

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

bool Platforms::readsOs(Os process_os) const {
  return os.empty() || process_os == Os::Unknown || llvm::is_contained(os, process_os);
}

bool Platforms::readsWords(const SystemInfo &system) const {
  return (arch.empty() || system.arch.empty() || llvm::is_contained(arch, system.arch)) &&
         (pointer_sizes.empty() || llvm::is_contained(pointer_sizes, system.pointer_size)) &&
         (byte_orders.empty() || llvm::is_contained(byte_orders, system.byteOrder()));
}

std::string Platforms::wordsText() const {
  std::string text;
  auto add = [&](const std::string &part) { text += (text.empty() ? "" : " ") + part; };
  for (size_t i = 0; i < pointer_sizes.size(); ++i)
    add((i == 0 ? "" : "or ") + std::to_string(pointer_sizes[i] * 8) + "-bit");
  for (size_t i = 0; i < byte_orders.size(); ++i)
    add(std::string(i == 0 ? "" : "or ") +
        (byte_orders[i] == llvm::support::big ? "big-endian" : "little-endian"));
  for (size_t i = 0; i < arch.size(); ++i)
    add((i == 0 ? "" : "or ") + arch[i]);
  return text;
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
