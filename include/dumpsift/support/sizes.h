// Byte sizes and counts as people write and read them: "64K" on the command line, "128.0 KiB" and
// "135,152" in what dumpsift prints for people.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace dumpsift {

/// Parses a decimal number with an optional K/M/G suffix (either case: "64K" = 65536), or a hex
/// number with a 0x prefix ("0x10000"). nullopt on anything else or on overflow.
std::optional<uint64_t> parseSize(llvm::StringRef text);

/// "128.0 KiB", "3.2 GiB", "512 B": for people, never for machines.
std::string humanBytes(uint64_t bytes);

/// 135152 -> "135,152".
std::string groupedDigits(uint64_t n);

} // namespace dumpsift
