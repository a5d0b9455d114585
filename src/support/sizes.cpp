#include "dumpsift/support/sizes.h"

#include "dumpsift/support/hex.h"

#include "llvm/ADT/StringExtras.h"

#include <cstdio>

namespace dumpsift {

std::optional<uint64_t> parseSize(llvm::StringRef text) {
  if (text.size() > 2 && (text.startswith("0x") || text.startswith("0X")))
    return parseHexAddress(text);
  uint64_t multiplier = 1;
  if (!text.empty()) {
    switch (llvm::toUpper(text.back())) {
    case 'K':
      multiplier = 1ull << 10;
      break;
    case 'M':
      multiplier = 1ull << 20;
      break;
    case 'G':
      multiplier = 1ull << 30;
      break;
    default:
      break;
    }
    if (multiplier != 1)
      text = text.drop_back();
  }
  uint64_t value = 0;
  // getAsInteger fails (true) on an empty string, anything but digits, or overflow.
  if (text.size() > 20 || text.getAsInteger(10, value) || value > UINT64_MAX / multiplier)
    return std::nullopt;
  return value * multiplier;
}

std::string humanBytes(uint64_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  if (unit == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", value, units[unit]);
  return buf;
}

std::string groupedDigits(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

} // namespace dumpsift
