#include "dumpsift/support/utf8.h"

#include <cstdint>

namespace dumpsift {

namespace {

/// Length of the well-formed UTF-8 sequence at text[i], or 0 when none starts there.
size_t sequenceLength(llvm::StringRef text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80)
    return 1;
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xbf; // allowed range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    len = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    len = 3;
    if (b0 == 0xe0)
      lo = 0xa0; // overlong
    if (b0 == 0xed)
      hi = 0x9f; // surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    len = 4;
    if (b0 == 0xf0)
      lo = 0x90; // overlong
    if (b0 == 0xf4)
      hi = 0x8f; // above U+10FFFF
  } else {
    return 0;
  }
  if (text.size() - i < len)
    return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi)
    return 0;
  for (size_t k = 2; k < len; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf)
      return 0;
  return len;
}

} // namespace

bool isValidUtf8(llvm::StringRef text) {
  for (size_t i = 0; i < text.size();) {
    size_t len = sequenceLength(text, i);
    if (len == 0)
      return false;
    i += len;
  }
  return true;
}

std::string toValidUtf8(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len = sequenceLength(text, i);
    if (len == 0) {
      out += "\xef\xbf\xbd"; // U+FFFD
      ++i;
    } else {
      out.append(text.data() + i, len);
      i += len;
    }
  }
  return out;
}

void makeValidUtf8(std::string &text) {
  if (!isValidUtf8(text))
    text = toValidUtf8(text);
}

} // namespace dumpsift
