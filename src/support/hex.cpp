#include "dumpsift/support/hex.h"

#include "llvm/ADT/StringExtras.h"

namespace dumpsift {

std::string hexAddress(uint64_t value) {
  // Called once or twice per allocation listed: llvm::utohexstr, not snprintf's format parsing.
  return "0x" + llvm::utohexstr(value, /*LowerCase=*/true);
}

std::optional<uint64_t> parseHexAddress(llvm::StringRef text) {
  if (text.size() > 2 && (text.startswith("0x") || text.startswith("0X")))
    text = text.drop_front(2);
  uint64_t value = 0;
  // getAsInteger fails (true) on an empty string, a bad digit or overflow.
  if (text.size() > 16 || text.getAsInteger(16, value))
    return std::nullopt;
  return value;
}

} // namespace dumpsift
