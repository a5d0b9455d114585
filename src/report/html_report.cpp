// The HTML report (html_report.h, docs/html-report.md).
#include "dumpsift/report/html_report.h"

#include "dumpsift/report/html_page.h"
#include "dumpsift/sniff/thumbnail.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "group_labels.h"

#include "llvm/Support/Base64.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace dumpsift {

namespace {

using Bytes = llvm::ArrayRef<uint8_t>;

/// The colour a kind has in the bars and the histogram.
llvm::StringRef kindColour(ContentKind kind) {
  return kindFacts(kind).colour;
}

/// Identical buffers: same size, same captured bytes (by their hash).
using ContentKey = std::tuple<uint64_t, uint64_t, uint64_t>;
ContentKey contentKey(const Buffer &b) {
  return {b.allocation.size, b.captured, b.hash};
}

/// "width=640 height=480 truncated=true ...", at most about `limit` characters.
std::string detailsText(const Details &details, size_t limit = 400) {
  std::string out;
  for (const auto &[key, value] : details.entries) {
    std::string v = std::visit(
        [](const auto &x) -> std::string {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>)
            return x ? "true" : "false";
          else if constexpr (std::is_same_v<T, std::string>)
            return x;
          else if constexpr (std::is_same_v<T, std::vector<uint64_t>>)
            return "[" + std::to_string(x.size()) + " values]";
          else if constexpr (std::is_same_v<T, double>)
            return oneDecimal(x);
          else
            return std::to_string(x);
        },
        value);
    out += (out.empty() ? "" : " ") + key + "=" + v;
    if (out.size() > limit)
      return out.substr(0, limit) + "...";
  }
  return out;
}

/// The first bytes as hex and ASCII, 16 a line.
std::string hexPreview(Bytes bytes) {
  std::string out;
  for (size_t line = 0; line < bytes.size(); line += 16) {
    const Bytes row = bytes.slice(line, std::min<size_t>(16, bytes.size() - line));
    std::string hex, ascii;
    for (size_t i = 0; i < 16; ++i) {
      if (i < row.size()) {
        hex += "0123456789abcdef"[row[i] >> 4];
        hex += "0123456789abcdef"[row[i] & 15];
        hex += ' ';
        ascii += row[i] >= 0x20 && row[i] < 0x7f ? char(row[i]) : '.';
      } else {
        hex += "   ";
      }
    }
    out += (out.empty() ? "" : "\n") + hex + " " + ascii;
  }
  return out;
}

/// The image content a buffer holds or carries, as the thumbnail is made from.
struct ImageSource {
  ContentKind kind = ContentKind::Unknown;
  Bytes bytes;                 // contiguous: a view into the dump, or into `joined`
  std::vector<uint8_t> joined; // the start of a payload in several pieces, copied
  std::string via;             // "" for the buffer itself, "payload", "body 2", "http body"
  bool cut = false;            // the image goes on past the bytes the dump or the buffer holds
};

/// The image in `buffer`: its content when that is an image, else the image payload its framing
/// carries (aws-chunked, amqp: the first payload the sniffer decodes, when the sniff found it to
/// be an image), else the image body of a message with a head (http). At most `max_cut_bytes` of
/// a payload in pieces that is cut, and `max_bytes` of one that is not, are copied.
std::optional<ImageSource> imageIn(const AddressSpace &memory, const Buffer &buffer,
                                   uint64_t max_bytes, uint64_t max_cut_bytes) {
  const SniffResult &content = buffer.content;
  const Bytes payload = capturedPayload(memory, buffer);
  if (payload.size() <= content.offset)
    return std::nullopt;
  const Bytes from_content = payload.drop_front(content.offset);
  ImageSource source;
  if (hasThumbnail(content.kind)) {
    source.kind = content.kind;
    source.bytes = content.length ? from_content.take_front(content.length) : from_content;
    source.cut = content.truncated.value_or(false);
    return source;
  }
  if (const std::optional<MessageBody> &body = content.body) {
    if (!body->kind || !hasThumbnail(*body->kind) || body->transfer_coded ||
        body->offset >= from_content.size())
      return std::nullopt;
    source.kind = *body->kind;
    source.bytes = from_content.take_front(content.length).drop_front(body->offset);
    source.via = "http body";
    source.cut = !content.complete.value_or(false);
    return source;
  }
  // Framed content: the sniff named the kind its (first) payload holds; the sniffer decodes the
  // payloads as views into the dump, and the start of the first is joined.
  const Sniffer *sniffer = snifferFor(content.kind);
  if (!content.payload_kind || !hasThumbnail(*content.payload_kind) || !sniffer)
    return std::nullopt;
  std::vector<Payload> payloads = sniffer->decodePayloads(from_content);
  if (payloads.empty())
    return std::nullopt;
  const Payload &first = payloads.front();
  source.kind = *content.payload_kind;
  source.via = first.message_body ? "body 1" : "payload";
  // An upload without its final chunk holds a part of its payload.
  source.cut = first.cut || !content.final_chunk.value_or(true);
  const uint64_t limit = source.cut ? max_cut_bytes : max_bytes;
  for (Bytes piece : first.pieces) {
    const size_t take = std::min<uint64_t>(piece.size(), limit - source.joined.size());
    source.joined.insert(source.joined.end(), piece.begin(), piece.begin() + take);
    if (source.joined.size() >= limit)
      break;
  }
  source.bytes = source.joined;
  return source;
}

/// Bytes of a cut JPEG stream that its thumbnail decodes: it shows a top part in any case, and
/// slices of uploads are many (a complete stream decodes up to ThumbnailLimits::max_decode_bytes).
constexpr uint64_t kCutDecodeBytes = 64 << 10;

class HtmlWriter {
public:
  HtmlWriter(const Snapshot &snapshot, const AddressSpace &memory, const Analysis &analysis,
             const Extraction *extracted, const HtmlOptions &options, llvm::raw_ostream &out)
      : snapshot_(snapshot), memory_(memory), analysis_(analysis), options_(options), out_(out) {
    planListing();
    for (const Buffer &b : analysis.buffers)
      ++copies_[contentKey(b)];
    if (extracted)
      for (const ExtractedFile &f : extracted->files)
        files_[f.address].push_back(&f);
  }

  void write() {
    writeHtmlPageStart(out_, "dumpsift: " + snapshot_.path);
    writeSummary();
    writeKinds();
    writeHistogram();
    writeFindings();
    writeGroups();
    writeWarnings();
    writeHtmlPageEnd(out_);
  }

private:
  /// Which groups and buffers are listed: the largest groups first, each one's first buffers by
  /// address, within the limits.
  void planListing() {
    listed_.assign(analysis_.buffers.size(), false);
    size_t rows = 0;
    for (size_t g = 0; g < analysis_.groups.size() && g < options_.groups; ++g) {
      const SizeGroup &group = analysis_.groups[g];
      for (size_t i = 0; i < group.members.size() && i < options_.buffers_per_group; ++i) {
        if (rows >= options_.buffers)
          return;
        listed_[group.members[i]] = true;
        ++rows;
      }
    }
  }

  bool isListed(uint64_t address) const {
    auto it =
        std::lower_bound(analysis_.buffers.begin(), analysis_.buffers.end(), address,
                         [](const Buffer &b, uint64_t a) { return b.allocation.address < a; });
    return it != analysis_.buffers.end() && it->allocation.address == address &&
           listed_[size_t(it - analysis_.buffers.begin())];
  }

  uint64_t totalBytes() const {
    uint64_t total = 0;
    for (const Buffer &b : analysis_.buffers)
      total += b.allocation.size;
    return total;
  }

  void writeSummary() {
    out_ << "<h1>dumpsift report</h1>\n<p class=\"line\">"
         << htmlEscape(detail::dumpLine(snapshot_)) << "</p>\n";
    if (!snapshot_.process.command_line.empty())
      out_ << "<p class=\"line\">command line: " << htmlEscape(snapshot_.process.command_line)
           << "</p>\n";
    out_ << "<p class=\"line\">heaps: " << htmlEscape(detail::heapsLine(analysis_)) << "</p>\n"
         << "<p class=\"line\">large buffers (&gt;= " << groupedDigits(analysis_.options.min_size)
         << " bytes): " << groupedDigits(analysis_.buffers.size()) << " buffers, "
         << humanBytes(totalBytes()) << ", " << groupedDigits(analysis_.groups.size())
         << " size groups</p>\n";
  }

  /// The bytes of each kind, as one stacked bar and its legend.
  void writeKinds() {
    std::map<ContentKind, std::pair<uint64_t, uint64_t>> kinds; // count, bytes
    for (const Buffer &b : analysis_.buffers) {
      auto &[count, bytes] = kinds[b.content.kind];
      ++count;
      bytes += b.allocation.size;
    }
    const uint64_t total = totalBytes();
    out_ << "<h2>Kinds</h2>\n";
    if (!total) {
      out_ << "<p>No buffer at or above the size threshold.</p>\n";
      return;
    }
    out_ << "<svg id=\"kinds\" viewBox=\"0 0 1000 28\" role=\"img\" aria-label=\"bytes by kind\">";
    double x = 0;
    for (const auto &[kind, figures] : kinds) {
      const double w = 1000.0 * double(figures.second) / double(total);
      out_ << "<rect x=\"" << oneDecimal(x) << "\" y=\"0\" width=\"" << oneDecimal(w)
           << "\" height=\"28\" fill=\"" << kindColour(kind) << "\"><title>" << kindName(kind)
           << ": " << groupedDigits(figures.first) << " buffers, " << humanBytes(figures.second)
           << "</title></rect>";
      x += w;
    }
    out_ << "</svg>\n<p class=\"legend\">";
    for (const auto &[kind, figures] : kinds)
      out_ << "<span><svg width=\"10\" height=\"10\" viewBox=\"0 0 10 10\" class=\"sw\"><rect "
              "width=\"10\" height=\"10\" fill=\""
           << kindColour(kind) << "\"/></svg> " << kindName(kind) << " x"
           << groupedDigits(figures.first) << ", " << humanBytes(figures.second) << " ("
           << oneDecimal(100.0 * double(figures.second) / double(total)) << "%)</span>";
    out_ << "</p>\n";
  }

  /// Bytes by size: one bar per listed group at its size (log scale), as high as its bytes,
  /// coloured by its most common kind.
  void writeHistogram() {
    const size_t shown = std::min(analysis_.groups.size(), options_.groups);
    if (!shown)
      return;
    uint64_t lo = UINT64_MAX, hi = 0, top = 1;
    for (size_t g = 0; g < shown; ++g) {
      lo = std::min(lo, analysis_.groups[g].size);
      hi = std::max(hi, analysis_.groups[g].size);
      top = std::max(top, analysis_.groups[g].total_bytes);
    }
    const int lo_exp = int(std::floor(std::log2(double(std::max<uint64_t>(lo, 1)))));
    const int hi_exp = std::max(lo_exp + 1, int(std::ceil(std::log2(double(hi) + 1))));
    constexpr double left = 70, right = 950, base = 230, height = 210;
    auto xOf = [&](double size) {
      return left + (right - left) * (std::log2(size) - lo_exp) / double(hi_exp - lo_exp);
    };
    out_ << "<h2>Bytes by buffer size</h2>\n<svg id=\"histogram\" viewBox=\"0 0 1000 260\" "
            "role=\"img\" aria-label=\"bytes by buffer size\">"
         << "<line x1=\"" << oneDecimal(left) << "\" y1=\"" << oneDecimal(base) << "\" x2=\""
         << oneDecimal(right) << "\" y2=\"" << oneDecimal(base) << "\" stroke=\"#888\"/>";
    for (int e = lo_exp; e <= hi_exp; ++e) {
      const std::string x = oneDecimal(xOf(std::ldexp(1.0, e)));
      out_ << "<line x1=\"" << x << "\" y1=\"" << oneDecimal(base) << "\" x2=\"" << x << "\" y2=\""
           << oneDecimal(base + 4) << "\" stroke=\"#888\"/><text x=\"" << x << "\" y=\""
           << oneDecimal(base + 17) << "\" text-anchor=\"middle\">"
           << humanBytes(uint64_t(1) << std::min(e, 63)) << "</text>";
    }
    for (int i = 0; i <= 2; ++i) {
      const double y = base - height * i / 2.0;
      out_ << "<line x1=\"" << oneDecimal(left) << "\" y1=\"" << oneDecimal(y) << "\" x2=\""
           << oneDecimal(right) << "\" y2=\"" << oneDecimal(y) << "\" stroke=\"#eee\"/><text x=\""
           << oneDecimal(left - 6) << "\" y=\"" << oneDecimal(y + 4) << "\" text-anchor=\"end\">"
           << humanBytes(top * i / 2) << "</text>";
    }
    // Smallest groups last, so that a tall bar never hides a short one at the same size.
    for (size_t g = 0; g < shown; ++g) {
      const SizeGroup &group = analysis_.groups[g];
      const double h = std::max(1.0, height * double(group.total_bytes) / double(top));
      const ContentKind kind = group.kinds.empty() ? ContentKind::Unknown : group.kinds[0].first;
      out_ << "<a href=\"#g" << g << "\"><rect class=\"bar\" x=\""
           << oneDecimal(xOf(double(group.size)) - 3.5) << "\" y=\"" << oneDecimal(base - h)
           << "\" width=\"7\" height=\"" << oneDecimal(h) << "\" fill=\"" << kindColour(kind)
           << "\"><title>" << htmlEscape(detail::sizeLabel(analysis_, group)) << " bytes, "
           << stateName(group.state).str() << ": " << groupedDigits(group.count) << " buffers, "
           << humanBytes(group.total_bytes) << "; "
           << htmlEscape(detail::describeKinds(analysis_, group)) << "</title></rect></a>";
    }
    out_ << "</svg>\n";
    if (shown < analysis_.groups.size())
      out_ << "<p class=\"note\">The " << groupedDigits(analysis_.groups.size() - shown)
           << " smallest groups are left out of the histogram and the lists.</p>\n";
  }

  void writeFindings() {
    out_ << "<h2>Findings</h2>\n";
    if (analysis_.findings.empty()) {
      out_ << "<p>None.</p>\n";
      return;
    }
    out_ << "<ol class=\"findings\">\n";
    for (const Finding &f : analysis_.findings) {
      out_ << "<li><b>" << htmlEscape(f.type) << "</b>, " << humanBytes(f.bytes) << ": "
           << htmlEscape(f.explanation) << "<br><span class=\"note\">buffers:";
      constexpr size_t kAddresses = 12;
      for (size_t i = 0; i < f.addresses.size() && i < kAddresses; ++i) {
        const std::string a = hexAddress(f.addresses[i]);
        if (isListed(f.addresses[i]))
          out_ << " <a href=\"#b-" << a << "\">" << a << "</a>";
        else
          out_ << " " << a;
      }
      if (f.addresses.size() > kAddresses)
        out_ << " and " << groupedDigits(f.addresses.size() - kAddresses) << " more";
      out_ << "</span></li>\n";
    }
    out_ << "</ol>\n";
  }

  void writeGroups() {
    if (analysis_.groups.empty())
      return;
    const size_t shown = std::min(analysis_.groups.size(), options_.groups);
    out_ << "<h2>Size groups</h2>\n<input id=\"filter\" type=\"search\" hidden "
            "placeholder=\"filter groups\">\n<table id=\"groups\" class=\"sortable\"><thead><tr>"
            "<th data-sort=\"num\" class=\"n\">size</th><th>state</th><th>allocator</th>"
            "<th data-sort=\"num\" class=\"n\">count</th><th data-sort=\"num\" "
            "class=\"n\">total</th><th>kinds</th></tr></thead><tbody>\n";
    for (size_t g = 0; g < shown; ++g) {
      const SizeGroup &group = analysis_.groups[g];
      std::string size = detail::sizeLabel(analysis_, group);
      if (group.kind)
        size += " " + kindName(*group.kind).str();
      out_ << "<tr><td class=\"n\" data-v=\"" << group.size << "\"><a href=\"#g" << g << "\">"
           << htmlEscape(size) << "</a></td><td>" << stateName(group.state).str() << "</td><td>"
           << htmlEscape(group.allocator) << "</td><td class=\"n\" data-v=\"" << group.count
           << "\">" << groupedDigits(group.count) << "</td><td class=\"n\" data-v=\""
           << group.total_bytes << "\">" << humanBytes(group.total_bytes) << "</td><td>"
           << htmlEscape(detail::describeKinds(analysis_, group)) << "</td></tr>\n";
    }
    out_ << "</tbody></table>\n<h2>Buffers by group</h2>\n";
    for (size_t g = 0; g < shown; ++g)
      writeGroupBuffers(g);
    out_ << "<p class=\"note\">Thumbnails: " << groupedDigits(thumbnails_made_) << " made ("
         << humanBytes(thumbnail_bytes_) << ")";
    if (thumbnails_left_out_)
      out_ << ", " << groupedDigits(thumbnails_left_out_) << " left out (at most "
           << groupedDigits(options_.thumbnails) << " and " << humanBytes(options_.thumbnail_bytes)
           << ": --html-thumbnails N)";
    out_ << ".</p>\n";
  }

  void writeGroupBuffers(size_t g) {
    const SizeGroup &group = analysis_.groups[g];
    out_ << "<details id=\"g" << g << "\" data-size=\"" << group.size << "\""
         << (g < 3 ? " open" : "") << "><summary>"
         << htmlEscape(detail::sizeLabel(analysis_, group)) << " bytes, "
         << stateName(group.state).str() << ": " << groupedDigits(group.count) << " buffers, "
         << humanBytes(group.total_bytes) << "</summary>\n";
    if (holdersRan())
      out_ << "<p class=\"holders\">held: "
           << htmlEscape(
                  detail::holdersSentence(summarizeHolders(analysis_.holders, group.members)))
           << "</p>\n";
    size_t listed = 0;
    for (size_t i : group.members) {
      if (!listed_[i])
        continue;
      if (!listed++)
        out_ << "<table class=\"buffers\"><thead><tr><th>address</th><th class=\"n\">size</th>"
                "<th>kind</th><th>details</th>"
             << (holdersRan() ? "<th>held by</th>" : "")
             << "<th>first bytes</th><th>image</th></tr></thead><tbody>\n";
      writeBuffer(i);
    }
    if (listed)
      out_ << "</tbody></table>\n";
    if (listed < group.members.size())
      out_ << "<p class=\"note\">" << groupedDigits(group.members.size() - listed)
           << " more buffers of this group are not listed (the JSON report has them all).</p>\n";
    out_ << "</details>\n";
  }

  /// The holders pass ran: groups and buffers say who holds them.
  bool holdersRan() const {
    return analysis_.holders.run.requested != HoldersMode::None &&
           analysis_.holders.buffers.size() == analysis_.buffers.size();
  }

  void writeBuffer(size_t index) {
    const Buffer &b = analysis_.buffers[index];
    const std::string address = hexAddress(b.allocation.address);
    const SniffResult &content = b.content;
    out_ << "<tr id=\"b-" << address << "\"><td class=\"mono\">" << address;
    if (auto it = files_.find(b.allocation.address); it != files_.end())
      for (const ExtractedFile *f : it->second)
        out_ << "<br><a href=\"" << htmlEscape(options_.extract_href + "/" + f->name) << "\">"
             << roleName(f->role).str()
             << (f->role == ExtractRole::Body ? " " + std::to_string(f->body) : "") << " file</a>";
    out_ << "</td><td class=\"n\">" << groupedDigits(b.allocation.size) << "</td><td>"
         << kindName(content.kind).str();
    if (content.offset)
      out_ << " at +" << groupedDigits(content.offset);
    out_ << "</td><td class=\"details\">" << htmlEscape(detailsText(content.details)) << "</td>";
    if (holdersRan())
      out_ << "<td class=\"holders\">"
           << htmlEscape(detail::bufferHoldersSentence(analysis_.holders.buffers[index]))
           << "</td>";
    out_ << "<td><pre>" << htmlEscape(hexPreview(capturedPayload(memory_, b).take_front(32)))
         << "</pre></td><td>";
    writeThumbnail(b);
    out_ << "</td></tr>\n";
  }

  /// The buffer's thumbnail, shared by identical buffers (the first listed shows it, the others
  /// link to it), within the budget.
  void writeThumbnail(const Buffer &b) {
    const ContentKey key = contentKey(b);
    const uint64_t copies = copies_[key];
    if (auto it = shown_.find(key); it != shown_.end()) {
      const std::string first = hexAddress(it->second);
      out_ << "<span class=\"note\">same bytes as <a class=\"copy\" href=\"#b-" << first << "\">"
           << first << "</a></span>";
      return;
    }
    ThumbnailLimits limits;
    std::optional<ImageSource> source =
        imageIn(memory_, b, limits.max_decode_bytes, kCutDecodeBytes);
    if (!source)
      return;
    if (source->cut)
      limits.max_decode_bytes = kCutDecodeBytes;
    if (thumbnails_made_ >= options_.thumbnails || thumbnail_bytes_ >= options_.thumbnail_bytes) {
      ++thumbnails_left_out_;
      out_ << "<span class=\"note\">" << kindName(source->kind).str()
           << (source->via.empty() ? "" : " " + source->via) << ": thumbnail left out</span>";
      return;
    }
    const std::optional<Thumbnail> &thumb = thumbnailOf(*source, limits);
    if (!thumb) {
      out_ << "<span class=\"note\">" << kindName(source->kind).str()
           << (source->via.empty() ? "" : " " + source->via) << ": no thumbnail</span>";
      return;
    }
    shown_.emplace(key, b.allocation.address);
    ++thumbnails_made_;
    thumbnail_bytes_ += thumb->bytes.size();
    out_ << "<img class=\"thumb\" alt=\"" << kindName(source->kind).str();
    if (!source->via.empty())
      out_ << " " << source->via;
    out_ << "\"";
    if (thumb->width)
      out_ << " width=\"" << thumb->width << "\" height=\"" << thumb->height << "\"";
    out_ << " src=\"data:" << thumb->mime << ";base64," << llvm::encodeBase64(thumb->bytes)
         << "\">";
    std::string note = source->via;
    if (thumb->partial || source->cut ||
        thumbnailInput(source->kind, source->bytes, limits).size() < source->bytes.size())
      note += (note.empty() ? "" : ", ") + std::string("top part");
    if (copies > 1)
      note += (note.empty() ? "" : ", ") + ("x" + std::to_string(copies) + " copies");
    if (!note.empty())
      out_ << "<span class=\"note\">" << note << "</span>";
  }

  /// makeThumbnail of the source's bytes, made once for all sources whose decoded bytes are the
  /// same: slices of one upload longer than the decode limit share their start, so a dump of
  /// many slices of a few photos decodes each photo once.
  const std::optional<Thumbnail> &thumbnailOf(const ImageSource &source,
                                              const ThumbnailLimits &limits) {
    const Bytes decoded = thumbnailInput(source.kind, source.bytes, limits);
    const auto key = std::make_tuple(source.kind, decoded.size(), llvm::xxHash64(decoded));
    auto [it, fresh] = made_.try_emplace(key);
    if (fresh)
      it->second = makeThumbnail(source.kind, decoded, limits);
    return it->second;
  }

  void writeWarnings() {
    // Diagnostics::warnings() returns copies: the page keeps its own for as long as it writes.
    std::vector<Diagnostic> warnings = snapshot_.diagnostics.warnings();
    for (Diagnostic &w : analysis_.diagnostics.warnings())
      warnings.push_back(std::move(w));
    if (warnings.empty())
      return;
    out_ << "<h2>Warnings</h2>\n<ul>\n";
    constexpr size_t kWarnings = 100;
    for (size_t i = 0; i < warnings.size() && i < kWarnings; ++i)
      out_ << "<li>" << htmlEscape(warnings[i].where) << ": " << htmlEscape(warnings[i].message)
           << "</li>\n";
    out_ << "</ul>\n";
    if (warnings.size() > kWarnings)
      out_ << "<p class=\"note\">and " << groupedDigits(warnings.size() - kWarnings)
           << " more in the JSON report.</p>\n";
  }

  const Snapshot &snapshot_;
  const AddressSpace &memory_;
  const Analysis &analysis_;
  const HtmlOptions &options_;
  llvm::raw_ostream &out_;
  std::vector<bool> listed_;              // by index into analysis_.buffers
  std::map<ContentKey, uint64_t> copies_; // buffers holding each content
  std::map<ContentKey, uint64_t> shown_;  // the buffer showing each content's thumbnail
  std::map<uint64_t, std::vector<const ExtractedFile *>> files_; // by allocation address
  /// Thumbnails made, by kind and the decoded bytes' size and xxHash64.
  std::map<std::tuple<ContentKind, uint64_t, uint64_t>, std::optional<Thumbnail>> made_;
  size_t thumbnails_made_ = 0, thumbnails_left_out_ = 0;
  uint64_t thumbnail_bytes_ = 0;
};

} // namespace

void writeReportHtml(const Snapshot &snapshot, const AddressSpace &memory, const Analysis &analysis,
                     const Extraction *extracted, const HtmlOptions &options,
                     llvm::raw_ostream &out) {
  HtmlWriter(snapshot, memory, analysis, extracted, options, out).write();
}

} // namespace dumpsift
