// Writing output files so that nothing is ever left half-written.
#pragma once

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace dumpsift {

/// Writes `path` atomically: `write` fills a temporary file beside it, which is renamed over
/// `path` only when writing and closing succeeded; otherwise the temporary is removed and `path`
/// is untouched. A `path` that exists and is neither a regular file nor a directory (/dev/null,
/// a FIFO, /dev/stdout) is written in place instead, as a device cannot be replaced. Errors name
/// the path and the cause (disk full, permission denied, ...).
llvm::Error writeFileAtomically(llvm::StringRef path,
                                llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write);

/// Convenience: atomically writes `content` to `path`.
llvm::Error writeFileAtomically(llvm::StringRef path, llvm::StringRef content);

} // namespace dumpsift
