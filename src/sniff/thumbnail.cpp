// Thumbnails of image content (thumbnail.h).
#include "dumpsift/sniff/thumbnail.h"

#include "llvm/Support/Endian.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <turbojpeg.h>
#include <zlib.h>

namespace dumpsift {

namespace {

using Bytes = llvm::ArrayRef<uint8_t>;
using Handle = std::unique_ptr<void, int (*)(tjhandle)>;

/// Averages an image of width x height pixels, fed row by row, down over boxes so that its
/// longer side is at most `side` pixels. Holds only the output's sums.
class BoxFilter {
public:
  BoxFilter(unsigned width, unsigned height, unsigned side) : width_(width), height_(height) {
    const unsigned longer = std::max(width, height);
    out_w_ = longer <= side ? width : std::max(1u, unsigned(uint64_t(width) * side / longer));
    out_h_ = longer <= side ? height : std::max(1u, unsigned(uint64_t(height) * side / longer));
    sums_.assign(size_t(out_w_) * out_h_ * 4, 0);
  }

  /// Adds row `y` (`width` pixels, 3 bytes each: R, G, B).
  void addRow(unsigned y, const uint8_t *rgb) {
    uint32_t *row = &sums_[size_t(uint64_t(y) * out_h_ / height_) * out_w_ * 4];
    for (unsigned x = 0; x < width_; ++x) {
      uint32_t *cell = row + size_t(uint64_t(x) * out_w_ / width_) * 4;
      cell[0] += rgb[x * 3];
      cell[1] += rgb[x * 3 + 1];
      cell[2] += rgb[x * 3 + 2];
      ++cell[3];
    }
  }

  /// The averaged image, RGB, outWidth() x outHeight(); pixels no row reached are mid-grey.
  std::vector<uint8_t> result() const {
    std::vector<uint8_t> out(size_t(out_w_) * out_h_ * 3, 0x80);
    for (size_t i = 0; i < size_t(out_w_) * out_h_; ++i)
      if (const uint32_t n = sums_[i * 4 + 3])
        for (unsigned c = 0; c < 3; ++c)
          out[i * 3 + c] = uint8_t(sums_[i * 4 + c] / n);
    return out;
  }
  unsigned outWidth() const { return out_w_; }
  unsigned outHeight() const { return out_h_; }

private:
  unsigned width_, height_, out_w_, out_h_;
  std::vector<uint32_t> sums_; // R, G, B and the pixel count of each output pixel
};

/// The filtered picture as a small JPEG.
std::optional<Thumbnail> encodeThumbnail(const BoxFilter &box, bool partial) {
  const std::vector<uint8_t> rgb = box.result();
  Handle encoder(tjInitCompress(), tjDestroy);
  if (!encoder)
    return std::nullopt;
  unsigned char *jpeg = nullptr;
  unsigned long jpeg_size = 0;
  if (tjCompress2(encoder.get(), rgb.data(), int(box.outWidth()), 0, int(box.outHeight()), TJPF_RGB,
                  &jpeg, &jpeg_size, TJSAMP_420, 70, TJFLAG_FASTDCT) != 0) {
    tjFree(jpeg);
    return std::nullopt;
  }
  Thumbnail thumb;
  thumb.bytes.assign(jpeg, jpeg + jpeg_size);
  tjFree(jpeg);
  thumb.mime = kindFacts(ContentKind::Jpeg).mime_type;
  thumb.width = box.outWidth();
  thumb.height = box.outHeight();
  thumb.partial = partial;
  return thumb;
}

/// The TurboJPEG scale whose output is the smallest that still has a side of at least `side`
/// pixels (1/1 for an image smaller than that).
tjscalingfactor scaleFor(int width, int height, unsigned side) {
  int count = 0;
  const tjscalingfactor *factors = tjGetScalingFactors(&count);
  tjscalingfactor best = {1, 1};
  for (int i = 0; factors && i < count; ++i) {
    const tjscalingfactor f = factors[i];
    if (f.num > f.denom)
      continue;
    const int longer = std::max(TJSCALED(width, f), TJSCALED(height, f));
    if (unsigned(longer) >= side && f.num * best.denom < best.num * f.denom)
      best = f;
  }
  return best;
}

/// True when the JPEG's frame header (the first SOFn marker segment) is progressive (SOF2, SOF6,
/// SOF10, SOF14), whose decode buffers every coefficient of the image.
bool progressiveJpeg(Bytes jpeg) {
  size_t at = 2;
  while (at + 4 <= jpeg.size() && jpeg[at] == 0xFF) {
    const uint8_t marker = jpeg[at + 1];
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC)
      return marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE;
    at += 2 + llvm::support::endian::read16be(jpeg.data() + at + 2);
  }
  return false;
}

std::optional<Thumbnail> jpegThumbnail(Bytes content, const ThumbnailLimits &limits) {
  const Bytes stream = thumbnailInput(ContentKind::Jpeg, content, limits);
  Handle decoder(tjInitDecompress(), tjDestroy);
  if (!decoder)
    return std::nullopt;
  const auto size = static_cast<unsigned long>(stream.size());
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(decoder.get(), stream.data(), size, &width, &height, &subsamp,
                          &colorspace) != 0 ||
      width <= 0 || height <= 0)
    return std::nullopt;
  const uint64_t pixels = uint64_t(width) * uint64_t(height);
  if (pixels > limits.max_pixels ||
      (pixels > limits.max_progressive_pixels && progressiveJpeg(stream)))
    return std::nullopt;
  const tjscalingfactor scale = scaleFor(width, height, limits.max_side);
  const unsigned w = unsigned(TJSCALED(width, scale)), h = unsigned(TJSCALED(height, scale));
  // Rows the decoder does not reach stay mid-grey.
  std::vector<uint8_t> rgb(size_t(w) * h * 3, 0x80);
  bool partial = stream.size() < content.size();
  if (tjDecompress2(decoder.get(), stream.data(), size, rgb.data(), int(w), 0, int(h), TJPF_RGB,
                    TJFLAG_FASTDCT | TJFLAG_FASTUPSAMPLE | TJFLAG_LIMITSCANS) != 0) {
    if (tjGetErrorCode(decoder.get()) != TJERR_WARNING)
      return std::nullopt;
    partial = true; // "Premature end of JPEG file": the top part was decoded
  }
  BoxFilter box(w, h, limits.max_side);
  for (unsigned y = 0; y < h; ++y)
    box.addRow(y, &rgb[size_t(y) * w * 3]);
  return encodeThumbnail(box, partial);
}

/// PNG (ISO/IEC 15948) without interlace, 8 bits a sample, grey, RGB, grey+alpha or RGBA
/// (colour types 0, 2, 4, 6): the IDAT data inflated row by row, unfiltered, alpha over white.
/// nullopt for any other PNG, or a malformed one.
std::optional<Thumbnail> pngThumbnail(Bytes content, const ThumbnailLimits &limits) {
  using llvm::support::endian::read32be;
  if (content.size() < 33 || std::memcmp(content.data() + 12, "IHDR", 4) != 0)
    return std::nullopt;
  const uint32_t width = read32be(content.data() + 16), height = read32be(content.data() + 20);
  const uint8_t depth = content[24], colour = content[25], interlace = content[28];
  const unsigned channels = colour == 0   ? 1
                            : colour == 2 ? 3
                            : colour == 4 ? 2
                            : colour == 6 ? 4
                                          : 0;
  if (!channels || depth != 8 || interlace != 0 || !width || !height ||
      uint64_t(width) * height > limits.max_pixels || width > limits.max_png_width)
    return std::nullopt;
  const size_t stride = size_t(width) * channels;

  z_stream z{};
  if (inflateInit(&z) != Z_OK)
    return std::nullopt;
  std::vector<uint8_t> prev(stride, 0), row(stride + 1), rgb(size_t(width) * 3);
  BoxFilter box(width, height, limits.max_side);
  uint32_t y = 0;
  size_t filled = 0;
  bool bad = false;
  for (size_t at = 8; !bad && y < height && at + 12 <= content.size();) {
    const uint32_t length = read32be(content.data() + at);
    const bool idat = std::memcmp(content.data() + at + 4, "IDAT", 4) == 0;
    const Bytes data = content.slice(at + 8, std::min<uint64_t>(length, content.size() - at - 8));
    at += 12 + uint64_t(length);
    if (!idat)
      continue;
    z.next_in = const_cast<uint8_t *>(data.data());
    z.avail_in = unsigned(data.size());
    while (z.avail_in && y < height) {
      z.next_out = row.data() + filled;
      z.avail_out = unsigned(row.size() - filled);
      const int rc = inflate(&z, Z_NO_FLUSH);
      filled = row.size() - z.avail_out;
      if (rc != Z_OK && rc != Z_STREAM_END) {
        bad = true;
        break;
      }
      if (filled < row.size()) {
        if (rc == Z_STREAM_END)
          break;
        continue;
      }
      // One row: undo its filter (None, Sub, Up, Average, Paeth) against the previous one.
      const uint8_t filter = row[0];
      uint8_t *cur = row.data() + 1;
      for (size_t i = 0; i < stride; ++i) {
        const int a = i >= channels ? cur[i - channels] : 0, b = prev[i];
        const int c = i >= channels ? prev[i - channels] : 0;
        int add = 0;
        if (filter == 1)
          add = a;
        else if (filter == 2)
          add = b;
        else if (filter == 3)
          add = (a + b) / 2;
        else if (filter == 4) {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          add = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
        } else if (filter != 0) {
          bad = true;
          break;
        }
        cur[i] = uint8_t(cur[i] + add);
      }
      if (bad)
        break;
      for (uint32_t x = 0; x < width; ++x) {
        const uint8_t *px = cur + size_t(x) * channels;
        const unsigned alpha = channels == 2 ? px[1] : channels == 4 ? px[3] : 255;
        for (unsigned ch = 0; ch < 3; ++ch) {
          const unsigned v = channels <= 2 ? px[0] : px[ch];
          rgb[size_t(x) * 3 + ch] = uint8_t((v * alpha + 255 * (255 - alpha)) / 255);
        }
      }
      box.addRow(y++, rgb.data());
      std::memcpy(prev.data(), cur, stride);
      filled = 0;
    }
  }
  inflateEnd(&z);
  if (y == 0)
    return std::nullopt;
  return encodeThumbnail(box, y < height);
}

} // namespace

bool hasThumbnail(ContentKind kind) {
  return kindFacts(kind).thumbnail;
}

Bytes thumbnailInput(ContentKind kind, Bytes content, const ThumbnailLimits &limits) {
  return kind == ContentKind::Jpeg ? content.take_front(limits.max_decode_bytes) : content;
}

std::optional<Thumbnail> makeThumbnail(ContentKind kind, Bytes content,
                                       const ThumbnailLimits &limits) {
  if (content.empty() || !hasThumbnail(kind))
    return std::nullopt;
  if (kind == ContentKind::Jpeg)
    return jpegThumbnail(content, limits);
  if (content.size() > limits.max_inline_bytes)
    return kind == ContentKind::Png ? pngThumbnail(content, limits) : std::nullopt;
  Thumbnail thumb;
  thumb.mime = kindFacts(kind).mime_type;
  thumb.bytes.assign(content.begin(), content.end());
  return thumb;
}

} // namespace dumpsift
