// Making errors. Every dumpsift Error is a message that says where and why; there is no error code
// worth keeping (LLVM's inconvertibleErrorCode). An error about one file is llvm::createFileError.
#pragma once

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace dumpsift {

/// An Error whose message is `message`.
inline llvm::Error createError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace dumpsift
