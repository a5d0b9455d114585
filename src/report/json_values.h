// The JSON value of each thing the report layer writes: nlohmann ordered_json, keys in a fixed
// order, so that the same input gives the same bytes. Internal to src/report (and white-box tests);
// the public headers take output streams, and nothing outside the layer sees nlohmann.
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/snapshot.h"
#include "dumpsift/extract/extract.h"
#include "dumpsift/report/labels.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dumpsift::detail {

using Json = nlohmann::ordered_json;

/// The dump's identity for every report: path, format, os, arch, pid, process, captured bytes.
Json dumpSummaryJson(const Snapshot &snapshot);

/// Warnings as a JSON array of {"where", "message"} (plus a final count of suppressed ones).
Json diagnosticsJson(const Diagnostics &diags);

/// Everything `info --json` prints (writeInfoJson streams the same bytes, its regions one at a
/// time).
Json infoJson(const Snapshot &snapshot);

/// The analysis options as the report's `options` object records them (report_options.cpp, beside
/// recordedOptions, which reads them back).
Json optionsJson(const AnalyzeOptions &options);

/// One walker's heaps as they appear in the report's `heaps` array (and in `heap --json`).
Json heapJson(const HeapWalkResult &heap);

/// A content's details (bool, numbers, strings, arrays of numbers).
Json detailsJson(const Details &details);

/// One buffer as it appears in the report's `buffers` array.
Json bufferJson(const Analysis &analysis, const Buffer &buffer);

/// A finding: its type, bytes and type-specific figures, its addresses when given, and its
/// explanation. The report's findings and the diff's new and gone findings both take this shape.
Json findingJson(llvm::StringRef type, uint64_t bytes,
                 llvm::ArrayRef<std::pair<std::string, uint64_t>> numbers,
                 const std::vector<uint64_t> *addresses, llvm::StringRef explanation);

/// One extracted file as its manifest line describes it, with `path` as given.
Json extractedFileJson(const ExtractedFile &file, llvm::StringRef path);

/// The report's `extracted` section: each file as its manifest line, its path in the directory.
Json extractedJson(const Extraction &extraction);

/// The whole analysis report (writeReportJson streams the same bytes without building it).
Json reportJson(const Snapshot &snapshot, const Analysis &analysis,
                const Extraction *extracted = nullptr, const ReportLabels &labels = {});

/// `json` as text: indented by `indent` (-1: one line), invalid UTF-8 replaced by U+FFFD.
std::string dumpJson(const Json &json, int indent);

/// Writes `object` as dumpJson(object, 2) does, except that the value of `key` (an empty array in
/// `object`) is written as the `count` values `element(i)` returns, built and written one at a
/// time: the bulk of a report (its buffers, a dump's regions) is never held whole.
void writeJsonStreamingArray(llvm::raw_ostream &out, const Json &object, llvm::StringRef key,
                             size_t count, llvm::function_ref<Json(size_t)> element);

} // namespace dumpsift::detail
