#include "readers.h"

namespace dumpsift::detail {
// Placeholder until the ELF core reader lands.
llvm::Error readElfCore(Snapshot &) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "ELF core reader not built yet");
}
} // namespace dumpsift::detail
