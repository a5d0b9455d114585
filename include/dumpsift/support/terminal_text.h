// Text from a dump (process names, command lines, paths, type names, warnings) made safe to print:
// a hostile dump must not be able to move the cursor, retitle or clear the user's terminal, or
// fake output lines with the ESC, BEL, CR and newline bytes it holds. JSON has its own escapes.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <string>

namespace dumpsift {

/// `text` with every control character written as an escape: C0 (U+0000..U+001F, newline and tab
/// included) and DEL as `\xNN`, C1 (U+0080..U+009F, which some terminals obey like ESC sequences)
/// as `\u00NN`. Everything else, backslashes included, is kept, so ordinary text (Windows paths
/// too) prints as it is.
std::string printable(llvm::StringRef text);

/// True when printable(text) would change nothing (cheap).
bool isPrintable(llvm::StringRef text);

} // namespace dumpsift
