// A report's labels: what the user says of a dump (`analyze --label KEY=VALUE`: the service, its
// version, the host, ...). The report writes them as its `labels` object (docs/report-schema.md),
// readReport reads them back, and the fleet groups dumps by them (docs/fleet.md).
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <utility>

namespace dumpsift {

/// Labels by key (so written in key order).
using ReportLabels = std::map<std::string, std::string>;

/// Whether `key` and `value` make a label: a key of 1 to 64 characters among A-Z a-z 0-9 _ . -,
/// and a value of at most 256 bytes of valid UTF-8 without control characters. The error says
/// which rule `key` or `value` breaks.
llvm::Error checkLabel(llvm::StringRef key, llvm::StringRef value);

/// `KEY=VALUE` (as `--label` takes it) split at its first '=' and checked (checkLabel).
llvm::Expected<std::pair<std::string, std::string>> parseLabelArgument(llvm::StringRef argument);

} // namespace dumpsift
