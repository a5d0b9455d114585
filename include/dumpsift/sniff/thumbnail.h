// Thumbnails: a small picture of image content that a browser shows inline (the HTML report). A
// JPEG is decoded at reduced scale with TurboJPEG and encoded again, small; PNG, GIF, WebP and BMP
// content small enough is shown as it is.
#pragma once

#include "dumpsift/sniff/sniffer.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

struct Thumbnail {
  llvm::StringRef mime;       // "image/jpeg", "image/png", ...
  std::vector<uint8_t> bytes; // the image file a browser decodes
  unsigned width = 0, height = 0;
  /// The content was cut short or only its start was decoded: the picture shows its top part
  /// (what the decoder got to), the rest grey, as image viewers show a truncated file.
  bool partial = false;
};

struct ThumbnailLimits {
  unsigned max_side = 160;               // the thumbnail's longer side, in pixels
  uint64_t max_decode_bytes = 256 << 10; // JPEG: bytes of the stream decoded (its start)
  uint64_t max_pixels = 16ull << 20;     // JPEG and PNG: larger images are not decoded
  /// A progressive JPEG's decode holds every coefficient (6 bytes a pixel for colour): larger
  /// ones are not decoded.
  uint64_t max_progressive_pixels = 2ull << 20;
  uint32_t max_png_width = 1u << 15;    // PNG: wider images are not decoded (a row is held)
  uint64_t max_inline_bytes = 24 << 10; // PNG/GIF/WebP/BMP: larger files are not shown
};

/// True for the kinds makeThumbnail can show (kindFacts(kind).thumbnail).
bool hasThumbnail(ContentKind kind);

/// The bytes of `content` (of `kind`, starting at content[0]) that makeThumbnail reads with
/// `limits`: the first max_decode_bytes of a JPEG stream, the whole content of other kinds. Where
/// it is shorter than the content, the thumbnail shows the top part of the picture only.
llvm::ArrayRef<uint8_t> thumbnailInput(ContentKind kind, llvm::ArrayRef<uint8_t> content,
                                       const ThumbnailLimits &limits);

/// A thumbnail of `content` (which starts at content[0] and is of `kind`), or nullopt when the
/// kind has none, the content is too large for the limits, or it cannot be decoded. Bounded work
/// and memory: a JPEG decode reads at most max_decode_bytes of the stream at the smallest
/// TurboJPEG scale that keeps max_side; a PNG is inflated one row at a time; both are averaged
/// down to max_side as they are read. Never fails otherwise; thread-safe.
std::optional<Thumbnail> makeThumbnail(ContentKind kind, llvm::ArrayRef<uint8_t> content,
                                       const ThumbnailLimits &limits = {});

} // namespace dumpsift
