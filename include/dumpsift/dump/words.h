// The dumped process's words decoded from its bytes: LLVM's support::endian under the one set of
// names every reader of dumped memory uses, for the bytes of a view that AddressSpace handed out
// (the caller has checked that they are there). AddressSpace's checked reads (readU64,
// readPointer, ...) decode with these too.
#pragma once

#include "llvm/Support/Endian.h"

#include <cstdint>

namespace dumpsift {

// Fixed byte order, no alignment needed.
using llvm::support::endian::read16be;
using llvm::support::endian::read16le;
using llvm::support::endian::read32be;
using llvm::support::endian::read32le;
using llvm::support::endian::read64be;
using llvm::support::endian::read64le;

/// The unsigned word of `size` bytes (1, 2, 4 or 8) at `p` in byte order `order`: a pointer of the
/// process when `size` is its pointer size.
inline uint64_t readUnsigned(const uint8_t *p, unsigned size, llvm::support::endianness order) {
  switch (size) {
  case 1:
    return *p;
  case 2:
    return llvm::support::endian::read16(p, order);
  case 4:
    return llvm::support::endian::read32(p, order);
  default:
    return llvm::support::endian::read64(p, order);
  }
}

} // namespace dumpsift
