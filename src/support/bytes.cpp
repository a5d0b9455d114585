#include "dumpsift/support/bytes.h"

#include <cstring>

namespace dumpsift {

uint64_t contentEnd(llvm::ArrayRef<uint8_t> d) {
  size_t n = d.size();
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, d.data() + n - 8, 8);
    if (word)
      break;
    n -= 8;
  }
  while (n > 0 && d[n - 1] == 0)
    --n;
  return n;
}

} // namespace dumpsift
