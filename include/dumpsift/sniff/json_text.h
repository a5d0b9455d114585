// JSON text checked to its end: the sniffers' bounded validating scan, for callers that need the
// exact extent of a JSON value longer than a sniff looks at (the JSON sniffer's closedLength,
// which the region scan asks).
#pragma once

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>

namespace dumpsift {

/// The length of the JSON object or array that starts at data[0] ('{' or '['), when it is valid
/// JSON throughout (strings and their escapes, numbers, literals, at most 512 levels deep) and
/// closes within the first `limit` bytes; nullopt otherwise (invalid, cut by a NUL or the end of
/// `data`, or still open at `limit`). Linear in the bytes it looks at; no allocation.
std::optional<uint64_t> closedJsonValueLength(llvm::ArrayRef<uint8_t> data, uint64_t limit);

} // namespace dumpsift
