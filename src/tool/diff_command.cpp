#include "tool.h"

namespace dumpsift::tool {
// Placeholder: the `diff` command is not built yet.
void addDiffCommand(CLI::App &, Runner &) {}
} // namespace dumpsift::tool
