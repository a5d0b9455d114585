#include "region_scan.h"

#include "dumpsift/support/bytes.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"

#include "llvm/Support/Endian.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

namespace dumpsift {

namespace {

/// The sniffers the scan tries where their content can start, by that byte, in the registry's
/// priority order: those whose signature it believes anywhere (Sniffer::scanLeadBytes), and those
/// whose content it believes where it is valid to its end (Sniffer::closedLeadBytes).
struct LeadByteTable {
  std::array<std::vector<const Sniffer *>, 256> by_lead;
  std::array<std::vector<const Sniffer *>, 256> closed_by_lead;
  LeadByteTable() {
    for (const auto &sniffer : sniffers()) {
      for (char lead : sniffer->scanLeadBytes())
        by_lead[static_cast<uint8_t>(lead)].push_back(sniffer.get());
      for (char lead : sniffer->closedLeadBytes())
        closed_by_lead[static_cast<uint8_t>(lead)].push_back(sniffer.get());
    }
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

// The frame that carries the content of kind `found` the scan found at bytes[at], when a
// framing kind's sniffer sees one around it (Sniffer::frameAround) that starts at or after
// `from` and sniffs as that kind: the frame's offset in `bytes` and its sniff. A stale copy of a
// client's frame (an AMQP body frame around a JPEG) is then reported as the frame it is.
std::optional<std::pair<uint64_t, SniffResult>>
frameCarrying(llvm::ArrayRef<uint8_t> bytes, uint64_t at, uint64_t from, ContentKind found) {
  for (const auto &sniffer : sniffers()) {
    if (sniffer->kind() == found)
      continue;
    const std::optional<ByteSpan> frame = sniffer->frameAround(bytes, at);
    if (!frame || frame->offset < from)
      continue;
    SniffResult content = sniff(bytes.slice(frame->offset, frame->length));
    if (content.kind == sniffer->kind())
      return std::make_pair(frame->offset, std::move(content));
  }
  return std::nullopt;
}

// Scans `bytes` (captured memory at `base`) and emits each hit of at least options.min_size bytes.
void scanBytes(uint64_t base, llvm::ArrayRef<uint8_t> bytes, const AnalyzeOptions &options,
               const std::function<void(Buffer)> &emit) {
  static const LeadByteTable table;
  // The last hit whose extent is an estimate, until the next hit or its estimated end closes it.
  Buffer open;
  bool is_open = false;
  uint64_t open_end = 0;
  auto close = [&](uint64_t end) {
    open.allocation.size = open.allocation.chunk_size = base + end - open.allocation.address;
    if (open.content.stale_bytes) // what lies behind the frame, to the estimate's end
      open.content.setStaleBytes(open.allocation.size - open.content.length);
    if (open.allocation.size >= options.min_size)
      emit(std::move(open));
    is_open = false;
  };
  // The end of the non-zero run holding the last estimated hit: the hits after it in the same run
  // share it (found once, not once per hit, which made a run of many short hits quadratic).
  uint64_t run_from = 1, run_end = 0;
  auto nonZeroEnd = [&](uint64_t from) {
    if (from < run_from || from > run_end) {
      run_from = from;
      run_end = nonZeroRunEnd(bytes, from);
    }
    return std::max(run_end, from);
  };
  uint64_t i = 0;
  uint64_t passed = 0; // the end of the last hit's bytes the scan went past (no hit starts before)
  while (i < bytes.size()) {
    if (is_open && i >= open_end)
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
    const std::vector<const Sniffer *> &closed_candidates = table.closed_by_lead[bytes[i]];
    if (candidates.empty() && closed_candidates.empty()) {
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
    for (const Sniffer *sniffer : closed_candidates) {
      if (hit)
        break;
      if (std::optional<uint64_t> length = sniffer->closedLength(bytes, i)) {
        hit = SniffResult{}; // its details come from sniffing the whole content (analysis)
        hit->kind = sniffer->kind();
        hit->length = hit->structure_length = *length;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    if (auto frame = frameCarrying(bytes, i, passed, hit->kind)) {
      i = frame->first;
      hit = std::move(frame->second);
    }
    if (is_open)
      close(i);
    uint64_t length = hit->length;
    // A frame written over a reused buffer (aws-chunked's final chunk with `stale_bytes`): the
    // buffer goes on behind the frame, so its extent is an estimate, the frame vouched for.
    const bool stale_tail = hit->stale_bytes.has_value();
    const bool estimated = hit->length_estimated || length == 0 || stale_tail;
    // Where the format vouches for its bytes (they are part of the hit whatever they hold): the
    // scan goes on after them, and an estimated extent ends at the next hit found there.
    const uint64_t structure = std::min<uint64_t>(
        stale_tail ? std::max<uint64_t>(hit->structure_length, length) : hit->structure_length,
        bytes.size() - i);
    if (estimated)
      length = std::max(nonZeroEnd(i) - i, structure);
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
      is_open = true;
      open_end = i + length;
      i += std::max<uint64_t>(structure, 1);
      passed = i;
      continue;
    }
    if (length >= options.min_size) {
      if (stale_tail)
        b.content.setStaleBytes(length - b.content.length);
      emit(std::move(b));
    }
    i += std::max<uint64_t>(length, 1);
    passed = i;
  }
  if (is_open)
    close(open_end);
}

// Zero bytes in a row that part two runs of content without a signature: heap blocks are
// padded and headed with them, while random data holds eight zero bytes in a row with
// probability 2^-64 at each offset.
constexpr uint64_t kRunSeparatorZeros = 8;

// Content without a signature is believed only in runs of at least a page, whatever
// options.min_size says: shorter runs of zeros are padding and fields, and shorter runs of
// high-entropy bytes are too short for their entropy to mean anything.
constexpr uint64_t kSmallestUnsignedRun = 4096;

// Bytes between the end of a run's text and the run's end that still let the run be that text:
// its terminator and the padding of its heap block up to the separating zeros (a Wine heap block
// is padded to 16 bytes; the next block's header is the separator's first bytes or none).
constexpr uint64_t kTextTailSlack = 64;

// Emits a Buffer of `length` bytes at `address` whose kind is `content`'s (its extent `estimated`
// or not), when it is at least options.min_size long.
void emitRun(uint64_t address, uint64_t length, SniffResult content, bool estimated,
             bool whole_pages, const AnalyzeOptions &options,
             const std::function<void(Buffer)> &emit) {
  if (length < options.min_size)
    return;
  Buffer b;
  b.allocation.address = b.allocation.chunk_address = address;
  b.allocation.size = b.allocation.chunk_size = length;
  b.allocation.state = AllocState::Unknown;
  b.allocation.whole_pages = whole_pages;
  b.source = kRegionScan;
  b.estimated = estimated;
  content.offset = 0;
  b.content = std::move(content);
  emit(std::move(b));
}

// A whole captured range of private memory (a VirtualAlloc'd block, committed pages) holds one
// allocation's content when that content runs from its first byte, with no run of 16 zero bytes
// inside it, and only zeros follow it to the range's end (the page rounding).
bool holdsOneAllocation(const Snapshot &snapshot, const UnclaimedRange &r,
                        llvm::ArrayRef<uint8_t> bytes) {
  const auto m = std::lower_bound(
      snapshot.memory.begin(), snapshot.memory.end(), r.start,
      [](const MemoryRange &range, uint64_t start) { return range.start < start; });
  if (m == snapshot.memory.end() || m->start != r.start || m->bytes.size() != r.size ||
      r.start % 4096 != 0)
    return false;
  return nonZeroRunEnd(bytes, 0) == contentEnd(bytes);
}

// End of the run of zero bytes that starts at `from`, at most `to`; a word at a time.
uint64_t zeroRunEnd(llvm::ArrayRef<uint8_t> bytes, uint64_t from, uint64_t to) {
  uint64_t i = from;
  while (i + 8 <= to && llvm::support::endian::read64le(bytes.data() + i) == 0)
    i += 8;
  while (i < to && bytes[i] == 0)
    ++i;
  return i;
}

// In [from, to) of `bytes` (captured memory at `base`; `to` short of the range's end), emits the
// content that has no signature: each run of zero bytes and each run of high-entropy bytes
// (random, encrypted) of at least options.min_size and kSmallestUnsignedRun, between runs of
// kRunSeparatorZeros zeros.
// Both extents are estimates: a run takes in the padding, the header or the unwritten tail of
// the blocks beside it. A run of zeros that reaches either end of the range is not reported: it is
// the range's untouched part (the unused depth of a stack, the free tail of a heap), not a buffer
// between two others.
void scanUnsigned(uint64_t base, llvm::ArrayRef<uint8_t> bytes, uint64_t from, uint64_t to,
                  const AnalyzeOptions &options, const std::function<void(Buffer)> &emit) {
  uint64_t i = from;
  while (i < to) {
    const uint64_t start = i;
    if (bytes[i] == 0) {
      i = zeroRunEnd(bytes, i, to);
      if (i - start >= kSmallestUnsignedRun && start > 0 && i < bytes.size())
        emitRun(base + start, i - start, sniff(bytes.slice(start, i - start)), true, false, options,
                emit);
      continue;
    }
    // Content up to the next kRunSeparatorZeros zeros (or `to`): from zero byte to zero byte.
    uint64_t end = to;
    while (i < to) {
      const void *zero = std::memchr(bytes.data() + i, 0, to - i);
      if (!zero)
        break;
      i = static_cast<const uint8_t *>(zero) - bytes.data();
      const uint64_t zeros_end = zeroRunEnd(bytes, i, std::min(to, i + kRunSeparatorZeros));
      if (zeros_end - i == kRunSeparatorZeros) {
        end = i;
        break;
      }
      i = zeros_end;
    }
    i = end;
    if (end - start < std::max(options.min_size, kSmallestUnsignedRun))
      continue;
    SniffResult content = sniff(bytes.slice(start, end - start));
    if (content.kind == ContentKind::Random) {
      emitRun(base + start, end - start, std::move(content), true, false, options, emit);
    } else if (kindFacts(content.kind).family == KindFamily::Text) {
      // Text (UTF-16 or 8-bit) from its first character, past a block header before it, to the
      // run's end; UTF-16 in whole code units (its last unit's high byte may be the first zero).
      // Only text that fills the run: it went on past the sniffer's scan, or it ends within
      // kTextTailSlack of the run's end. A short string at the start of a run of other bytes (a
      // module's name before its symbol table) is not a run of text.
      const uint64_t at = start + content.offset;
      if (!content.length_estimated && at + content.length + kTextTailSlack < end)
        continue;
      uint64_t text_end = end;
      if (content.kind == ContentKind::Utf16 && (text_end - at) % 2 && text_end < to)
        ++text_end;
      if (text_end - at >= std::max(options.min_size, kSmallestUnsignedRun))
        emitRun(base + at, text_end - at, std::move(content), true, false, options, emit);
    }
  }
}

// Bytes of zeros after the content of a range past which they are no page rounding.
constexpr uint64_t kAllocationTailZeros = 4096;

// A whole captured range of private memory holding one allocation behind a header (a heap's large
// block: Wine's arena header, then the data), whose content is short content with a signature
// within the first page and then zeros, a page or more of them, to the range's end: a buffer that
// was allocated large and filled in part (a 1 MiB buffer holding one AMQP frame). The buffer from
// that content to the range's end, its extent an estimate; nullopt when the range is not that.
std::optional<Buffer> contentBehindHeader(const Snapshot &snapshot, const UnclaimedRange &r,
                                          llvm::ArrayRef<uint8_t> bytes,
                                          const AnalyzeOptions &options) {
  const auto m = std::lower_bound(
      snapshot.memory.begin(), snapshot.memory.end(), r.start,
      [](const MemoryRange &range, uint64_t start) { return range.start < start; });
  if (m == snapshot.memory.end() || m->start != r.start || m->bytes.size() != r.size ||
      r.start % 4096 != 0 || r.size < options.min_size)
    return std::nullopt;
  const uint64_t end = contentEnd(bytes);
  if (end == 0 || bytes.size() - end < kAllocationTailZeros)
    return std::nullopt;
  AnalyzeOptions any_size = options;
  any_size.min_size = 1;
  std::vector<Buffer> found;
  scanBytes(r.start, bytes.take_front(end), any_size,
            [&](Buffer b) { found.push_back(std::move(b)); });
  if (found.size() != 1 || found[0].allocation.address - r.start >= kAllocationTailZeros ||
      found[0].allocation.address + found[0].allocation.size < r.start + end)
    return std::nullopt;
  Buffer b = std::move(found[0]);
  b.allocation.size = b.allocation.chunk_size = r.start + r.size - b.allocation.address;
  b.estimated = true;
  return b;
}

} // namespace

void scanUnclaimed(const AddressSpace &memory, const std::vector<UnclaimedRange> &ranges,
                   const AnalyzeOptions &options, bool windows_private, SniffBudget &budget,
                   Diagnostics &diags, ProgressFn progress,
                   const std::function<void(Buffer)> &emit) {
  const SniffBudget::Use use(budget);
  const UnclaimedRange *ran_out_in = nullptr; // the range where the budget first cut a candidate
  const char *phase = "scanning unclaimed memory";
  uint64_t total = 0, done = 0;
  for (const UnclaimedRange &r : ranges)
    total += r.size;
  progress(phase, 0, total);
  std::vector<Buffer> hits; // one range's, in address order
  for (const UnclaimedRange &r : ranges) {
    done += r.size;
    if (r.size < options.min_size)
      continue;
    const uint8_t *p = memory.tryView(r.start, r.size);
    if (!p)
      continue;
    const llvm::ArrayRef<uint8_t> bytes(p, r.size);
    hits.clear();
    scanBytes(r.start, bytes, options, [&](Buffer b) { hits.push_back(std::move(b)); });
    if (!windows_private) {
      for (Buffer &b : hits)
        emit(std::move(b));
    } else if (hits.empty() && holdsOneAllocation(memory.snapshot(), r, bytes)) {
      // Its size is the committed pages'; sniffing gives its kind.
      emitRun(r.start, r.size, SniffResult{}, false, true, options, emit);
    } else if (std::optional<Buffer> one =
                   hits.empty() ? contentBehindHeader(memory.snapshot(), r, bytes, options)
                                : std::nullopt) {
      emit(std::move(*one));
    } else {
      uint64_t covered = 0; // the gaps between the hits hold the content without a signature
      for (Buffer &b : hits) {
        scanUnsigned(r.start, bytes, covered, b.allocation.address - r.start, options, emit);
        covered = b.allocation.address + b.allocation.size - r.start;
        emit(std::move(b));
      }
      scanUnsigned(r.start, bytes, covered, bytes.size(), options, emit);
    }
    memory.releasePages(r.start, r.size);
    progress(phase, done, total);
    if (!ran_out_in && budget.cutCandidates())
      ran_out_in = &r;
  }
  if (ran_out_in)
    diags.warn("region scan",
               "the run's inflate budget (" + humanBytes(options.inflate_budget) +
                   " of output) ran out in the range at " + hexAddress(ran_out_in->start) + " (" +
                   humanBytes(ran_out_in->size) + "): " + std::to_string(budget.cutCandidates()) +
                   " gzip/zlib candidates from there on were inflated only in part (status "
                   "\"budget\") or not at all (not reported)");
  progress(phase, total, total);
}

void scanFreeBlocks(const AddressSpace &memory, std::vector<Buffer> &buffers,
                    const AnalyzeOptions &options, SniffBudget &budget) {
  const SniffBudget::Use use(budget);
  for (Buffer &b : buffers) {
    if (b.allocation.state != AllocState::Free || b.payloadSize() < kStaleScanMinBytes)
      continue;
    const uint64_t start = b.payloadAddress();
    const uint64_t run = memory.capturedRunFrom(start, b.payloadSize());
    const uint8_t *p = run ? memory.tryView(start, run) : nullptr;
    if (!p)
      continue;
    scanBytes(start, llvm::ArrayRef<uint8_t>(p, run), options, [&](Buffer hit) {
      b.stale_content.push_back(
          {hit.allocation.address - start, hit.allocation.size, hit.content.kind, hit.estimated});
    });
  }
}

} // namespace dumpsift
