#include "tool.h"

namespace dumpsift::tool {
// Placeholder: the `extract` command is not built yet.
void addExtractCommand(CLI::App &, Runner &) {}
} // namespace dumpsift::tool
