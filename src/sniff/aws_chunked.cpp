// AWS SigV4 streaming upload bodies (Content-Encoding: aws-chunked): the parser behind
// parseAwsChunked/awsChunkedPayload (framing.h) and the aws-chunked sniffer. The wire format is
// described in framing.h and docs/kinds.md.
#include "common.h"
#include "dumpsift/sniff/framing.h"
#include "dumpsift/support/bytes.h"

#include <algorithm>

namespace dumpsift {

using namespace sniffimpl;

namespace {

constexpr llvm::StringRef kSignatureKey = ";chunk-signature=";
constexpr unsigned kMaxSizeDigits = 8; // chunk sizes below 4 GiB
constexpr unsigned kHmacChars = 64, kEcdsaChars = 144;
constexpr unsigned kMaxTrailerLines = 16;
constexpr size_t kMaxTrailerLine = 512;
/// chunk_sizes in the details lists at most this many sizes.
constexpr size_t kMaxListedSizes = 1024;
/// The longest chunk header line ("ffffffff;chunk-signature=" + 144 + CRLF) less the final
/// chunk's 86 bytes: the most of an earlier header line that can survive behind a final chunk.
constexpr size_t kMaxHeaderRemnant = kMaxSizeDigits + 17 + kEcdsaChars + 2 - 86;

enum class LineStatus : uint8_t { Ok, Cut, Bad };

/// One parsed chunk header line.
struct ChunkLine {
  LineStatus status = LineStatus::Bad;
  uint64_t size = 0;
  unsigned signature_chars = 0; // 0: unsigned line "<hex>\r\n"
  size_t end = 0;               // offset just after the line's "\r\n"
};

/// True for a lowercase hex digit (SigV4 signatures are lowercase hex).
bool isLowerHex(uint8_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/// Parses "<hex>;chunk-signature=<sig>\r\n" or "<hex>\r\n" at `p`. Cut means the buffer ends
/// while the line is still well-formed so far; Bad means it is not a chunk header. No allocation.
ChunkLine parseChunkLine(Bytes d, size_t p) {
  ChunkLine line;
  const size_t n = d.size();
  size_t q = p;
  while (q < n && q - p < kMaxSizeDigits && llvm::isHexDigit(d[q]))
    line.size = line.size << 4 | llvm::hexDigitValue(d[q++]);
  if (q == n) {
    line.status = q > p ? LineStatus::Cut : LineStatus::Bad;
    return line;
  }
  if (q == p)
    return line; // no digits
  if (d[q] == ';') {
    const size_t key_avail = std::min(n - q, kSignatureKey.size());
    if (!hasAt(d.take_front(q + key_avail), q, kSignatureKey.take_front(key_avail)))
      return line;
    if (key_avail < kSignatureKey.size()) {
      line.status = LineStatus::Cut;
      return line;
    }
    q += kSignatureKey.size();
    const size_t sig_start = q;
    while (q < n && q - sig_start < kEcdsaChars && isLowerHex(d[q]))
      ++q;
    size_t hex_chars = q - sig_start;
    if (hex_chars > kHmacChars || (q < n && d[q] == '*')) { // SigV4a: hex padded with '*' to 144
      while (q < n && q - sig_start < kEcdsaChars && d[q] == '*')
        ++q;
      hex_chars = q - sig_start;
      if (q < n && hex_chars != kEcdsaChars)
        return line;
    } else if (q < n && hex_chars != kHmacChars) {
      return line; // short signature
    }
    line.signature_chars = static_cast<unsigned>(hex_chars);
  }
  if (q + 2 > n) {
    line.status = (q == n || d[q] == '\r') ? LineStatus::Cut : LineStatus::Bad;
    return line;
  }
  if (d[q] != '\r' || d[q + 1] != '\n')
    return line;
  line.status = LineStatus::Ok;
  line.end = q + 2;
  return line;
}

/// Parses one trailer line "name:value\r\n" at `p` (name: lowercase letters, digits, '-');
/// returns the offset after it, or 0 when malformed or cut. `name_end` receives the ':' offset.
size_t parseTrailerLine(Bytes d, size_t p, size_t &name_end) {
  const size_t n = std::min(d.size(), p + kMaxTrailerLine);
  size_t q = p;
  while (q < n && ((d[q] >= 'a' && d[q] <= 'z') || (d[q] >= '0' && d[q] <= '9') || d[q] == '-'))
    ++q;
  if (q == p || q >= n || d[q] != ':')
    return 0;
  name_end = q++;
  while (q < n && d[q] >= 0x20 && d[q] < 0x7f)
    ++q;
  if (q + 2 > n || d[q] != '\r' || d[q + 1] != '\n')
    return 0;
  return q + 2;
}

/// The walk shared by the sniffer and the decode API. `layout` is filled as the walk goes.
/// Returns false when data[0] is not an aws-chunked body.
bool walkAwsChunked(Bytes d, AwsChunkedLayout &layout) {
  const ChunkLine first = parseChunkLine(d, 0);
  if (first.status != LineStatus::Ok)
    return false;
  const bool is_signed = first.signature_chars != 0;
  layout.signature_chars = first.signature_chars;
  size_t p = 0;
  bool trailers = false;
  for (;;) {
    const ChunkLine line = parseChunkLine(d, p);
    if (line.status != LineStatus::Ok || (line.signature_chars != 0) != is_signed) {
      if (line.status == LineStatus::Cut) {
        layout.length = d.size(); // the buffer ends inside a plausible header line
        layout.cut = true;
      }
      break;
    }
    AwsChunk chunk;
    chunk.header_offset = p;
    chunk.data_offset = line.end;
    chunk.size = line.size;
    chunk.available = std::min<uint64_t>(line.size, d.size() - line.end);
    if (layout.chunks.size() < AwsChunkedLayout::kMaxChunks)
      layout.chunks.push_back(chunk);
    else
      layout.chunks_capped = true;
    if (line.size == 0) {
      layout.final_chunk = true;
      p = line.end;
      layout.length = p;
      // Terminator: an empty line, or trailer lines then an empty line.
      for (unsigned i = 0; i <= kMaxTrailerLines; ++i) {
        if (hasAt(d, p, "\r\n")) {
          layout.complete = true;
          layout.length = p + 2;
          break;
        }
        size_t name_end = 0;
        const size_t next = i < kMaxTrailerLines ? parseTrailerLine(d, p, name_end) : 0;
        if (!next)
          break;
        layout.trailer_names.push_back(
            std::string(reinterpret_cast<const char *>(d.data()) + p, name_end - p));
        trailers = true;
        p = next;
        layout.length = p;
      }
      break;
    }
    layout.payload_bytes += chunk.available;
    const uint64_t data_end = uint64_t(line.end) + line.size;
    if (data_end + 2 > d.size()) { // cut inside the data (or before its CRLF)
      layout.length = d.size();
      layout.cut = true;
      break;
    }
    if (d[data_end] != '\r' || d[data_end + 1] != '\n') {
      // The declared size does not land on CRLF: this chunk is not part of a well-formed body.
      layout.payload_bytes -= chunk.available;
      if (!layout.chunks_capped)
        layout.chunks.pop_back();
      break;
    }
    p = static_cast<size_t>(data_end + 2);
    layout.length = p;
  }
  if (layout.chunks.empty())
    return false;
  if (!is_signed) {
    // Unsigned bodies are plain chunked encoding: demand a confirmed structure.
    const bool second_header = layout.chunks.size() >= 2;
    const bool checksum_trailer = std::any_of(
        layout.trailer_names.begin(), layout.trailer_names.end(), [](const std::string &name) {
          return llvm::StringRef(name).startswith("x-amz-checksum-");
        });
    if (!second_header && !checksum_trailer)
      return false;
  }
  layout.variant =
      is_signed ? (trailers ? AwsChunkedVariant::SignedTrailer : AwsChunkedVariant::Signed)
                : (trailers ? AwsChunkedVariant::UnsignedTrailer : AwsChunkedVariant::Unsigned);
  return true;
}

/// The kind of the stale bytes behind a final chunk written over a reused frame buffer: the rest
/// of an earlier frame, whose header line's tail (ending in CRLF) is skipped, so the kind is that
/// of the earlier chunk's data; JPEG entropy-coded data (the middle of an image) counts as jpeg.
std::optional<ContentKind> staleKind(Bytes stale) {
  const size_t window = std::min(stale.size(), kMaxHeaderRemnant + 2);
  size_t data = 0;
  for (size_t q = 0; q + 1 < window; ++q) {
    if (stale[q] == '\r' && stale[q + 1] == '\n') {
      data = q + 2;
      break;
    }
    if (stale[q] < 0x20 || stale[q] >= 0x7f)
      break; // binary before any CRLF: no header remnant
  }
  const Bytes rest = stale.drop_front(data);
  const std::optional<ContentKind> kind = nestedKind(rest);
  if ((kind == ContentKind::Random || kind == ContentKind::Unknown) && isJpegEntropyCoded(rest))
    return ContentKind::Jpeg;
  return kind;
}

class AwsChunkedSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::AwsChunked; }

  /// 1-8 hex digits, then ";chunk-signature=" (as much of it as the head holds) or CRLF.
  bool quickCheck(Bytes head) const override {
    size_t q = 0;
    while (q < head.size() && q < kMaxSizeDigits && llvm::isHexDigit(head[q]))
      ++q;
    if (q == 0 || q == head.size())
      return false;
    if (head[q] == ';') {
      const size_t avail = std::min(head.size() - q, kSignatureKey.size());
      return hasAt(head, q, kSignatureKey.take_front(avail));
    }
    return head[q] == '\r' && (q + 1 == head.size() || head[q + 1] == '\n');
  }

  /// The region scan looks for the first chunk's hex size.
  llvm::StringRef scanLeadBytes() const override { return "0123456789abcdefABCDEF"; }

  /// Signed bodies only: anchored on ";chunk-signature=", backed up over at most 8 hex digits,
  /// never before `from` (so each retry tries a later start within the same digit run).
  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    const size_t end = std::min(buffer.size(), limit + kMaxSizeDigits + kSignatureKey.size());
    for (size_t q = findLiteralIn(buffer, from + 1, end, kSignatureKey); q != kNoCandidate;
         q = findLiteralIn(buffer, q + 1, end, kSignatureKey)) {
      size_t s = q;
      while (s > from && q - s < kMaxSizeDigits && llvm::isHexDigit(buffer[s - 1]))
        --s;
      if (s < q && s < limit)
        return s;
    }
    return kNoCandidate;
  }

  /// Walks the chunks (see parseAwsChunked); the payload is sniffed from the first chunk's data.
  std::optional<SniffResult> validate(Bytes data) const override {
    std::optional<AwsChunkedLayout> layout = parseAwsChunked(data);
    if (!layout)
      return std::nullopt;
    SniffResult r = makeResult(ContentKind::AwsChunked, layout->length, !layout->complete);
    r.structure_length = layout->length; // every chunk walked landed on its CRLF (or was cut)
    r.details.set("variant", awsChunkedVariantName(layout->variant).str());
    r.details.set("signed", layout->signature_chars != 0);
    if (layout->signature_chars)
      r.details.set("signature", std::string(layout->signature_chars == kHmacChars ? "hmac-sha256"
                                                                                   : "ecdsa-p256"));
    r.details.set("chunk_count", uint64_t(layout->chunks.size()));
    std::vector<uint64_t> sizes;
    for (size_t i = 0; i < layout->chunks.size() && i < kMaxListedSizes; ++i)
      sizes.push_back(layout->chunks[i].size);
    r.details.set("chunk_sizes", std::move(sizes));
    r.setFinalChunk(layout->final_chunk);
    r.setComplete(layout->complete);
    r.setTruncated(layout->cut);
    r.details.set("payload_bytes", layout->payload_bytes);
    if (!layout->trailer_names.empty()) {
      std::string names;
      for (const std::string &name : layout->trailer_names)
        names += (names.empty() ? "" : ",") + name;
      r.details.set("trailers", std::move(names));
    }
    for (const AwsChunk &chunk : layout->chunks) {
      if (chunk.available == 0)
        continue;
      if (std::optional<ContentKind> payload =
              nestedKind(data.slice(chunk.data_offset, chunk.available)))
        r.setPayloadKind(*payload);
      break;
    }
    if (layout->complete) {
      // A body that ends and still has bytes behind it: a reused buffer (the final chunk written
      // over an earlier frame). The stale tail runs to the last non-zero byte.
      const Bytes behind = data.drop_front(layout->length);
      if (const uint64_t stale = contentEnd(behind)) {
        r.setStaleBytes(stale);
        if (std::optional<ContentKind> kind = staleKind(behind.take_front(stale)))
          r.details.set("stale_kind", kindName(*kind).str());
      }
    }
    return r;
  }

  /// The upload's data: every chunk's data, in order (a cut last chunk clipped, and then `cut`).
  std::vector<Payload> decodePayloads(Bytes data) const override {
    std::optional<AwsChunkedLayout> layout = parseAwsChunked(data);
    if (!layout)
      return {};
    Payload payload;
    for (const AwsChunk &chunk : layout->chunks) {
      if (chunk.available)
        payload.pieces.push_back(data.slice(chunk.data_offset, chunk.available));
      payload.cut |= chunk.available < chunk.size;
    }
    if (payload.pieces.empty())
      return {};
    return {std::move(payload)};
  }
};

} // namespace

llvm::StringRef awsChunkedVariantName(AwsChunkedVariant variant) {
  switch (variant) {
  case AwsChunkedVariant::Signed:
    return "signed";
  case AwsChunkedVariant::SignedTrailer:
    return "signed-trailer";
  case AwsChunkedVariant::Unsigned:
    return "unsigned";
  case AwsChunkedVariant::UnsignedTrailer:
    return "unsigned-trailer";
  }
  return "signed";
}

std::optional<AwsChunkedLayout> parseAwsChunked(llvm::ArrayRef<uint8_t> data) {
  if (parseChunkLine(data, 0).status != LineStatus::Ok)
    return std::nullopt; // the common reject: no allocation
  AwsChunkedLayout layout;
  if (!walkAwsChunked(data, layout))
    return std::nullopt;
  return layout;
}

std::vector<llvm::ArrayRef<uint8_t>> awsChunkedPayload(llvm::ArrayRef<uint8_t> data) {
  std::vector<llvm::ArrayRef<uint8_t>> pieces;
  if (std::optional<AwsChunkedLayout> layout = parseAwsChunked(data))
    for (const AwsChunk &chunk : layout->chunks)
      if (chunk.available)
        pieces.push_back(data.slice(chunk.data_offset, chunk.available));
  return pieces;
}

namespace sniffimpl {
std::unique_ptr<Sniffer> makeAwsChunkedSniffer() {
  return std::make_unique<AwsChunkedSniffer>();
}
} // namespace sniffimpl

} // namespace dumpsift
