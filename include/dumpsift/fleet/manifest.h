// A fleet's manifest (docs/fleet.md): a JSONL file, one dump a line,
//   {"id": "api-1.1-a", "dump": "cores/api-1.1-a.core", "labels": {"service": "api", "version":
//   "1.1"}}
// Row N is line N+1 (rows count from 0, as array task indices do). The fleet layer reads it; the
// batch engine hands each task the index of its row.
#pragma once

#include "dumpsift/report/labels.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <string>
#include <vector>

namespace dumpsift {

/// One line of a manifest.
struct ManifestRow {
  size_t index = 0; // its line number - 1
  std::string id;   // names the row's files in --out: 1 to 128 of A-Z a-z 0-9 _ . -, not '.' first
  std::string dump; // as written, and
  std::string dump_path; // that path made absolute, a relative one from the manifest's directory
  ReportLabels labels;   // checked as --label checks them; `service` and `version` group dumps
};

/// A manifest read whole.
struct Manifest {
  std::string path;
  std::string text; // its bytes, as `fleet task` copies them into --out
  std::vector<ManifestRow> rows;
};

/// Reads and checks the manifest at `path`: every line a JSON object with a string `id` and a
/// string `dump` (not empty) and at most an object `labels` of string values, nothing else; ids
/// unique and fit for file names. An error names the file, the line and what is wrong; an
/// unreadable file gives the system's reason.
llvm::Expected<Manifest> readManifest(const std::string &path);

/// Whether `id` can name a row's files: 1 to 128 characters among A-Z a-z 0-9 _ . -, the first
/// not a '.'.
bool isRowId(llvm::StringRef id);

} // namespace dumpsift
