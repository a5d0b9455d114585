// Small byte-range helpers shared by the sniffers and the analysis.
#pragma once

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace dumpsift {

/// Index of the last byte of `bytes` that is not zero, plus one (0 when all are zero). Scans
/// backwards a word at a time, so it costs the length of the zero tail.
uint64_t contentEnd(llvm::ArrayRef<uint8_t> bytes);

} // namespace dumpsift
