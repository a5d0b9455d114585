#include "region_scan.h"

#include <algorithm>
#include <array>
#include <cstring>

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

void scanBytes(uint64_t base, llvm::ArrayRef<uint8_t> bytes, const AnalyzeOptions &options,
               const std::function<void(Buffer)> &emit) {
  static const LeadByteTable table;
  uint64_t i = 0;
  while (i < bytes.size()) {
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
    uint64_t length = hit->length;
    bool estimated = hit->length_estimated || length == 0;
    if (estimated)
      length = nonZeroRunEnd(bytes, i) - i;
    length = std::min<uint64_t>(length, bytes.size() - i);
    if (length >= options.min_size) {
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
      emit(std::move(b));
    }
    i += std::max<uint64_t>(length, 1);
  }
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
