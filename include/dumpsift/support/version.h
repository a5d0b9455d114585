// The tool's name and version, and the versions of the formats it writes.
#pragma once

#include "llvm/ADT/StringRef.h"

namespace dumpsift {

inline constexpr const char *kToolName = "dumpsift";

/// The project's version, as CMakeLists.txt declares it in project(... VERSION ...).
llvm::StringRef toolVersion();

/// The analysis report's schema_version (docs/report-schema.md): bumped whenever a field changes
/// meaning or disappears, never for a new field. `diff` and `check` read this version and every
/// one from kOldestReadableReportSchemaVersion on (the fields they read kept their meaning).
inline constexpr int kReportSchemaVersion = 2;
inline constexpr int kOldestReadableReportSchemaVersion = 1;

/// The schema_version of `heap --json` (the allocation listing).
inline constexpr int kHeapListingSchemaVersion = 1;

/// The schema_version of `info --json`.
inline constexpr int kInfoSchemaVersion = 1;

} // namespace dumpsift
