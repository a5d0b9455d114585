#include "region_scan.h"

#include "llvm/Support/Endian.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

namespace dumpsift {

namespace {

/// For each byte value, the sniffers whose content can start with it (Sniffer::scanLeadBytes), in
/// the registry's priority order: the scan tries a sniffer only where its content can start.
struct LeadByteTable {
  std::array<std::vector<const Sniffer *>, 256> by_lead;
  LeadByteTable() {
    for (const auto &sniffer : sniffers())
      for (char lead : sniffer->scanLeadBytes())
        by_lead[static_cast<uint8_t>(lead)].push_back(sniffer.get());
  }
};

// End of the run of non-zero bytes starting at `from` (an estimate of unknown extents).
uint64_t nonZeroRunEnd(llvm::ArrayRef<uint8_t> bytes, uint64_t from) {
  // A run ends at the first 16 zero bytes in a row: short zero runs occur inside most formats.
  uint64_t zeros = 0;
  for (uint64_t i = from; i < bytes.size(); ++i) {
    zeros = bytes[i] == 0 ? zeros + 1 : 0;
    if (zeros == 16)
      return i + 1 - 16;
  }
  return bytes.size();
}

// Scans `bytes` (captured memory at `base`) and emits each hit of at least options.min_size bytes.
void scanBytes(uint64_t base, llvm::ArrayRef<uint8_t> bytes, const AnalyzeOptions &options,
               const std::function<void(Buffer)> &emit) {
  static const LeadByteTable table;
  // The last hit whose extent is an estimate, until the next hit or its estimated end closes it.
  std::optional<Buffer> open;
  uint64_t open_end = 0;
  auto close = [&](uint64_t end) {
    open->allocation.size = open->allocation.chunk_size = base + end - open->allocation.address;
    if (open->allocation.size >= options.min_size)
      emit(std::move(*open));
    open.reset();
  };
  uint64_t i = 0;
  while (i < bytes.size()) {
    if (open && i >= open_end)
      close(open_end);
    if (bytes[i] == 0 && table.by_lead[0].empty()) {
      // No signature starts with a zero byte: skip the run a word at a time (the unclaimed memory
      // of a JVM or a Go process is mostly zero-filled tables and reservations).
      while (i + 8 <= bytes.size() && llvm::support::endian::read64le(bytes.data() + i) == 0)
        i += 8;
      while (i < bytes.size() && bytes[i] == 0)
        ++i;
      continue;
    }
    const std::vector<const Sniffer *> &candidates = table.by_lead[bytes[i]];
    if (candidates.empty()) {
      ++i;
      continue;
    }
    llvm::ArrayRef<uint8_t> rest = bytes.drop_front(i);
    llvm::ArrayRef<uint8_t> head = rest.take_front(Sniffer::kHeadBytes);
    std::optional<SniffResult> hit;
    for (const Sniffer *sniffer : candidates) {
      if (!sniffer->quickCheck(head))
        continue;
      hit = sniffer->validate(rest);
      if (hit)
        break;
    }
    if (!hit) {
      ++i;
      continue;
    }
    if (open)
      close(i);
    uint64_t length = hit->length;
    const bool estimated = hit->length_estimated || length == 0;
    // Where the format vouches for its bytes (they are part of the hit whatever they hold): the
    // scan goes on after them, and an estimated extent ends at the next hit found there.
    const uint64_t structure = std::min<uint64_t>(hit->structure_length, bytes.size() - i);
    if (estimated)
      length = std::max(nonZeroRunEnd(bytes, i) - i, structure);
    length = std::min<uint64_t>(length, bytes.size() - i);
    Buffer b;
    b.allocation.address = base + i;
    b.allocation.chunk_address = base + i;
    b.allocation.size = length;
    b.allocation.chunk_size = length;
    b.allocation.state = AllocState::Unknown;
    b.source = kRegionScan;
    b.estimated = estimated;
    hit->offset = 0;
    b.content = std::move(*hit);
    if (estimated && length > std::max<uint64_t>(structure, 1)) {
      open = std::move(b);
      open_end = i + length;
      i += std::max<uint64_t>(structure, 1);
      continue;
    }
    if (length >= options.min_size)
      emit(std::move(b));
    i += std::max<uint64_t>(length, 1);
  }
  if (open)
    close(open_end);
}

} // namespace

void scanUnclaimed(const AddressSpace &memory, const std::vector<UnclaimedRange> &ranges,
                   const AnalyzeOptions &options, ProgressFn progress,
                   const std::function<void(Buffer)> &emit) {
  const char *phase = "scanning unclaimed memory";
  uint64_t total = 0, done = 0;
  for (const UnclaimedRange &r : ranges)
    total += r.size;
  progress(phase, 0, total);
  for (const UnclaimedRange &r : ranges) {
    done += r.size;
    if (r.size < options.min_size)
      continue;
    const uint8_t *p = memory.tryView(r.start, r.size);
    if (!p)
      continue;
    scanBytes(r.start, llvm::ArrayRef<uint8_t>(p, r.size), options, emit);
    memory.releasePages(r.start, r.size);
    progress(phase, done, total);
  }
  progress(phase, total, total);
}

} // namespace dumpsift
