// Thumbnails of image content (thumbnail.h).
#include "dumpsift/sniff/thumbnail.h"

#include <algorithm>
#include <memory>
#include <turbojpeg.h>

namespace dumpsift {

namespace {

using Handle = std::unique_ptr<void, int (*)(tjhandle)>;

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

/// `rgb` (width x height, 3 bytes a pixel) averaged down over boxes so that its longer side is
/// `side`; unchanged when it is not longer than that.
std::vector<uint8_t> boxFilter(const std::vector<uint8_t> &rgb, unsigned &width, unsigned &height,
                               unsigned side) {
  const unsigned longer = std::max(width, height);
  if (longer <= side)
    return rgb;
  const unsigned out_w = std::max(1u, unsigned(uint64_t(width) * side / longer));
  const unsigned out_h = std::max(1u, unsigned(uint64_t(height) * side / longer));
  std::vector<uint8_t> out(size_t(out_w) * out_h * 3);
  for (unsigned y = 0; y < out_h; ++y) {
    const unsigned y0 = unsigned(uint64_t(y) * height / out_h);
    const unsigned y1 = std::max(y0 + 1, unsigned(uint64_t(y + 1) * height / out_h));
    for (unsigned x = 0; x < out_w; ++x) {
      const unsigned x0 = unsigned(uint64_t(x) * width / out_w);
      const unsigned x1 = std::max(x0 + 1, unsigned(uint64_t(x + 1) * width / out_w));
      uint64_t sum[3] = {};
      for (unsigned sy = y0; sy < y1; ++sy)
        for (unsigned sx = x0; sx < x1; ++sx)
          for (unsigned c = 0; c < 3; ++c)
            sum[c] += rgb[(size_t(sy) * width + sx) * 3 + c];
      const uint64_t n = uint64_t(y1 - y0) * (x1 - x0);
      for (unsigned c = 0; c < 3; ++c)
        out[(size_t(y) * out_w + x) * 3 + c] = uint8_t(sum[c] / n);
    }
  }
  width = out_w;
  height = out_h;
  return out;
}

std::optional<Thumbnail> jpegThumbnail(llvm::ArrayRef<uint8_t> content,
                                       const ThumbnailLimits &limits) {
  const llvm::ArrayRef<uint8_t> stream = content.take_front(limits.max_decode_bytes);
  Handle decoder(tjInitDecompress(), tjDestroy);
  if (!decoder)
    return std::nullopt;
  const auto size = static_cast<unsigned long>(stream.size());
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(decoder.get(), stream.data(), size, &width, &height, &subsamp,
                          &colorspace) != 0 ||
      width <= 0 || height <= 0 || uint64_t(width) * uint64_t(height) > limits.max_pixels)
    return std::nullopt;
  const tjscalingfactor scale = scaleFor(width, height, limits.max_side);
  unsigned w = unsigned(TJSCALED(width, scale)), h = unsigned(TJSCALED(height, scale));
  // Rows the decoder does not reach stay mid-grey.
  std::vector<uint8_t> rgb(size_t(w) * h * 3, 0x80);
  Thumbnail thumb;
  thumb.partial = stream.size() < content.size();
  if (tjDecompress2(decoder.get(), stream.data(), size, rgb.data(), int(w), 0, int(h), TJPF_RGB,
                    TJFLAG_FASTDCT | TJFLAG_FASTUPSAMPLE | TJFLAG_LIMITSCANS) != 0) {
    if (tjGetErrorCode(decoder.get()) != TJERR_WARNING)
      return std::nullopt;
    thumb.partial = true; // "Premature end of JPEG file": the top part was decoded
  }
  rgb = boxFilter(rgb, w, h, limits.max_side);

  Handle encoder(tjInitCompress(), tjDestroy);
  if (!encoder)
    return std::nullopt;
  unsigned char *jpeg = nullptr;
  unsigned long jpeg_size = 0;
  if (tjCompress2(encoder.get(), rgb.data(), int(w), 0, int(h), TJPF_RGB, &jpeg, &jpeg_size,
                  TJSAMP_420, 70, TJFLAG_FASTDCT) != 0) {
    tjFree(jpeg);
    return std::nullopt;
  }
  thumb.bytes.assign(jpeg, jpeg + jpeg_size);
  tjFree(jpeg);
  thumb.mime = "image/jpeg";
  thumb.width = w;
  thumb.height = h;
  return thumb;
}

} // namespace

bool hasThumbnail(ContentKind kind) {
  switch (kind) {
  case ContentKind::Jpeg:
  case ContentKind::Png:
  case ContentKind::Gif:
  case ContentKind::Webp:
  case ContentKind::Bmp:
    return true;
  default:
    return false;
  }
}

std::optional<Thumbnail> makeThumbnail(ContentKind kind, llvm::ArrayRef<uint8_t> content,
                                       const ThumbnailLimits &limits) {
  if (content.empty())
    return std::nullopt;
  if (kind == ContentKind::Jpeg)
    return jpegThumbnail(content, limits);
  if (!hasThumbnail(kind) || content.size() > limits.max_inline_bytes)
    return std::nullopt;
  Thumbnail thumb;
  thumb.mime = kind == ContentKind::Png    ? "image/png"
               : kind == ContentKind::Gif  ? "image/gif"
               : kind == ContentKind::Webp ? "image/webp"
                                           : "image/bmp";
  thumb.bytes.assign(content.begin(), content.end());
  return thumb;
}

} // namespace dumpsift
