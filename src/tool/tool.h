// Glue between CLI11 and the library. Each command registers its options and a runner; only
// main() turns errors into exit codes.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace dumpsift::tool {

/// Exit codes (docs/cli.md): 0 success, 1 a check or diff found a regression, 2 an error.
enum ExitCode { kExitOk = 0, kExitRegression = 1, kExitError = 2 };

/// A command's body. Returns an exit code, or an Error that main prints as
/// "dumpsift: error: ..." and turns into kExitError.
using Runner = std::function<llvm::Expected<int>()>;

void addInfoCommand(CLI::App &app, Runner &runner);
void addHeapCommand(CLI::App &app, Runner &runner);
void addAnalyzeCommand(CLI::App &app, Runner &runner);
void addExtractCommand(CLI::App &app, Runner &runner);
void addDiffCommand(CLI::App &app, Runner &runner);
void addCheckCommand(CLI::App &app, Runner &runner);
void addHtmlCommand(CLI::App &app, Runner &runner);
void addFleetCommand(CLI::App &app, Runner &runner);

/// True when progress may be drawn on stderr (a terminal, and not --quiet).
bool stderrIsTerminal();

} // namespace dumpsift::tool
