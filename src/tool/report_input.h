// The inputs of `diff` and `check`: a report file, or a dump that is analyzed into a report first.
#pragma once

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/compare/figures.h"

#include "llvm/Support/Error.h"

#include <string>

namespace dumpsift::tool {

/// The figures of the report at `path`: a report file (isReportText) is read by readReport;
/// anything else is opened as a dump, analyzed with `options`, and its JSON report read back the
/// same way, so that a stored report and a dump compare alike. `was_dump` tells which it was.
/// Errors name the path.
llvm::Expected<ReportFigures> loadFigures(const std::string &path, const AnalyzeOptions &options,
                                          bool &was_dump);

} // namespace dumpsift::tool
