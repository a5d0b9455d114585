// What the extract layer's files share about a buffer or payload held in pieces (the chunks of a
// framed upload, say): private to src/extract/.
#pragma once

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace dumpsift {

/// The sum of the pieces' sizes.
inline uint64_t totalSize(llvm::ArrayRef<llvm::ArrayRef<uint8_t>> pieces) {
  uint64_t total = 0;
  for (llvm::ArrayRef<uint8_t> piece : pieces)
    total += piece.size();
  return total;
}

} // namespace dumpsift
