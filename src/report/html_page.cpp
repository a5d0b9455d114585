// The pages' shared parts (html_page.h).
#include "dumpsift/report/html_page.h"

#include "dumpsift/support/utf8.h"
#include "dumpsift/support/version.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Base64.h"
#include "llvm/Support/SHA256.h"

#include <cstdio>

namespace dumpsift {

namespace {

/// The page's style sheet and script. The Content-Security-Policy names them by their SHA-256, so
/// nothing else (no markup a dump might smuggle in) can style or script the page.
constexpr llvm::StringLiteral kStyle = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ddd}
p.line{margin:.2em 0;font-family:ui-monospace,monospace;font-size:13px;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}th,td{padding:3px 8px;text-align:left;vertical-align:top}
thead th{background:#f3f3f3;border-bottom:1px solid #ccc;white-space:nowrap}
table.sortable th{cursor:pointer}tbody tr:nth-child(even){background:#fafafa}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.mono,pre{font-family:ui-monospace,monospace;font-size:12px}pre{margin:0;white-space:pre}
details{margin:.3em 0;border:1px solid #e4e4e4;border-radius:4px;padding:.2em .6em}
summary{cursor:pointer;font-weight:600}td.details{max-width:24em;overflow-wrap:anywhere;font-size:12px}
img.thumb{max-width:160px;max-height:160px;border:1px solid #ccc;display:block}
.note{color:#666;font-size:12px}.legend span{margin-right:1.2em;white-space:nowrap;font-size:12px}
svg{display:block;width:100%;height:auto}svg text{font:11px system-ui,sans-serif;fill:#444}
svg.sw{display:inline;width:10px;height:10px;vertical-align:baseline}input#filter{margin:.4em 0;padding:3px 6px;width:20em}
ol.findings li{margin:.3em 0}a{color:#1a5fb4}
)css";

constexpr llvm::StringLiteral kScript = R"js(
for (const th of document.querySelectorAll('table.sortable th')) {
  th.addEventListener('click', () => {
    const body = th.closest('table').tBodies[0], col = th.cellIndex;
    const up = th.dataset.dir !== 'up';
    th.dataset.dir = up ? 'up' : 'down';
    const key = r => th.dataset.sort === 'num' ? Number(r.cells[col].dataset.v)
                                               : r.cells[col].textContent;
    const rows = [...body.rows].sort((a, b) => {
      const x = key(a), y = key(b);
      return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
    });
    for (const r of rows) body.appendChild(r);
  });
}
const filter = document.getElementById('filter');
if (filter) {
  filter.hidden = false;
  filter.addEventListener('input', () => {
    const q = filter.value.toLowerCase();
    for (const r of document.querySelectorAll('#groups tbody tr'))
      r.hidden = q !== '' && !r.textContent.toLowerCase().includes(q);
  });
}
)js";

/// 'sha256-...' of a style or script, for the Content-Security-Policy.
std::string cspHash(llvm::StringRef text) {
  const auto digest = llvm::SHA256::hash(llvm::arrayRefFromStringRef(text));
  return "'sha256-" + llvm::encodeBase64(digest) + "'";
}

} // namespace

void writeHtmlPageStart(llvm::raw_ostream &out, llvm::StringRef title) {
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src "
         "data:; style-src "
      << cspHash(kStyle) << "; script-src " << cspHash(kScript)
      << "; base-uri 'none'; form-action 'none'\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width\">\n"
      << "<title>" << htmlEscape(title) << "</title>\n<style>" << kStyle
      << "</style></head>\n<body>\n";
}

void writeHtmlPageEnd(llvm::raw_ostream &out) {
  out << "<p class=\"note\">dumpsift " << htmlEscape(toolVersion()) << "</p>\n<script>" << kScript
      << "</script>\n</body></html>\n";
}

/// `text` as HTML text or attribute value: valid UTF-8, with & < > " ' as character references.
std::string htmlEscape(llvm::StringRef text) {
  const std::string valid = toValidUtf8(text);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// `value` with one decimal ("12.5"): coordinates and percentages.
std::string oneDecimal(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

} // namespace dumpsift
