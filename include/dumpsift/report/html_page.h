// What every page dumpsift writes shares (docs/html-report.md): the style sheet, the script that
// sorts and filters tables, the Content-Security-Policy that names both by their SHA-256 and
// forbids every request, and HTML escaping. The per-dump page (html_report.h) and the fleet page
// (dumpsift/fleet/fleet_report.h) are written with them.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace dumpsift {

/// Writes the page's start up to and including `<body>`: the doctype, the
/// Content-Security-Policy (`default-src 'none'; img-src data:`, the style sheet and the script
/// named by their SHA-256, no base URI, no form action), the viewport, `title` (escaped) and the
/// style sheet.
void writeHtmlPageStart(llvm::raw_ostream &out, llvm::StringRef title);

/// Writes the page's end: the tool's version, the script (it sorts a `table.sortable` by the
/// heading clicked, by `data-v` where the heading has `data-sort="num"`, and shows the hidden
/// `#filter` box, which filters the rows of `#groups`), `</body></html>`.
void writeHtmlPageEnd(llvm::raw_ostream &out);

/// `text` as HTML text or attribute value: valid UTF-8, with & < > " ' as character references.
std::string htmlEscape(llvm::StringRef text);

/// `value` with one decimal ("12.5"): SVG coordinates and percentages.
std::string oneDecimal(double value);

} // namespace dumpsift
