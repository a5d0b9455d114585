#include "dumpsift/support/version.h"

namespace dumpsift {

llvm::StringRef toolVersion() {
  return DUMPSIFT_VERSION; // defined by CMakeLists.txt from project(... VERSION ...)
}

} // namespace dumpsift
