// The analysis report as one self-contained HTML page a person opens in a browser
// (docs/html-report.md): the dump, the heaps, the kinds, a size histogram, the size groups with
// their buffers (hex previews, thumbnails of images), the findings.
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"
#include "dumpsift/extract/extract.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace dumpsift {

struct HtmlOptions {
  size_t thumbnails = 200;            // thumbnails made at most (largest groups first)
  uint64_t thumbnail_bytes = 2 << 20; // and at most this many bytes of them
  size_t groups = 1000;               // size groups listed at most (largest first)
  size_t buffers_per_group = 40;      // buffers listed per group at most (by address)
  size_t buffers = 2000;              // buffers listed at most in all
  /// With an extraction: the directory its files are linked from, as the page sees it (relative
  /// to the page's directory, or absolute).
  std::string extract_href;
};

/// Writes the page to `out`. Self-contained: styles, script and images inline; its
/// Content-Security-Policy forbids every request. Readable without script (the script only sorts
/// and filters). Everything that comes from the dump is HTML-escaped. Deterministic; streamed
/// (one buffer at a time); bounded by `options`, and it says what it left out. Reads the buffers'
/// first bytes and the images from `memory` (zero-copy, but for one image at a time).
void writeReportHtml(const Snapshot &snapshot, const AddressSpace &memory, const Analysis &analysis,
                     const Extraction *extracted, const HtmlOptions &options,
                     llvm::raw_ostream &out);

} // namespace dumpsift
