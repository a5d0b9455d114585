// Container documents: ZIP (PKWARE APPNOTE: local file headers, central directory, end of central
// directory) and PDF (ISO 32000: "%PDF-x.y" header, the last "%%EOF" as the end).
#include "common.h"

#include <algorithm>
#include <cstring>

namespace dumpsift::sniffimpl {
namespace {

// ---------------------------------------------------------------------------------------------
// ZIP
// ---------------------------------------------------------------------------------------------

constexpr unsigned kMaxZipEntries = 1u << 16;
/// How far the end-of-central-directory search may scan when local headers cannot be skipped
/// (streamed entries with a data descriptor).
constexpr size_t kZipScanBudget = 64u << 20;

/// True for compression methods in APPNOTE 4.4.5 that writers use.
bool knownZipMethod(unsigned m) {
  return m <= 9 || m == 12 || m == 14 || m == 93 || m == 95 || m == 98 || m == 99;
}

const char *zipMethodName(unsigned m) {
  switch (m) {
  case 0:
    return "stored";
  case 8:
    return "deflate";
  case 9:
    return "deflate64";
  case 12:
    return "bzip2";
  case 14:
    return "lzma";
  case 93:
    return "zstd";
  case 95:
    return "xz";
  case 99:
    return "aes";
  default:
    return "other";
  }
}

/// Local file header at `p` is sane: version, method, a non-empty name without NUL bytes.
bool localHeaderOk(Bytes d, size_t p) {
  if (d.size() - p < 30 || !hasAt(d, p, "PK\x03\x04"))
    return false;
  const uint8_t *h = d.data() + p;
  const unsigned version = h[4], method = read16le(h + 8), name_len = read16le(h + 26);
  if (version > 100 || !knownZipMethod(method) || name_len == 0 || name_len > 4096)
    return false;
  const size_t name_avail = std::min<size_t>(name_len, d.size() - p - 30);
  return std::memchr(h + 30, 0, name_avail) == nullptr;
}

class ZipSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Zip; }

  bool quickCheck(Bytes head) const override {
    return head.size() >= 10 && startsWith(head, "PK\x03\x04") && head[4] <= 100 &&
           knownZipMethod(read16le(head.data() + 8));
  }

  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    return findLiteral(buffer, from, limit, "PK\x03\x04");
  }

  /// The region scan looks for a local file header.
  llvm::StringRef scanLeadBytes() const override { return "P"; }

  /// Walks local headers (skipping each entry by its compressed size), then the central directory
  /// to the end record; the extent ends after the end record's comment. Entries with a data
  /// descriptor stop the walk; the end record is then searched for (bounded) and accepted only if
  /// its directory offset and size point back to where it is.
  std::optional<SniffResult> validate(Bytes d) const override {
    if (!localHeaderOk(d, 0))
      return std::nullopt;
    const uint8_t *first = d.data();
    const unsigned method = read16le(first + 8);
    const std::string first_name =
        printableString(d.slice(30, std::min<size_t>(read16le(first + 26), d.size() - 30)), 256);
    const bool encrypted = read16le(first + 6) & 1;

    size_t p = 0;
    uint64_t entries = 0;
    bool walk_stopped = false; // could not skip an entry: search for the end record instead
    while (entries < kMaxZipEntries && localHeaderOk(d, p)) {
      const uint8_t *h = d.data() + p;
      const uint16_t flags = read16le(h + 6);
      const uint64_t csize = read32le(h + 18);
      if ((flags & 0x08) || csize == 0xFFFFFFFFu) {
        walk_stopped = true;
        break;
      }
      ++entries;
      p += 30 + size_t(read16le(h + 26)) + read16le(h + 28) + csize;
      if (p > d.size())
        break;
    }
    std::optional<size_t> end;
    if (!walk_stopped && p <= d.size()) {
      while (p <= d.size() && d.size() - p >= 46 && hasAt(d, p, "PK\x01\x02")) {
        const uint8_t *c = d.data() + p;
        p += 46 + size_t(read16le(c + 28)) + read16le(c + 30) + read16le(c + 32);
      }
      if (p <= d.size() && d.size() - p >= 22 && hasAt(d, p, "PK\x05\x06")) {
        const size_t e = p + 22 + read16le(d.data() + p + 20);
        if (e <= d.size())
          end = e;
      }
    } else if (walk_stopped) {
      const size_t scan_end = std::min(d.size(), kZipScanBudget);
      for (size_t q = findLiteralIn(d, p, scan_end, "PK\x05\x06"); q != kNoCandidate;
           q = findLiteralIn(d, q + 1, scan_end, "PK\x05\x06")) {
        if (d.size() - q < 22)
          break;
        const uint64_t cd_size = read32le(d.data() + q + 12),
                       cd_offset = read32le(d.data() + q + 16);
        const size_t e = q + 22 + read16le(d.data() + q + 20);
        if (cd_offset + cd_size == q && e <= d.size()) {
          end = e;
          entries = read16le(d.data() + q + 10);
          break;
        }
      }
    }
    SniffResult r = makeResult(ContentKind::Zip, end ? *end : d.size(), !end);
    r.details.set("first_name", first_name);
    r.details.set("method", std::string(zipMethodName(method)));
    r.details.set("encrypted", encrypted);
    r.details.set("entry_count", entries);
    r.setComplete(end.has_value());
    return r;
  }
};

// ---------------------------------------------------------------------------------------------
// PDF
// ---------------------------------------------------------------------------------------------

/// How far the "%%EOF" search may scan.
constexpr size_t kPdfScanBudget = 64u << 20;

class PdfSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Pdf; }

  /// "%PDF-" digit "." digit.
  bool quickCheck(Bytes head) const override {
    return head.size() >= 8 && startsWith(head, "%PDF-") && head[5] >= '1' && head[5] <= '2' &&
           head[6] == '.' && head[7] >= '0' && head[7] <= '9';
  }

  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    return findLiteral(buffer, from, limit, "%PDF-");
  }

  /// The region scan looks for the header.
  llvm::StringRef scanLeadBytes() const override { return "%"; }

  /// The header line must end (EOL) right after the version; the extent is the last "%%EOF" (plus
  /// its EOL) within the scan budget. Incremental updates append sections, each with its own
  /// %%EOF, so the count is reported too.
  std::optional<SniffResult> validate(Bytes d) const override {
    if (!quickCheck(d.take_front(kHeadBytes)) || d.size() < 9)
      return std::nullopt;
    size_t q = 8;
    while (q < d.size() && q < 16 && d[q] == ' ')
      ++q;
    if (q >= d.size() || (d[q] != '\r' && d[q] != '\n'))
      return std::nullopt;
    const size_t scan_end = std::min(d.size(), kPdfScanBudget);
    size_t end = 0;
    uint64_t eof_markers = 0;
    for (size_t hit = findLiteralIn(d, 8, scan_end, "%%EOF"); hit != kNoCandidate;
         hit = findLiteralIn(d, hit + 5, scan_end, "%%EOF")) {
      ++eof_markers;
      end = hit + 5;
      if (end < d.size() && d[end] == '\r')
        ++end;
      if (end < d.size() && d[end] == '\n')
        ++end;
    }
    const bool complete = eof_markers > 0;
    SniffResult r = makeResult(ContentKind::Pdf, complete ? end : d.size(), !complete);
    r.details.set("version", std::string(reinterpret_cast<const char *>(d.data()) + 5, 3));
    r.details.set("linearized", findLiteralIn(d, 0, 1024, "/Linearized") != kNoCandidate);
    r.details.set("eof_markers", eof_markers);
    r.setComplete(complete);
    return r;
  }
};

} // namespace

std::unique_ptr<Sniffer> makeZipSniffer() {
  return std::make_unique<ZipSniffer>();
}
std::unique_ptr<Sniffer> makePdfSniffer() {
  return std::make_unique<PdfSniffer>();
}

} // namespace dumpsift::sniffimpl
