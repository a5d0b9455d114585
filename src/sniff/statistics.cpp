// Statistical kinds, tried when no signature matched: zero (every byte 0), text (ASCII/UTF-8),
// utf16 (LE/BE, with or without BOM) and random (Shannon entropy near 8 bits/byte over a sample).
// Each looks at a bounded part of the buffer, except the zero check, which stops at the first
// non-zero byte.
#include "common.h"
#include "dumpsift/support/bytes.h"

#include <array>
#include <cmath>
#include <cstring>

namespace dumpsift::sniffimpl {
namespace {

/// Text is validated over at most this many bytes; past that, its end is the first NUL within
/// kTextEndScan (else the buffer end, estimated).
constexpr size_t kTextScan = 8u << 10;
/// Buffers up to this size are checked for "all zero" completely; larger ones on a sample.
constexpr size_t kZeroFullCheck = 16u << 20;
constexpr size_t kZeroSampleWindow = 64u << 10;
constexpr unsigned kZeroSampleWindows = 64;
/// A runtime header (an object header, a length prefix) may precede text: starts up to this
/// offset are tried when the buffer does not start with text.
constexpr size_t kMaxHeaderSkip = 64;
constexpr unsigned kMaxSkipTries = 8;
/// The entropy sample: up to four 1 KiB windows spread over the buffer.
constexpr size_t kSampleWindow = 1024, kSampleBytes = 4 * kSampleWindow;

/// True when every byte of `d` is zero (memcmp against itself shifted by one: memory speed).
bool allZero(Bytes d) {
  return !d.empty() && d[0] == 0 &&
         (d.size() == 1 || std::memcmp(d.data(), d.data() + 1, d.size() - 1) == 0);
}

/// allZero on buffers up to kZeroFullCheck; above that, on kZeroSampleWindows windows spread
/// evenly, the first and the last included (`sampled` is then set).
bool zeroBuffer(Bytes d, bool &sampled) {
  sampled = d.size() > kZeroFullCheck;
  if (!sampled)
    return allZero(d);
  const size_t stride = (d.size() - kZeroSampleWindow) / (kZeroSampleWindows - 1);
  for (unsigned w = 0; w < kZeroSampleWindows; ++w)
    if (!allZero(d.slice(size_t(w) * stride, kZeroSampleWindow)))
      return false;
  return true;
}

/// True when none of the 8 bytes in `w` is below 0x20 or above 0x7e (SWAR: printable ASCII).
inline bool allPrintable8(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  const uint64_t below_space = (w - kOnes * 0x20) & ~w & kHigh; // some byte < 0x20 (or >= 0x80)
  const uint64_t del_or_high = (w + kOnes * 0x01) | w;          // some byte >= 0x7f
  return ((below_space | del_or_high) & kHigh) == 0;
}

enum class Stop : uint8_t { End, Nul, Invalid, Limit };

struct TextRun {
  size_t length = 0; // text bytes from the start
  Stop stop = Stop::End;
  bool non_ascii = false;
};

/// True for ASCII bytes that occur in text: printable, whitespace, BEL, BS, ESC.
bool isTextAscii(uint8_t c) {
  return (c >= 0x20 && c < 0x7f) || (c >= 0x07 && c <= 0x0d) || c == 0x1b;
}

/// The length of the UTF-8 sequence at d[i] (2-4) if well-formed (no overlongs, surrogates or
/// code points above U+10FFFF), 0 when invalid, SIZE_MAX when cut by `n`.
size_t utf8Sequence(Bytes d, size_t i, size_t n) {
  const uint8_t c = d[i];
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0)
      lo = 0xA0;
    if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0)
      lo = 0x90;
    if (c == 0xF4)
      hi = 0x8F;
  } else
    return 0;
  if (i + len > n)
    return SIZE_MAX;
  if (d[i + 1] < lo || d[i + 1] > hi)
    return 0;
  for (size_t k = 2; k < len; ++k)
    if (d[i + k] < 0x80 || d[i + k] > 0xBF)
      return 0;
  return len;
}

/// The run of ASCII/UTF-8 text starting at `start`, validated over at most kTextScan bytes.
TextRun scanText(Bytes d, size_t start) {
  TextRun run;
  const size_t n = std::min(d.size(), start + kTextScan);
  size_t i = start;
  while (i < n) {
    if (i + 8 <= n) { // fast path: eight printable ASCII bytes
      uint64_t w;
      std::memcpy(&w, d.data() + i, 8);
      if (allPrintable8(w)) {
        i += 8;
        continue;
      }
    }
    const uint8_t c = d[i];
    if (c < 0x80) {
      if (!isTextAscii(c)) {
        run.stop = c == 0 ? Stop::Nul : Stop::Invalid;
        break;
      }
      ++i;
      continue;
    }
    const size_t len = utf8Sequence(d, i, n);
    if (len == SIZE_MAX) {
      run.stop = n < d.size() ? Stop::Limit : Stop::End;
      break;
    }
    if (len == 0) {
      run.stop = Stop::Invalid;
      break;
    }
    run.non_ascii = true;
    i += len;
  }
  if (i >= n)
    run.stop = n < d.size() ? Stop::Limit : Stop::End;
  run.length = i - start;
  return run;
}

/// True when a text run at `start` is convincing: the whole buffer, or text ended by a NUL
/// (at least 16 bytes; 32 after a skipped header), or a long run ended by a binary byte.
bool acceptText(const TextRun &run, size_t start) {
  const size_t min_terminated = start ? 32 : 16;
  switch (run.stop) {
  case Stop::Limit:
    return true;
  case Stop::End:
    return run.length >= (start ? 32 : 4);
  case Stop::Nul:
    return run.length >= min_terminated;
  case Stop::Invalid:
    return run.length >= 256;
  }
  return false;
}

std::optional<SniffResult> classifyText(Bytes d) {
  size_t start = 0;
  TextRun run = scanText(d, 0);
  for (unsigned tries = 0; !acceptText(run, start) && tries < kMaxSkipTries; ++tries) {
    // Next candidate: the next printable byte within kMaxHeaderSkip, once a NUL has been seen
    // (runtime headers hold lengths and pointers; text damaged by a bad byte is not skipped).
    size_t s = start + std::max<size_t>(run.length, 1);
    bool zero_before = std::memchr(d.data(), 0, std::min(s, d.size())) != nullptr;
    while (s < d.size() && s < kMaxHeaderSkip && !(zero_before && d[s] >= 0x20 && d[s] < 0x7f))
      zero_before |= d[s++] == 0;
    if (s >= d.size() || s >= kMaxHeaderSkip)
      return std::nullopt;
    start = s;
    run = scanText(d, start);
  }
  if (!acceptText(run, start))
    return std::nullopt;
  uint64_t length = run.length;
  bool estimated = false;
  if (run.stop == Stop::Limit) {
    length = textEnd(d, start + run.length) - start;
    estimated = true;
  }
  SniffResult r = makeResult(ContentKind::Text, length, estimated);
  r.offset = start;
  r.details.set("encoding", std::string(run.non_ascii ? "utf-8" : "ascii"));
  r.details.set("nul_terminated", run.stop == Stop::Nul);
  return r;
}

// ---------------------------------------------------------------------------------------------
// UTF-16
// ---------------------------------------------------------------------------------------------

constexpr size_t kUtf16ScanUnits = 8192;
/// Without a BOM, a run that is neither mostly ASCII nor one script after this many units is
/// abandoned (random data looks like endless CJK otherwise).
constexpr size_t kUtf16Checkpoint = 32;

struct Utf16Run {
  size_t units = 0; // code units of text
  size_t ascii = 0; // of which printable ASCII or whitespace
  size_t same_high = 0, non_ascii = 0;
  Stop stop = Stop::End;
};

/// Scans UTF-16 code units from `start` in the given byte order: text characters, valid surrogate
/// pairs; stops at U+0000, a control character, a lone surrogate or a noncharacter.
Utf16Run scanUtf16(Bytes d, size_t start, bool big_endian, bool bom) {
  Utf16Run run;
  const size_t n = std::min(d.size(), start + 2 * kUtf16ScanUnits);
  uint8_t high = 0;
  size_t i = start;
  auto unit = [&](size_t at) {
    return big_endian ? read16be(d.data() + at) : read16le(d.data() + at);
  };
  while (i + 2 <= n) {
    if (!bom && run.units == kUtf16Checkpoint && run.ascii * 2 < run.units &&
        run.same_high * 5 < run.non_ascii * 4) {
      run.stop = Stop::Invalid;
      break;
    }
    const uint16_t u = unit(i);
    if (u == 0) {
      run.stop = Stop::Nul;
      break;
    }
    if (u < 0x80) {
      if (!isTextAscii(static_cast<uint8_t>(u)) || u == 0x7f) {
        run.stop = Stop::Invalid;
        break;
      }
      ++run.ascii;
      ++run.units;
      i += 2;
      continue;
    }
    if (u < 0xA0 || u == 0xFFFE || u == 0xFFFF || (u >= 0xDC00 && u <= 0xDFFF)) {
      run.stop = Stop::Invalid;
      break;
    }
    if (u >= 0xD800 && u <= 0xDBFF) {
      if (i + 4 > n) {
        run.stop = n < d.size() ? Stop::Limit : Stop::End;
        break;
      }
      const uint16_t low = unit(i + 2);
      if (low < 0xDC00 || low > 0xDFFF) {
        run.stop = Stop::Invalid;
        break;
      }
      run.units += 2;
      run.non_ascii += 2;
      i += 4;
      continue;
    }
    const uint8_t h = static_cast<uint8_t>(u >> 8);
    if (run.non_ascii == 0)
      high = h;
    run.same_high += h == high;
    ++run.non_ascii;
    ++run.units;
    i += 2;
  }
  if (i + 2 > n && run.stop == Stop::End && n < d.size())
    run.stop = Stop::Limit;
  return run;
}

/// Mostly ASCII (at least half the units) or one script (80% of the other units share a high
/// byte); long enough; ended by U+0000, the buffer, the scan limit or (when long) a bad unit.
bool acceptUtf16(const Utf16Run &run, size_t start, bool bom) {
  const size_t min_units = bom ? 4 : start ? 16 : 8;
  if (run.units < min_units || (run.stop == Stop::Invalid && run.units < 128))
    return false;
  if (bom)
    return true;
  return run.ascii * 2 >= run.units || (run.units >= 16 && run.same_high * 5 >= run.non_ascii * 4);
}

std::optional<SniffResult> classifyUtf16(Bytes d) {
  if (d.size() < 8)
    return std::nullopt;
  for (size_t start = 0; start <= kMaxHeaderSkip && start + 8 <= d.size(); start += 2) {
    // A skipped runtime header holds lengths and pointers: it has a NUL somewhere.
    if (start && !std::memchr(d.data(), 0, start))
      continue;
    bool bom = false, big_endian = false;
    size_t text = start;
    if (d[start] == 0xFF && d[start + 1] == 0xFE) {
      bom = true;
      text += 2;
    } else if (d[start] == 0xFE && d[start + 1] == 0xFF) {
      bom = big_endian = true;
      text += 2;
    }
    for (int order = 0; order < (bom ? 1 : 2); ++order) {
      const bool be = bom ? big_endian : order == 1;
      const Utf16Run run = scanUtf16(d, text, be, bom);
      if (!acceptUtf16(run, start, bom))
        continue;
      uint64_t length = text - start + 2 * run.units;
      bool estimated = false;
      if (run.stop == Stop::Limit) {
        length = d.size() - start;
        estimated = true;
      }
      SniffResult r = makeResult(ContentKind::Utf16, length, estimated);
      r.offset = start;
      r.details.set("byte_order", std::string(be ? "be" : "le"));
      r.details.set("bom", bom);
      r.details.set("code_units", uint64_t(run.units));
      r.details.set("nul_terminated", run.stop == Stop::Nul);
      return r;
    }
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Entropy
// ---------------------------------------------------------------------------------------------

/// c * log2(c) for every count a sample can hold (built once, thread-safe).
const std::array<float, kSampleBytes + 1> &countLogTable() {
  static const auto table = [] {
    std::array<float, kSampleBytes + 1> t{};
    for (size_t c = 1; c <= kSampleBytes; ++c)
      t[c] = static_cast<float>(double(c) * std::log2(double(c)));
    return t;
  }();
  return table;
}

/// Shannon entropy in bits/byte of a sample of `d` (all of it up to 4 KiB, else four 1 KiB
/// windows: start, one third, two thirds, end); `sampled` receives the sample size.
double sampleEntropy(Bytes d, size_t &sampled) {
  uint32_t hist[4][256] = {};
  auto add = [&](size_t from, size_t len) {
    const uint8_t *p = d.data() + from;
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
      ++hist[0][p[i]];
      ++hist[1][p[i + 1]];
      ++hist[2][p[i + 2]];
      ++hist[3][p[i + 3]];
    }
    for (; i < len; ++i)
      ++hist[0][p[i]];
  };
  if (d.size() <= kSampleBytes) {
    add(0, d.size());
    sampled = d.size();
  } else {
    const size_t third = (d.size() / 3) & ~size_t(63);
    add(0, kSampleWindow);
    add(third, kSampleWindow);
    add(2 * third, kSampleWindow);
    add(d.size() - kSampleWindow, kSampleWindow);
    sampled = kSampleBytes;
  }
  const auto &table = countLogTable();
  double sum = 0;
  for (int b = 0; b < 256; ++b)
    sum += table[hist[0][b] + hist[1][b] + hist[2][b] + hist[3][b]];
  const double n = double(sampled);
  return std::log2(n) - sum / n;
}

} // namespace

std::optional<SniffResult> classifyStatistics(Bytes buffer) {
  if (buffer.empty())
    return std::nullopt;
  bool sampled = false;
  if (zeroBuffer(buffer, sampled)) {
    SniffResult r = makeResult(ContentKind::Zero, buffer.size());
    if (sampled)
      r.details.set("sampled", true);
    return r;
  }
  if (std::optional<SniffResult> text = classifyText(buffer))
    return text;
  if (std::optional<SniffResult> utf16 = classifyUtf16(buffer))
    return utf16;
  size_t sample = 0;
  // Without the zero tail: the slack between a request and the allocation's usable size (an
  // mmapped chunk rounds up to a page) must not dilute the entropy of what was written.
  const Bytes content = buffer.take_front(contentEnd(buffer));
  const double entropy = sampleEntropy(content, sample);
  // Uniform random data gives about 7.95 bits/byte over 4 KiB and 7.8 over 1 KiB; deflate and
  // JPEG entropy-coded data come close, machine code and structures stay below 7.
  const double threshold = sample >= kSampleBytes ? 7.5 : 7.2;
  if (sample < kSampleWindow || entropy < threshold)
    return std::nullopt;
  SniffResult r = makeResult(ContentKind::Random, content.size());
  r.details.set("entropy", std::round(entropy * 1000) / 1000);
  return r;
}

} // namespace dumpsift::sniffimpl
