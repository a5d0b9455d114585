#include "dumpsift/support/terminal_text.h"

#include <cstdint>

namespace dumpsift {

namespace {

bool isC0OrDel(uint8_t c) {
  return c < 0x20 || c == 0x7f;
}

/// True when text[i] starts the UTF-8 form of a C1 control (C2 80..C2 9F).
bool startsC1(llvm::StringRef text, size_t i) {
  return static_cast<uint8_t>(text[i]) == 0xc2 && i + 1 < text.size() &&
         static_cast<uint8_t>(text[i + 1]) >= 0x80 && static_cast<uint8_t>(text[i + 1]) <= 0x9f;
}

} // namespace

bool isPrintable(llvm::StringRef text) {
  for (size_t i = 0; i < text.size(); ++i)
    if (isC0OrDel(static_cast<uint8_t>(text[i])) || startsC1(text, i))
      return false;
  return true;
}

std::string printable(llvm::StringRef text) {
  if (isPrintable(text))
    return text.str();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<uint8_t>(text[i]);
    if (isC0OrDel(c)) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else if (startsC1(text, i)) {
      const auto code = static_cast<uint8_t>(text[++i]);
      out += "\\u00";
      out += kHex[code >> 4];
      out += kHex[code & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

} // namespace dumpsift
