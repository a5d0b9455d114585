#include "readers.h"

namespace dumpsift::detail {
// Placeholder until the minidump reader lands.
llvm::Error readMinidump(Snapshot &) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "minidump reader not built yet");
}
} // namespace dumpsift::detail
