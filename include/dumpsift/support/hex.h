// Addresses as every output prints them and every input takes them: "0x..." lowercase hex.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace dumpsift {

/// "0x7f12a4c01010": lowercase, no padding.
std::string hexAddress(uint64_t value);

/// Parses "0x1f" or "1f" (1 to 16 hex digits, either case). nullopt on anything else.
std::optional<uint64_t> parseHexAddress(llvm::StringRef text);

} // namespace dumpsift
