// The analysis report: JSON (schema in docs/report-schema.md and docs/report.schema.json) and the
// text summary a person reads in ten seconds.
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/snapshot.h"
#include "dumpsift/extract/extract.h"
#include "dumpsift/report/labels.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>

namespace dumpsift {

/// Writes the JSON report (2-space indented) and a newline to `out`. Deterministic: same dump and
/// options, same bytes. With `extracted`, the report also has an `extracted` section and the
/// extraction's warnings; with `labels`, a `labels` object after `dump`. Streamed: the buffers are
/// formatted one at a time, so the tool's heap never holds the whole report.
void writeReportJson(const Snapshot &snapshot, const Analysis &analysis,
                     const Extraction *extracted, llvm::raw_ostream &out,
                     const ReportLabels &labels = {});

struct TextOptions {
  size_t top = 10; // rows of the group table, and findings under "notable:" (SIZE_MAX: all)
};

/// The summary: the dump in one line, the largest groups, and one line per notable thing.
void writeSummaryText(const Snapshot &snapshot, const Analysis &analysis, const TextOptions &opts,
                      llvm::raw_ostream &out);

} // namespace dumpsift
