#include "tool.h"

namespace dumpsift::tool {
// Placeholder: the `check` command is not built yet.
void addCheckCommand(CLI::App &, Runner &) {}
} // namespace dumpsift::tool
