// Small image formats: GIF (87a/89a: walk of blocks and sub-blocks to the trailer), WebP (RIFF
// container: size field, first chunk VP8/VP8L/VP8X for the dimensions, chunk walk) and BMP (file
// header and DIB header sanity; the extent is the file size field).
#include "common.h"

namespace dumpsift::sniffimpl {
namespace {

// ---------------------------------------------------------------------------------------------
// GIF
// ---------------------------------------------------------------------------------------------

/// Skips a chain of data sub-blocks (size byte + data, ended by a 0 byte) at `p`; returns the
/// offset after the terminator, or SIZE_MAX when the chain runs past the end.
size_t skipSubBlocks(Bytes d, size_t p) {
  while (p < d.size()) {
    const uint8_t size = d[p++];
    if (size == 0)
      return p;
    p += size;
  }
  return SIZE_MAX;
}

class GifSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Gif; }

  /// "GIF87a" or "GIF89a".
  bool quickCheck(Bytes head) const override {
    return startsWith(head, "GIF87a") || startsWith(head, "GIF89a");
  }

  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    return findLiteral(buffer, from, limit, "GIF8");
  }

  /// The region scan looks for "GIF8".
  llvm::StringRef scanLeadBytes() const override { return "G"; }

  /// Logical screen descriptor (non-zero size), optional global colour table, then blocks: 0x21
  /// extensions, 0x2C images (descriptor, local table, LZW code size, sub-blocks), 0x3B trailer.
  /// The first block must be valid; later damage is reported as corrupt.
  std::optional<SniffResult> validate(Bytes d) const override {
    if (d.size() < 14 || !quickCheck(d))
      return std::nullopt;
    const unsigned width = read16le(d.data() + 6), height = read16le(d.data() + 8);
    if (width == 0 || height == 0)
      return std::nullopt;
    size_t p = 13;
    if (d[10] & 0x80)
      p += size_t(3) << ((d[10] & 7) + 1);
    enum { Complete, Truncated, Corrupt } status = Truncated;
    size_t end = d.size();
    uint64_t frames = 0, blocks = 0;
    for (;;) {
      if (p >= d.size())
        break; // truncated
      const uint8_t b = d[p];
      if (b == 0x3B) {
        status = Complete;
        end = p + 1;
        break;
      }
      if (b == 0x21) {
        p = p + 2 <= d.size() ? skipSubBlocks(d, p + 2) : SIZE_MAX;
      } else if (b == 0x2C) {
        if (d.size() - p < 11) {
          p = SIZE_MAX;
        } else {
          const uint8_t packed = d[p + 9];
          p += 10;
          if (packed & 0x80)
            p += size_t(3) << ((packed & 7) + 1);
          if (p < d.size()) {
            const uint8_t lzw = d[p];
            if (lzw < 1 || lzw > 11) {
              status = Corrupt;
              end = p;
              break;
            }
            p = skipSubBlocks(d, p + 1);
          }
          ++frames;
        }
      } else {
        status = Corrupt;
        end = p;
        break;
      }
      ++blocks;
      if (p == SIZE_MAX)
        break; // truncated inside a block
    }
    if (status == Corrupt && blocks == 0)
      return std::nullopt;
    SniffResult r = makeResult(ContentKind::Gif, end, status != Complete);
    r.setDimensions(uint64_t(width), uint64_t(height));
    r.details.set("version", std::string(d[4] == '7' ? "87a" : "89a"));
    r.details.set("frame_count", frames);
    r.setComplete(status == Complete);
    r.setTruncated(status == Truncated);
    return r;
  }
};

// ---------------------------------------------------------------------------------------------
// WebP
// ---------------------------------------------------------------------------------------------

/// Bound on the RIFF chunk walk.
constexpr unsigned kMaxRiffChunks = 4096;

class WebpSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Webp; }

  /// "RIFF" <size> "WEBP", then (when in the head) a VP8/VP8L/VP8X chunk.
  bool quickCheck(Bytes head) const override {
    if (head.size() < 12 || !startsWith(head, "RIFF") || !hasAt(head, 8, "WEBP"))
      return false;
    return head.size() < 16 || hasAt(head, 12, "VP8 ") || hasAt(head, 12, "VP8L") ||
           hasAt(head, 12, "VP8X");
  }

  /// The region scan looks for "RIFF".
  llvm::StringRef scanLeadBytes() const override { return "R"; }

  /// Anchored on "WEBP" at +8 (rarer than "RIFF").
  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    for (size_t p = findLiteral(buffer, from + 8, limit + 8, "WEBP"); p != kNoCandidate;
         p = findLiteral(buffer, p + 1, limit + 8, "WEBP"))
      if (hasAt(buffer, p - 8, "RIFF"))
        return p - 8;
    return kNoCandidate;
  }

  /// Dimensions from the first chunk; the extent is 8 + the RIFF size, checked by walking chunks
  /// (each padded to an even size) when the whole file is in the buffer.
  std::optional<SniffResult> validate(Bytes d) const override {
    if (d.size() < 30 || !quickCheck(d.take_front(kHeadBytes)))
      return std::nullopt;
    const uint64_t riff = read32le(d.data() + 4);
    if (riff < 4 + 8 + 10)
      return std::nullopt;
    const uint8_t *pl = d.data() + 20;
    uint64_t width = 0, height = 0;
    const char *encoding = nullptr;
    if (hasAt(d, 12, "VP8 ")) {
      if (pl[3] != 0x9D || pl[4] != 0x01 || pl[5] != 0x2A)
        return std::nullopt;
      width = read16le(pl + 6) & 0x3FFF;
      height = read16le(pl + 8) & 0x3FFF;
      encoding = "lossy";
    } else if (hasAt(d, 12, "VP8L")) {
      if (pl[0] != 0x2F)
        return std::nullopt;
      const uint32_t bits = read32le(pl + 1);
      width = (bits & 0x3FFF) + 1;
      height = ((bits >> 14) & 0x3FFF) + 1;
      encoding = "lossless";
    } else {
      width = uint64_t(read24le(pl + 4)) + 1;
      height = uint64_t(read24le(pl + 7)) + 1;
      encoding = "extended";
    }
    if (width == 0 || height == 0)
      return std::nullopt;
    const uint64_t length = 8 + riff;
    const bool complete = length <= d.size();
    if (complete) {
      uint64_t p = 12;
      unsigned chunks = 0;
      while (p + 8 <= length && chunks++ < kMaxRiffChunks) {
        const uint64_t size = read32le(d.data() + p + 4);
        p += 8 + size + (size & 1);
      }
      // An odd-sized last chunk may omit its pad byte.
      if (p != length && p != length + 1 && chunks < kMaxRiffChunks)
        return std::nullopt;
    }
    SniffResult r = makeResult(ContentKind::Webp, complete ? length : d.size(), !complete);
    r.setDimensions(width, height);
    r.details.set("encoding", std::string(encoding));
    r.details.set("riff_size", riff);
    r.setComplete(complete);
    return r;
  }
};

// ---------------------------------------------------------------------------------------------
// BMP
// ---------------------------------------------------------------------------------------------

/// True for the DIB header sizes in use (core, info, v2-v5, OS/2 2.x).
bool knownDibSize(uint32_t size) {
  return size == 12 || size == 40 || size == 52 || size == 56 || size == 64 || size == 108 ||
         size == 124;
}

class BmpSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Bmp; }

  /// "BM", reserved fields zero, a known DIB header size.
  bool quickCheck(Bytes head) const override {
    if (head.size() < 16 || head[0] != 'B' || head[1] != 'M')
      return false;
    return read32le(head.data() + 6) == 0 && head[15] == 0 &&
           knownDibSize(read16le(head.data() + 14));
  }

  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    return findLiteral(buffer, from, limit, "BM");
  }

  /// File and DIB header fields must agree: one plane, a real bit count and compression, sane
  /// dimensions, pixel data inside the file. The extent is the file size field.
  std::optional<SniffResult> validate(Bytes d) const override {
    if (d.size() < 26 || !quickCheck(d.take_front(kHeadBytes)))
      return std::nullopt;
    const uint64_t file_size = read32le(d.data() + 2), data_offset = read32le(d.data() + 10);
    const uint32_t dib = read32le(d.data() + 14);
    int64_t width = 0, height = 0;
    unsigned planes = 0, bpp = 0;
    uint32_t compression = 0;
    if (dib == 12) {
      width = read16le(d.data() + 18);
      height = read16le(d.data() + 20);
      planes = read16le(d.data() + 22);
      bpp = read16le(d.data() + 24);
    } else {
      if (d.size() < 34)
        return std::nullopt;
      width = static_cast<int32_t>(read32le(d.data() + 18));
      height = static_cast<int32_t>(read32le(d.data() + 22));
      planes = read16le(d.data() + 26);
      bpp = read16le(d.data() + 28);
      compression = read32le(d.data() + 30);
    }
    const bool bpp_ok =
        bpp == 1 || bpp == 2 || bpp == 4 || bpp == 8 || bpp == 16 || bpp == 24 || bpp == 32;
    const bool compression_ok = compression <= 6 || (compression >= 11 && compression <= 13);
    const int64_t abs_height = height < 0 ? -height : height;
    if (planes != 1 || !bpp_ok || !compression_ok || width <= 0 || width > (1 << 20) ||
        abs_height == 0 || abs_height > (1 << 20) || data_offset < 14 + uint64_t(dib) ||
        file_size < data_offset)
      return std::nullopt;
    const bool complete = file_size <= d.size();
    SniffResult r = makeResult(ContentKind::Bmp, complete ? file_size : d.size(), !complete);
    r.setDimensions(uint64_t(width), uint64_t(abs_height));
    r.details.set("bits_per_pixel", uint64_t(bpp));
    r.details.set("top_down", height < 0);
    r.details.set("file_size", file_size);
    r.setComplete(complete);
    return r;
  }
};

} // namespace

std::unique_ptr<Sniffer> makeGifSniffer() {
  return std::make_unique<GifSniffer>();
}
std::unique_ptr<Sniffer> makeWebpSniffer() {
  return std::make_unique<WebpSniffer>();
}
std::unique_ptr<Sniffer> makeBmpSniffer() {
  return std::make_unique<BmpSniffer>();
}

} // namespace dumpsift::sniffimpl
