// The manifest of an extraction (manifest.jsonl, docs/extraction.md): one JSON object a line per
// file written, the same objects that the report's `extracted` section and `extract --json` print.
#pragma once

#include "dumpsift/extract/extract.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace dumpsift {

/// One manifest line, then a newline: a JSON object with path, role, body (Body only), address,
/// state, offset, size, kind, truncated, pieces (Payload/Body only), details, sha256, addresses
/// (with dedupe only). `path` is written as given.
void writeManifestLine(const ExtractedFile &file, llvm::StringRef path, llvm::raw_ostream &out);

/// The manifest of `extraction`: one line per file, in order, each path its file name (relative to
/// the directory). The ManifestWriter extractBuffers takes.
void writeManifest(const Extraction &extraction, llvm::raw_ostream &out);

} // namespace dumpsift
