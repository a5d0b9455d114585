// JPEG (ITU-T T.81, JFIF, Exif). Two phases: a structural walk over marker segments and
// entropy-coded data gives the exact extent (SOI..EOI), the frame header facts and
// complete/truncated/corrupt at memchr speed; then, for images of sane size, a 1/8-scale TurboJPEG
// decode entropy-decodes the start of the data (whole files up to 256 KiB) to confirm it (libjpeg
// warnings such as "Premature end of JPEG file" are caught through tjGetErrorCode, never printed).
#include "common.h"

#include "llvm/Support/xxhash.h"

#include <cstring>
#include <map>
#include <mutex>
#include <turbojpeg.h>
#include <vector>

namespace dumpsift::sniffimpl {
namespace {

/// Decode budget: images above these pixel counts report header facts only. A 1/8-scale decode
/// costs about 1.6 ns per pixel for baseline files and ten times that for progressive ones (which
/// also buffer every coefficient: width x height x components x 2 bytes), so either cap bounds a
/// check at roughly 25 ms.
constexpr uint64_t kMaxDecodePixels = 16ull << 20;
constexpr uint64_t kMaxProgressiveDecodePixels = 2ull << 20;
/// Bytes of a stream that the decode check reads (see validate). A cut stream: enough to catch
/// junk behind a valid header, a small part of a 128 KiB upload slice. A complete one: small
/// files whole, the start of large photos (entropy decoding runs at about 120 MB/s, so a dump of
/// photos would otherwise be decoded far slower than it is read).
constexpr size_t kMaxTruncatedDecodeBytes = 4 * 1024;
constexpr size_t kMaxCompleteDecodeBytes = 256 * 1024;
/// Sane header segments needed before bytes that are not a marker for the headers alone to be a
/// JPEG (see validate).
constexpr unsigned kMinHeadersBeforeJunk = 2;

/// True for the start-of-frame markers SOF0-3, 5-7, 9-11, 13-15.
bool isSof(uint8_t m) {
  return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

/// True for markers followed by a length-prefixed segment that a decoder accepts (SOFn, DHT, DAC,
/// SOS, DQT, DNL, DRI, DHP, EXP, APPn, COM). Reserved and JPGn markers are not.
bool isSegmentMarker(uint8_t m) {
  return (m >= 0xC0 && m <= 0xCF && m != 0xC8) || (m >= 0xDA && m <= 0xDF) ||
         (m >= 0xE0 && m <= 0xEF) || m == 0xFE;
}

/// True when `m` may directly follow SOI in a real file (what quickCheck accepts).
bool plausibleFirstMarker(uint8_t m) {
  return (m >= 0xE0 && m <= 0xEF) || m == 0xDB || m == 0xC4 || m == 0xDD || m == 0xFE ||
         (isSof(m) && m != 0xC3);
}

enum class WalkEnd : uint8_t { Complete, Truncated, Corrupt };

/// What the structural walk learned.
struct JpegWalk {
  WalkEnd end = WalkEnd::Truncated;
  size_t length = 0; // EOI end (Complete), the buffer size (Truncated) or where damage starts
  bool sof = false, sos = false, progressive = false, lossless = false;
  bool jfif = false, exif = false;
  /// Complete segments before the first SOS whose content checks out (an APPn with a known
  /// identifier, sane DQT, DHT or SOF): the evidence that a buffer holding only headers is a JPEG.
  unsigned sane_headers = 0;
  size_t segments_end = 2; // just after the last marker segment walked (entropy data not included)
  unsigned width = 0, height = 0, components = 0, precision = 0, scans = 0;
  uint8_t h_samp[4] = {}, v_samp[4] = {};
};

/// Parses a SOF payload into `w`; false when the frame header is not sane.
bool parseSof(uint8_t marker, const uint8_t *seg, size_t seg_len, JpegWalk &w) {
  if (seg_len < 6)
    return false;
  const unsigned nf = seg[5];
  if (nf < 1 || nf > 4 || seg_len != 6 + 3 * size_t(nf))
    return false;
  w.precision = seg[0];
  w.height = read16be(seg + 1);
  w.width = read16be(seg + 3);
  w.components = nf;
  w.progressive = marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE;
  w.lossless = marker == 0xC3 || marker == 0xC7 || marker == 0xCB || marker == 0xCF;
  if (w.precision < 2 || w.precision > 16 || w.width == 0 || w.height == 0)
    return false; // height 0 would need DNL, which no decoder here supports
  for (unsigned c = 0; c < nf; ++c) {
    const uint8_t hv = seg[6 + 3 * c + 1];
    w.h_samp[c] = hv >> 4;
    w.v_samp[c] = hv & 15;
    if (w.h_samp[c] < 1 || w.h_samp[c] > 4 || w.v_samp[c] < 1 || w.v_samp[c] > 4)
      return false;
  }
  w.sof = true;
  return true;
}

/// True for a DQT payload made of whole tables, each with precision 0 or 1 and a destination 0-3.
bool saneDqt(const uint8_t *seg, size_t seg_len) {
  size_t q = 0;
  while (q < seg_len) {
    const unsigned precision = seg[q] >> 4, destination = seg[q] & 15;
    if (precision > 1 || destination > 3)
      return false;
    q += 1 + (precision ? 128 : 64);
  }
  return q == seg_len && seg_len > 0;
}

/// True for a DHT payload made of whole tables: class 0-1, destination 0-3, at most 256 codes.
bool saneDht(const uint8_t *seg, size_t seg_len) {
  size_t q = 0;
  while (q < seg_len) {
    if (q + 17 > seg_len || (seg[q] >> 4) > 1 || (seg[q] & 15) > 3)
      return false;
    size_t codes = 0;
    for (size_t i = 1; i <= 16; ++i)
      codes += seg[q + i];
    if (codes > 256)
      return false;
    q += 17 + codes;
  }
  return q == seg_len && seg_len > 0;
}

/// Notes a JFIF or Exif identifier at the start of an APP0/APP1 payload of which `avail` bytes
/// are in the buffer (a segment cut by the buffer's end still names its container).
void noteAppIdentifier(uint8_t m, const uint8_t *seg, size_t avail, JpegWalk &w) {
  if (m == 0xE0 && avail >= 5 &&
      (std::memcmp(seg, "JFIF\0", 5) == 0 || std::memcmp(seg, "JFXX\0", 5) == 0))
    w.jfif = true;
  else if (m == 0xE1 && avail >= 6 && std::memcmp(seg, "Exif\0\0", 6) == 0)
    w.exif = true;
}

/// Walks marker segments from after SOI, skipping each by its length and scanning entropy-coded
/// data for the marker that ends it (FF00 is stuffing, FFD0-D7 restarts, FF fill bytes).
/// Progressive files interleave DHT/SOS segments between scans; the walk handles them like any
/// segment. Linear in the buffer, no allocation, never reads outside `d`.
JpegWalk walkJpeg(Bytes d) {
  JpegWalk w;
  const size_t n = d.size();
  auto finish = [&](WalkEnd end, size_t length) {
    w.end = end;
    w.length = length;
    return w;
  };
  size_t p = 2;
  for (;;) {
    if (p >= n)
      return finish(WalkEnd::Truncated, n);
    if (d[p] != 0xFF)
      return finish(WalkEnd::Corrupt, p);
    while (p + 1 < n && d[p + 1] == 0xFF)
      ++p; // fill bytes before a marker
    if (p + 1 >= n)
      return finish(WalkEnd::Truncated, n);
    const uint8_t m = d[p + 1];
    if (m == 0xD9)
      return w.sos ? finish(WalkEnd::Complete, p + 2) : finish(WalkEnd::Corrupt, p);
    if ((m >= 0xD0 && m <= 0xD7) || m == 0x01) {
      p += 2; // stray standalone marker: tolerated, as decoders do
      continue;
    }
    if (!isSegmentMarker(m))
      return finish(WalkEnd::Corrupt, p);
    if (p + 4 > n)
      return finish(WalkEnd::Truncated, n);
    const size_t len = read16be(d.data() + p + 2);
    if (len < 2)
      return finish(WalkEnd::Corrupt, p);
    const uint8_t *seg = d.data() + p + 4;
    if (len > n - p - 2) {
      noteAppIdentifier(m, seg, n - p - 4, w);
      return finish(WalkEnd::Truncated, n);
    }
    const size_t seg_len = len - 2;
    const bool before_scans = !w.sos;
    if (isSof(m)) {
      if (w.sof || !parseSof(m, seg, seg_len, w))
        return finish(WalkEnd::Corrupt, p);
      w.sane_headers += before_scans;
    } else if (m == 0xDA) {
      const size_t ns = seg_len ? seg[0] : 0;
      if (!w.sof || ns < 1 || ns > 4 || seg_len != 1 + 2 * ns + 3)
        return finish(WalkEnd::Corrupt, p);
      w.sos = true;
      ++w.scans;
    } else if (m == 0xE0 || m == 0xE1) {
      const bool known = w.jfif || w.exif;
      noteAppIdentifier(m, seg, seg_len, w);
      w.sane_headers += before_scans && (w.jfif || w.exif) && !known;
    } else if (m == 0xDB) {
      w.sane_headers += before_scans && saneDqt(seg, seg_len);
    } else if (m == 0xC4) {
      w.sane_headers += before_scans && saneDht(seg, seg_len);
    }
    p += 2 + len;
    w.segments_end = p;
    if (m != 0xDA)
      continue;
    // Entropy-coded data: find the marker that ends it.
    for (;;) {
      const void *hit = p < n ? std::memchr(d.data() + p, 0xFF, n - p) : nullptr;
      if (!hit)
        return finish(WalkEnd::Truncated, n);
      const size_t i = static_cast<size_t>(static_cast<const uint8_t *>(hit) - d.data());
      if (i + 1 >= n)
        return finish(WalkEnd::Truncated, n);
      const uint8_t x = d[i + 1];
      if (x == 0x00 || (x >= 0xD0 && x <= 0xD7)) {
        p = i + 2;
      } else if (x == 0xFF) {
        p = i + 1;
      } else {
        p = i; // a marker: EOI, or DHT/SOS/... between progressive scans
        break;
      }
    }
  }
}

/// "4:2:0" and friends from the sampling factors of the frame header.
const char *subsamplingName(const JpegWalk &w) {
  if (w.components == 1)
    return "gray";
  for (unsigned c = 1; c < w.components; ++c)
    if (w.h_samp[c] != 1 || w.v_samp[c] != 1)
      return "other";
  const unsigned h = w.h_samp[0], v = w.v_samp[0];
  if (h == 1 && v == 1)
    return "4:4:4";
  if (h == 2 && v == 1)
    return "4:2:2";
  if (h == 2 && v == 2)
    return "4:2:0";
  if (h == 1 && v == 2)
    return "4:4:0";
  if (h == 4 && v == 1)
    return "4:1:1";
  return "other";
}

/// One TurboJPEG decompressor per thread, destroyed with the thread.
class ThreadDecompressor {
public:
  ThreadDecompressor() : handle_(tjInitDecompress()) {}
  ~ThreadDecompressor() {
    if (handle_)
      tjDestroy(handle_);
  }
  ThreadDecompressor(const ThreadDecompressor &) = delete;
  ThreadDecompressor &operator=(const ThreadDecompressor &) = delete;
  tjhandle get() const { return handle_; }

private:
  tjhandle handle_;
};

enum class DecodeOutcome : uint8_t { Ok, Truncated, Damaged };

struct DecodeCheck {
  DecodeOutcome outcome = DecodeOutcome::Ok;
  std::string message; // libjpeg's warning or error, when not Ok
};

/// Decodes `jpeg` at 1/8 scale (entropy-decodes every scan, skips most IDCT work) into a
/// thread-local scratch buffer. Truncation shows as TJERR_WARNING "Premature end of JPEG file";
/// other warnings and fatal errors mean damage. The caller has capped the pixel count.
DecodeCheck decodeCheck(Bytes jpeg) {
  thread_local ThreadDecompressor decompressor;
  thread_local std::vector<unsigned char> scratch;
  DecodeCheck check;
  tjhandle h = decompressor.get();
  if (!h) {
    check.outcome = DecodeOutcome::Damaged;
    check.message = "cannot create a TurboJPEG decompressor";
    return check;
  }
  const auto *buf = jpeg.data();
  const auto size = static_cast<unsigned long>(jpeg.size());
  auto fail = [&](int rc) {
    if (rc == 0)
      return false;
    check.message = tjGetErrorStr2(h);
    const bool warning = tjGetErrorCode(h) == TJERR_WARNING;
    check.outcome = warning && check.message.find("Premature end of JPEG file") != std::string::npos
                        ? DecodeOutcome::Truncated
                        : DecodeOutcome::Damaged;
    return true;
  };
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (fail(tjDecompressHeader3(h, buf, size, &width, &height, &subsamp, &colorspace)))
    return check;
  const tjscalingfactor eighth = {1, 8};
  const int sw = TJSCALED(width, eighth), sh = TJSCALED(height, eighth);
  const int pf = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK ? TJPF_CMYK : TJPF_GRAY;
  scratch.resize(size_t(sw) * size_t(sh) * size_t(tjPixelSize[pf]));
  fail(tjDecompress2(h, buf, size, scratch.data(), sw, 0, sh, pf,
                     TJFLAG_FASTDCT | TJFLAG_FASTUPSAMPLE | TJFLAG_LIMITSCANS |
                         TJFLAG_STOPONWARNING));
  return check;
}

/// Decode checks already made, by the checked bytes' length and xxHash64: an image held in several
/// buffers (copies, the same file in different framings, slices of one upload) is decoded once.
/// Holds at most kMaxEntries results (it starts over when full). Safe to use from any thread.
class DecodeMemo {
public:
  /// decodeCheck(stream), or the result of an earlier check of the same bytes.
  DecodeCheck check(Bytes stream) {
    const std::pair<uint64_t, uint64_t> key{stream.size(), llvm::xxHash64(stream)};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = results_.find(key); it != results_.end())
        return it->second;
    }
    DecodeCheck result = decodeCheck(stream);
    std::lock_guard<std::mutex> lock(mutex_);
    if (results_.size() >= kMaxEntries)
      results_.clear();
    results_.emplace(key, result);
    return result;
  }

private:
  static constexpr size_t kMaxEntries = 4096;
  std::mutex mutex_;
  std::map<std::pair<uint64_t, uint64_t>, DecodeCheck> results_;
};

class JpegSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Jpeg; }

  /// FF D8 FF followed by a marker that can follow SOI.
  bool quickCheck(Bytes head) const override {
    return head.size() >= 4 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF &&
           plausibleFirstMarker(head[3]);
  }

  /// The region scan looks for SOI.
  llvm::StringRef scanLeadBytes() const override { return "\xff"; }

  /// SOI + APPn/DQT/SOF...: anchored on D8 (FF is too common in dumps), then FF on both sides.
  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    size_t i = from + 1;
    const size_t end = std::min(buffer.size(), limit + 1); // D8 at i means SOI at i - 1 < limit
    while (i < end) {
      const void *hit = std::memchr(buffer.data() + i, 0xD8, end - i);
      if (!hit)
        return kNoCandidate;
      i = static_cast<size_t>(static_cast<const uint8_t *>(hit) - buffer.data());
      if (i + 1 < buffer.size() && buffer[i - 1] == 0xFF && buffer[i + 1] == 0xFF)
        return i - 1;
      ++i;
    }
    return kNoCandidate;
  }

  /// Structural walk, then (within the pixel budget) the 1/8-scale decode check.
  std::optional<SniffResult> validate(Bytes data) const override {
    if (!quickCheck(data.take_front(kHeadBytes)))
      return std::nullopt;
    JpegWalk w = walkJpeg(data);
    if (!w.sos) {
      // Headers only (the first bytes of an image, copied into a buffer of their own): a JPEG when
      // they check out. Cut by the buffer's end: a JFIF/Exif identifier or one sane segment is
      // enough. Followed by bytes that are not a marker: the headers end there, which needs two
      // sane segments (magic and one segment, then junk, is not a JPEG).
      const bool cut = w.end == WalkEnd::Truncated && (w.jfif || w.exif || w.sane_headers >= 1);
      const bool followed = w.end == WalkEnd::Corrupt && w.sane_headers >= kMinHeadersBeforeJunk;
      if (!cut && !followed)
        return std::nullopt;
      w.end = WalkEnd::Truncated;
    }

    WalkEnd status = w.end;
    bool decoded = false;
    std::string warning;
    const char *skipped = nullptr;
    const uint64_t pixels = uint64_t(w.width) * w.height;
    if (!w.sos)
      skipped = "no scan data";
    else if (w.precision != 8 || w.lossless)
      skipped = "unsupported precision or lossless coding";
    else if (pixels > (w.progressive ? kMaxProgressiveDecodePixels : kMaxDecodePixels))
      skipped = "too many pixels";
    if (!skipped) {
      // A stream the walk found cut stays truncated whatever the decode says: decode only its
      // first kMaxTruncatedDecodeBytes, which bounds the cost of a large slice. Other streams
      // longer than kMaxCompleteDecodeBytes are decoded up to there, where the decoder's
      // "premature end" is expected and not a finding.
      const size_t budget =
          w.end == WalkEnd::Truncated ? kMaxTruncatedDecodeBytes : kMaxCompleteDecodeBytes;
      const Bytes whole = w.end == WalkEnd::Complete ? data.take_front(w.length) : data;
      const Bytes stream = whole.take_front(budget);
      static DecodeMemo memo;
      DecodeCheck check = memo.check(stream);
      decoded = true;
      if (w.end != WalkEnd::Truncated && stream.size() < whole.size() &&
          check.outcome == DecodeOutcome::Truncated)
        check = DecodeCheck{};
      if (check.outcome != DecodeOutcome::Ok) {
        warning = std::move(check.message);
        if (status == WalkEnd::Complete)
          status =
              check.outcome == DecodeOutcome::Truncated ? WalkEnd::Truncated : WalkEnd::Corrupt;
      }
    }

    SniffResult r = makeResult(ContentKind::Jpeg, w.length, w.end != WalkEnd::Complete);
    r.structure_length = std::min(w.segments_end, w.length);
    if (!w.sos) { // what headers alone give: the container (and the frame header's facts below)
      r.details.set("header_only", true);
      if (w.jfif || w.exif)
        r.details.set("container", std::string(w.exif ? "exif" : "jfif"));
    }
    if (w.sof) {
      r.setDimensions(uint64_t(w.width), uint64_t(w.height));
      r.details.set("components", uint64_t(w.components));
      r.details.set("precision", uint64_t(w.precision));
      r.details.set("progressive", w.progressive);
      r.details.set("subsampling", std::string(subsamplingName(w)));
    }
    r.setComplete(status == WalkEnd::Complete);
    r.setTruncated(status == WalkEnd::Truncated);
    r.details.set("status", std::string(status == WalkEnd::Complete    ? "complete"
                                        : status == WalkEnd::Truncated ? "truncated"
                                                                       : "corrupt"));
    r.details.set("length", uint64_t(r.length));
    r.details.set("decoded", decoded);
    if (skipped)
      r.details.set("decode_skipped", std::string(skipped));
    if (!warning.empty())
      r.details.set("warning", std::move(warning));
    return r;
  }
};

} // namespace

bool isJpegEntropyCoded(Bytes data) {
  constexpr size_t kWindow = 64 * 1024;
  constexpr unsigned kMinStuffedBytes = 8;
  const Bytes window = data.take_front(kWindow);
  unsigned stuffed = 0;
  for (size_t p = 0; p + 1 < window.size();) {
    const void *hit = std::memchr(window.data() + p, 0xFF, window.size() - 1 - p);
    if (!hit)
      break;
    const size_t i = static_cast<size_t>(static_cast<const uint8_t *>(hit) - window.data());
    const uint8_t next = window[i + 1];
    if (next == 0xD9)
      break; // EOI: the image ends here
    if (next != 0x00 && next != 0xFF && (next < 0xD0 || next > 0xD7))
      return false;
    stuffed += next == 0x00;
    p = i + 1;
  }
  return stuffed >= kMinStuffedBytes;
}

std::unique_ptr<Sniffer> makeJpegSniffer() {
  return std::make_unique<JpegSniffer>();
}

} // namespace dumpsift::sniffimpl
