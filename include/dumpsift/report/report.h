// The analysis report: JSON (schema in docs/report-schema.md and docs/report.schema.json) and the
// text summary a person reads in ten seconds.
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/extract/extract.h"
#include "dumpsift/report/info.h"

#include "llvm/Support/raw_ostream.h"

#include <ostream>

namespace dumpsift {

/// Bumped whenever a field changes meaning or disappears (adding fields does not bump it).
inline constexpr int kReportSchemaVersion = 1;

/// One walker's heaps as they appear in the report's `heaps` array (and in `heap --json`).
Json heapJson(const HeapWalkResult &heap);

/// A content's details as JSON (bool, numbers, strings, arrays of numbers).
Json detailsJson(const Details &details);

/// One buffer as it appears in the report's `buffers` array.
Json bufferJson(const Analysis &analysis, const Buffer &buffer);

/// The whole report. Deterministic: same dump and options, same bytes. With `extracted`, the
/// report also has an `extracted` section and the extraction's warnings.
Json reportJson(const Snapshot &snapshot, const Analysis &analysis,
                const Extraction *extracted = nullptr);

/// Writes reportJson(...).dump(2) and a newline to `out`, byte for byte, without building the
/// whole tree: the buffers are formatted one at a time, so the tool's heap does not hold the
/// report twice (tree and text) for every buffer.
void writeReportJson(const Snapshot &snapshot, const Analysis &analysis,
                     const Extraction *extracted, llvm::raw_ostream &out);

/// The `extracted` section: one object per file written, the same as its manifest line except that
/// "path" includes the extraction directory.
Json extractedJson(const Extraction &extraction);

struct TextOptions {
  size_t top = 10; // rows of the group table, and findings under "notable:"
};

/// The summary: the dump in one line, the largest groups, and one line per notable thing.
void writeSummaryText(const Snapshot &snapshot, const Analysis &analysis, const TextOptions &opts,
                      std::ostream &out);

/// "jpeg x12 (truncated 12), aws-chunked x12 (payload jpeg)": the kinds of a group, in words.
std::string describeKinds(const Analysis &analysis, const SizeGroup &group);

} // namespace dumpsift
