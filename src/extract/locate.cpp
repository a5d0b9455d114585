// Finding the buffer that holds one address, for `dumpsift extract --address`.
#include "dumpsift/extract/extract.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"

#include <algorithm>

namespace dumpsift {

namespace {

/// True when `address` lies in `a`, its chunk header included.
bool holds(const Allocation &a, uint64_t address) {
  const uint64_t begin = std::min(a.address, a.chunk_address ? a.chunk_address : a.address);
  return address >= begin && address < a.address + a.size;
}

/// Fills in what analyze() computes for a kept buffer: captured bytes, hash, content.
Buffer finish(const AddressSpace &memory, Buffer buffer) {
  llvm::ArrayRef<uint8_t> payload = capturedPayload(memory, buffer);
  buffer.captured = payload.size();
  buffer.hash = payloadFingerprint(payload, /*full=*/false, buffer.hash_sampled);
  buffer.content = sniff(payload);
  return buffer;
}

} // namespace

llvm::Expected<Buffer> locateBuffer(const AddressSpace &memory, uint64_t address,
                                    Diagnostics &diags) {
  std::optional<Buffer> best;
  walkHeaps(
      memory, {},
      [&](unsigned /*lane: one thread*/, uint16_t heap, const Allocation &a) {
        if (holds(a, address) && (!best || a.size < best->allocation.size)) {
          best.emplace();
          best->allocation = a;
          best->source = heap;
        }
      },
      diags);
  if (best)
    return finish(memory, std::move(*best));

  // Memory no walker claims: the buffers the region scan finds, as `analyze` reports them.
  AnalyzeOptions options;
  Analysis analysis = analyze(memory, options);
  for (Buffer &b : analysis.buffers)
    if (b.source == kRegionScan && holds(b.allocation, address))
      return std::move(b);

  const char *why = "captured memory that no heap walker or region scan claims";
  switch (memory.classify(address)) {
  case Fault::Unmapped:
    why = "not mapped in the dumped process";
    break;
  case Fault::NotCaptured:
    why = "memory the dump did not capture";
    break;
  case Fault::None:
    break;
  }
  return createError("no known allocation holds " + hexAddress(address) + ": it is " + why);
}

} // namespace dumpsift
