// UTF-8 validity for strings that come from a dump (paths, process names, command lines): JSON
// output needs valid UTF-8, and a dump may hold any bytes.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <string>

namespace dumpsift {

/// True when `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
/// above U+10FFFF).
bool isValidUtf8(llvm::StringRef text);

/// `text` with every byte that does not start a well-formed UTF-8 sequence replaced by U+FFFD.
/// Valid text comes back unchanged.
std::string toValidUtf8(llvm::StringRef text);

/// Replaces `text` by toValidUtf8(text) when it is not valid UTF-8 (cheap when it is).
void makeValidUtf8(std::string &text);

} // namespace dumpsift
