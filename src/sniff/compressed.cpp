// Compressed streams: gzip (RFC 1952) and zlib (RFC 1950) are confirmed by inflating a bounded
// amount with zlib (the extent is known only when the stream ends within the budget); zstd (RFC
// 8878) is confirmed by walking the frame header and block headers without decompressing.
#include "common.h"
#include "dumpsift/sniff/budget.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <zlib.h>

namespace dumpsift::sniffimpl {
namespace {

/// Inflate budget per candidate: at most this much input is offered and this much output produced,
/// so a decompression bomb costs about 2 ms of CPU (the run's SniffBudget, when one is in use, may
/// allow less).
constexpr size_t kInflateInputBudget = 1u << 20;
constexpr uint64_t kInflateOutputBudget = 4u << 20;
/// How much of the inflated data is sniffed for payload_kind.
constexpr size_t kPayloadHeadBytes = 4096;

/// Refused: the run's SniffBudget had nothing left, so nothing was inflated.
enum class InflateStatus : uint8_t { Complete, Truncated, Budget, Corrupt, Refused };

struct InflateOutcome {
  InflateStatus status = InflateStatus::Corrupt;
  uint64_t consumed = 0; // input bytes used (the stream's length when Complete)
  uint64_t produced = 0; // output bytes
  size_t head_size = 0;  // bytes stored in the caller's head buffer
};

/// Inflates `in` with zlib (`window_bits` as for inflateInit2: 15 zlib, 31 gzip) until the stream
/// ends, the input or the budget (the candidate's own, or what the thread's SniffBudget has left,
/// which is charged) runs out, or the data is bad. The first bytes of output go to `head`; the rest
/// is discarded. zlib checks the Adler-32 / CRC-32 and ISIZE trailers.
InflateOutcome inflateBounded(Bytes in, int window_bits,
                              std::array<uint8_t, kPayloadHeadBytes> &head) {
  InflateOutcome outcome;
  SniffBudget *run_budget = SniffBudget::current();
  const uint64_t output_budget =
      run_budget ? run_budget->inflateAllowance(kInflateOutputBudget) : kInflateOutputBudget;
  if (output_budget == 0) {
    run_budget->spendInflate(0, true);
    outcome.status = InflateStatus::Refused;
    return outcome;
  }
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, window_bits) != Z_OK)
    return outcome;
  const size_t offered = std::min(in.size(), kInflateInputBudget);
  zs.next_in = const_cast<Bytef *>(in.data());
  zs.avail_in = static_cast<uInt>(offered);
  uint8_t out[16384];
  for (;;) {
    zs.next_out = out;
    zs.avail_out = static_cast<uInt>(std::min<uint64_t>(sizeof out, output_budget - zs.total_out));
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const size_t got = sizeof out - zs.avail_out;
    if (outcome.head_size < head.size()) {
      const size_t take = std::min(got, head.size() - outcome.head_size);
      std::memcpy(head.data() + outcome.head_size, out, take);
      outcome.head_size += take;
    }
    if (rc == Z_STREAM_END) {
      outcome.status = InflateStatus::Complete;
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      outcome.status = InflateStatus::Corrupt;
      break;
    }
    if (zs.total_out >= output_budget) {
      outcome.status = InflateStatus::Budget;
      break;
    }
    if (rc == Z_BUF_ERROR || (zs.avail_in == 0 && got == 0)) {
      outcome.status = offered < in.size() ? InflateStatus::Budget : InflateStatus::Truncated;
      break;
    }
  }
  outcome.consumed = zs.total_in;
  outcome.produced = zs.total_out;
  inflateEnd(&zs);
  if (run_budget)
    run_budget->spendInflate(outcome.produced, outcome.status == InflateStatus::Budget &&
                                                   output_budget < kInflateOutputBudget);
  return outcome;
}

/// The details every inflated kind reports, and the result's extent. The input inflate consumed
/// is the stream's own even when it stopped early (structure_length): the region scan takes no
/// candidate inside it for a stream of its own.
SniffResult inflateResult(ContentKind kind, Bytes data, const InflateOutcome &o,
                          const std::array<uint8_t, kPayloadHeadBytes> &head) {
  const bool complete = o.status == InflateStatus::Complete;
  SniffResult r = makeResult(kind, complete ? o.consumed : data.size(), !complete);
  if (o.status == InflateStatus::Corrupt) {
    r.length = o.consumed; // damage starts within the last input zlib looked at
  }
  r.structure_length = o.consumed;
  r.setComplete(complete);
  r.setTruncated(o.status == InflateStatus::Truncated);
  r.details.set("status", std::string(complete                               ? "complete"
                                      : o.status == InflateStatus::Truncated ? "truncated"
                                      : o.status == InflateStatus::Budget    ? "budget"
                                                                             : "corrupt"));
  if (complete)
    r.details.set("compressed_length", o.consumed);
  r.details.set("uncompressed_bytes", o.produced);
  r.details.set("budget_exhausted", o.status == InflateStatus::Budget);
  if (std::optional<ContentKind> payload = nestedKind(Bytes(head.data(), o.head_size)))
    r.setPayloadKind(*payload);
  return r;
}

// ---------------------------------------------------------------------------------------------
// gzip
// ---------------------------------------------------------------------------------------------

/// Fixed gzip header checks: method deflate, reserved flags clear, a known XFL and OS.
bool gzipHeaderOk(Bytes head) {
  if (head.size() < 10 || head[0] != 0x1F || head[1] != 0x8B || head[2] != 8 || (head[3] & 0xE0))
    return false;
  const uint8_t xfl = head[8], os = head[9];
  return (xfl == 0 || xfl == 2 || xfl == 4) && (os <= 13 || os == 255);
}

class GzipSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Gzip; }

  bool quickCheck(Bytes head) const override { return gzipHeaderOk(head); }

  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    return findLiteral(buffer, from, limit, "\x1f\x8b\x08");
  }

  /// The region scan looks for the member header.
  llvm::StringRef scanLeadBytes() const override { return "\x1f"; }

  /// Header fields (name, mtime, OS), then a bounded inflate of the member. Rejected when inflate
  /// fails before producing 64 bytes.
  std::optional<SniffResult> validate(Bytes d) const override {
    if (!gzipHeaderOk(d))
      return std::nullopt;
    const uint8_t flags = d[3];
    size_t p = 10;
    if (flags & 0x04) { // FEXTRA
      if (d.size() < p + 2)
        return std::nullopt;
      p += 2 + size_t(read16le(d.data() + p));
    }
    Bytes name;
    if (flags & 0x08) { // FNAME, NUL-terminated (looked for within 1 KiB)
      const size_t end = std::min(d.size(), p + 1024);
      const void *nul = p < end ? std::memchr(d.data() + p, 0, end - p) : nullptr;
      if (!nul)
        return std::nullopt;
      const size_t nul_at = static_cast<size_t>(static_cast<const uint8_t *>(nul) - d.data());
      name = d.slice(p, nul_at - p);
    }
    std::array<uint8_t, kPayloadHeadBytes> head;
    const InflateOutcome o = inflateBounded(d, 15 + 16, head);
    if (o.status == InflateStatus::Refused ||
        (o.status == InflateStatus::Corrupt && o.produced < 64))
      return std::nullopt;
    SniffResult r = inflateResult(ContentKind::Gzip, d, o, head);
    if (!name.empty())
      r.details.set("name", printableString(name, 256));
    r.details.set("mtime", uint64_t(read32le(d.data() + 4)));
    r.details.set("os", uint64_t(d[9]));
    return r;
  }
};

// ---------------------------------------------------------------------------------------------
// zlib
// ---------------------------------------------------------------------------------------------

/// CMF deflate with a 8-32 KiB window, FCHECK, no preset dictionary, and a first deflate block
/// that is not of the reserved type (a stored block's LEN/NLEN must agree).
bool zlibHeaderOk(Bytes head) {
  if (head.size() < 3)
    return false;
  const uint8_t cmf = head[0], flg = head[1];
  if ((cmf != 0x78 && cmf != 0x68 && cmf != 0x58) || (cmf * 256 + flg) % 31 != 0 || (flg & 0x20))
    return false;
  const unsigned btype = (head[2] >> 1) & 3;
  if (btype == 3)
    return false;
  if (btype == 0 && head.size() >= 7)
    return (read16le(head.data() + 3) ^ read16le(head.data() + 5)) == 0xFFFF;
  return true;
}

class ZlibSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Zlib; }

  bool quickCheck(Bytes head) const override { return zlibHeaderOk(head); }

  /// Two header bytes are too weak to search for inside buffers: offset 0 only (default).

  /// A bounded inflate must reach the end (Adler-32 checked) or produce at least 64 bytes without
  /// error: 'x^' at the start of text fails here.
  std::optional<SniffResult> validate(Bytes d) const override {
    if (!zlibHeaderOk(d))
      return std::nullopt;
    std::array<uint8_t, kPayloadHeadBytes> head;
    const InflateOutcome o = inflateBounded(d, 15, head);
    if (o.status == InflateStatus::Corrupt || o.status == InflateStatus::Refused ||
        (o.status != InflateStatus::Complete && o.produced < 64))
      return std::nullopt;
    SniffResult r = inflateResult(ContentKind::Zlib, d, o, head);
    static const char *const kLevels[] = {"fastest", "fast", "default", "best"};
    r.details.set("level", std::string(kLevels[d[1] >> 6]));
    return r;
  }
};

// ---------------------------------------------------------------------------------------------
// zstd
// ---------------------------------------------------------------------------------------------

/// Bound on the block walk (a frame of 128 KiB blocks reaches 128 GiB first).
constexpr unsigned kMaxZstdBlocks = 1u << 20;
constexpr uint32_t kMaxBlockSize = 128u << 10;

class ZstdSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Zstd; }

  /// Frame magic 28 B5 2F FD and a frame header descriptor with the reserved bit clear.
  bool quickCheck(Bytes head) const override {
    return head.size() >= 5 && startsWith(head, "\x28\xb5\x2f\xfd") && !(head[4] & 0x08);
  }

  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    return findLiteral(buffer, from, limit, "\x28\xb5\x2f\xfd");
  }

  /// The region scan looks for the frame magic.
  llvm::StringRef scanLeadBytes() const override { return "\x28"; }

  /// Frame header (window, dictionary id, content size), then block headers: type 3 is invalid and
  /// no block may exceed 128 KiB or the window. The frame ends after the last block and the
  /// optional 4-byte checksum. The first block header must be valid.
  std::optional<SniffResult> validate(Bytes d) const override {
    if (!quickCheck(d.take_front(kHeadBytes)))
      return std::nullopt;
    const uint8_t fhd = d[4];
    const unsigned fcs_flag = fhd >> 6, dict_flag = fhd & 3;
    const bool single_segment = fhd & 0x20, checksum = fhd & 0x04;
    size_t p = 5;
    uint64_t window = 0;
    if (!single_segment) {
      if (p >= d.size())
        return std::nullopt;
      const unsigned exponent = d[p] >> 3, mantissa = d[p] & 7;
      if (exponent > 31 - 10)
        return std::nullopt;
      const uint64_t base = uint64_t(1) << (10 + exponent);
      window = base + base / 8 * mantissa;
      ++p;
    }
    static const unsigned kDictSizes[] = {0, 1, 2, 4};
    const unsigned dict_size = kDictSizes[dict_flag];
    const unsigned fcs_size = fcs_flag == 0 ? (single_segment ? 1 : 0) : 1u << fcs_flag;
    if (d.size() < p + dict_size + fcs_size + 3)
      return std::nullopt;
    uint64_t dict_id = 0;
    for (unsigned i = 0; i < dict_size; ++i)
      dict_id |= uint64_t(d[p + i]) << (8 * i);
    p += dict_size;
    std::optional<uint64_t> content_size;
    if (fcs_size) {
      uint64_t v = 0;
      for (unsigned i = 0; i < fcs_size; ++i)
        v |= uint64_t(d[p + i]) << (8 * i);
      content_size = fcs_size == 2 ? v + 256 : v;
      p += fcs_size;
    }
    if (single_segment)
      window = content_size.value_or(0);
    const uint64_t max_block = window ? std::min<uint64_t>(window, kMaxBlockSize) : kMaxBlockSize;

    enum { Complete, Truncated, Corrupt } status = Truncated;
    size_t end = d.size();
    uint64_t blocks = 0;
    while (blocks < kMaxZstdBlocks) {
      if (d.size() - p < 3)
        break; // truncated
      const uint32_t header = read24le(d.data() + p);
      const bool last = header & 1;
      const unsigned type = (header >> 1) & 3;
      const uint32_t size = header >> 3;
      if (type == 3 || size > max_block) {
        if (blocks == 0)
          return std::nullopt;
        status = Corrupt;
        end = p;
        break;
      }
      const uint64_t stored = type == 1 ? 1 : size; // an RLE block stores one byte
      ++blocks;
      if (stored > d.size() - p - 3)
        break; // truncated
      p += 3 + stored;
      if (last) {
        if (checksum && d.size() - p < 4)
          break; // truncated
        p += checksum ? 4 : 0;
        status = Complete;
        end = p;
        break;
      }
    }
    SniffResult r = makeResult(ContentKind::Zstd, end, status != Complete);
    if (content_size)
      r.details.set("content_size", *content_size);
    if (window)
      r.details.set("window_size", window);
    if (dict_id)
      r.details.set("dict_id", dict_id);
    r.details.set("has_checksum", checksum);
    r.details.set("block_count", blocks);
    r.setComplete(status == Complete);
    r.setTruncated(status == Truncated);
    return r;
  }
};

} // namespace

std::unique_ptr<Sniffer> makeGzipSniffer() {
  return std::make_unique<GzipSniffer>();
}
std::unique_ptr<Sniffer> makeZlibSniffer() {
  return std::make_unique<ZlibSniffer>();
}
std::unique_ptr<Sniffer> makeZstdSniffer() {
  return std::make_unique<ZstdSniffer>();
}

} // namespace dumpsift::sniffimpl
