// Small byte-range helpers shared by the sniffers and the analysis.
#pragma once

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace dumpsift {

/// Index of the last byte of `bytes` that is not zero, plus one (0 when all are zero). Scans
/// backwards a word at a time, so it costs the length of the zero tail.
uint64_t contentEnd(llvm::ArrayRef<uint8_t> bytes);

/// True for the two 64-bit keys llvm::DenseMap and DenseSet reserve (empty ~0 and tombstone
/// ~0 - 1), which must never be looked up or inserted: a word read from a dump may be either, and
/// no address a walker follows is. Check words read from memory before they key such a map.
constexpr bool isReservedDenseKey(uint64_t key) {
  return key >= ~uint64_t(0) - 1;
}

} // namespace dumpsift
