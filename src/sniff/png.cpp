// PNG (PNG specification 1.2, chapter 3): signature, IHDR (fields and CRC checked), then a walk
// over chunks (length + type + data + CRC) to IEND. Only IHDR's CRC is checked; other chunks are
// skipped by length, so the walk is O(chunks).
#include "common.h"

#include <zlib.h>

namespace dumpsift::sniffimpl {
namespace {

constexpr char kSignature[] = "\x89PNG\r\n\x1a\n";
constexpr size_t kSignatureSize = 8;
/// Bound on the chunk walk; a real file has far fewer (large images use big IDAT chunks).
constexpr unsigned kMaxChunks = 1u << 20;

/// True for a chunk type: four ASCII letters.
bool isChunkType(const uint8_t *t) {
  for (int i = 0; i < 4; ++i) {
    const uint8_t c = t[i] | 0x20;
    if (c < 'a' || c > 'z')
      return false;
  }
  return true;
}

/// True when the bit depth is allowed for the colour type (spec table 11.1).
bool validDepth(uint8_t color_type, uint8_t depth) {
  switch (color_type) {
  case 0:
    return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
  case 3:
    return depth == 1 || depth == 2 || depth == 4 || depth == 8;
  case 2:
  case 4:
  case 6:
    return depth == 8 || depth == 16;
  default:
    return false;
  }
}

class PngSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Png; }

  /// The 8-byte signature, and (when the head holds it) an IHDR chunk of length 13 first.
  bool quickCheck(Bytes head) const override {
    if (!startsWith(head, llvm::StringRef(kSignature, kSignatureSize)))
      return false;
    return head.size() < 16 || (read32be(head.data() + 8) == 13 && hasAt(head, 12, "IHDR"));
  }

  /// The region scan looks for the signature.
  llvm::StringRef scanLeadBytes() const override { return "\x89"; }

  /// Anchored on the 0x89 of the signature.
  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    return findLiteral(buffer, from, limit, llvm::StringRef(kSignature, kSignatureSize));
  }

  /// IHDR must be complete and sane (CRC included); the chunk walk then decides complete (IEND
  /// inside the buffer), truncated (a chunk runs past the end) or corrupt (a bad chunk header).
  std::optional<SniffResult> validate(Bytes data) const override {
    if (data.size() < 33 || !quickCheck(data.take_front(kHeadBytes)))
      return std::nullopt;
    const uint8_t *ihdr = data.data() + 16;
    const uint32_t width = read32be(ihdr), height = read32be(ihdr + 4);
    const uint8_t depth = ihdr[8], color = ihdr[9], interlace = ihdr[12];
    if (width == 0 || height == 0 || width > 0x7fffffffu || height > 0x7fffffffu ||
        !validDepth(color, depth) || ihdr[10] != 0 || ihdr[11] != 0 || interlace > 1)
      return std::nullopt;
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), data.data() + 12, 17);
    if (crc != read32be(data.data() + 29))
      return std::nullopt;

    enum { Complete, Truncated, Corrupt } status = Truncated;
    size_t p = 33, end = data.size();
    uint64_t chunks = 1;
    while (chunks < kMaxChunks) {
      if (data.size() - p < 12) {
        status = Truncated;
        end = data.size();
        break;
      }
      const uint32_t len = read32be(data.data() + p);
      if (len > 0x7fffffffu || !isChunkType(data.data() + p + 4)) {
        status = Corrupt;
        end = p;
        break;
      }
      if (len > data.size() - p - 12) {
        status = Truncated;
        end = data.size();
        break;
      }
      ++chunks;
      const bool iend = hasAt(data, p + 4, "IEND");
      p += 12 + size_t(len);
      if (iend) {
        status = Complete;
        end = p;
        break;
      }
    }
    SniffResult r = makeResult(ContentKind::Png, end, status != Complete);
    r.setDimensions(uint64_t(width), uint64_t(height));
    r.details.set("bit_depth", uint64_t(depth));
    r.details.set("color_type", uint64_t(color));
    r.details.set("interlaced", interlace == 1);
    r.details.set("chunk_count", chunks);
    r.setComplete(status == Complete);
    r.setTruncated(status == Truncated);
    r.details.set("status", std::string(status == Complete    ? "complete"
                                        : status == Truncated ? "truncated"
                                                              : "corrupt"));
    return r;
  }
};

} // namespace

std::unique_ptr<Sniffer> makePngSniffer() {
  return std::make_unique<PngSniffer>();
}

} // namespace dumpsift::sniffimpl
