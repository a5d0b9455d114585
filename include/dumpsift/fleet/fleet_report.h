// What `dumpsift fleet report` writes of a fleet database's answers (store.h, docs/fleet.md): the
// summary a person reads on the terminal, one JSON object, and the fleet page.
#pragma once

#include "dumpsift/fleet/store.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <string>

namespace dumpsift {

/// The summary: the outcomes, the recurring groups (at most `top`), the groups new in a version,
/// the top waste of each finding type, and every dump that is not ok with its one-line reason.
void writeFleetText(const FleetAnswers &answers, size_t top, llvm::raw_ostream &out);

/// One JSON object (2-space indented) and a newline: outcome_counts, outcomes, recurring_groups,
/// kind_bytes, new_groups, waste_by_type, top_waste, each as its view's rows (docs/fleet.md).
void writeFleetJson(const FleetAnswers &answers, llvm::raw_ostream &out);

/// The fleet page, to be written at `page_path`: one self-contained HTML file in the style of the
/// per-dump page (html_page.h: its style sheet, script, CSP and escaping): the outcomes, the
/// recurring groups with links to each dump's own page (relative to the page when they lie under
/// its directory), each service's bytes per kind and version as an inline SVG chart, the groups
/// new in a version and the top waste per finding type. Bounded: at most 1,000 groups and 1,000
/// dumps not ok are listed (the database has them all).
void writeFleetHtml(const FleetAnswers &answers, const std::string &page_path,
                    llvm::raw_ostream &out);

} // namespace dumpsift
