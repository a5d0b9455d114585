// Formatting helpers shared by every output: addresses are always "0x..." lowercase hex strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dumpsift {

/// "0x7f12a4c01010": lowercase, no padding.
std::string hexAddress(uint64_t value);

/// Parses "0x1f", "1f" (hex) or a decimal number with an optional K/M/G suffix ("64K" = 65536).
/// Returns nullopt on anything else or on overflow.
std::optional<uint64_t> parseHexAddress(std::string_view text);
std::optional<uint64_t> parseSize(std::string_view text);

/// "128.0 KiB", "3.2 GiB": for people, never for machines.
std::string humanBytes(uint64_t bytes);

} // namespace dumpsift
