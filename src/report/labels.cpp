// A report's labels (labels.h).
#include "dumpsift/report/labels.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/utf8.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

namespace dumpsift {

namespace {
constexpr size_t kMaxKeyLength = 64;
constexpr size_t kMaxValueLength = 256;
} // namespace

llvm::Error checkLabel(llvm::StringRef key, llvm::StringRef value) {
  auto key_char = [](char c) { return llvm::isAlnum(c) || c == '_' || c == '.' || c == '-'; };
  if (key.empty() || key.size() > kMaxKeyLength || !std::all_of(key.begin(), key.end(), key_char))
    return createError("label key '" + toValidUtf8(key) + "' is not 1 to " +
                       std::to_string(kMaxKeyLength) + " characters among A-Z a-z 0-9 _ . -");
  if (value.size() > kMaxValueLength)
    return createError("the value of label '" + key.str() + "' is longer than " +
                       std::to_string(kMaxValueLength) + " bytes");
  if (!isValidUtf8(value))
    return createError("the value of label '" + key.str() + "' is not valid UTF-8");
  auto control = [](unsigned char c) { return c < 0x20 || c == 0x7f; };
  if (std::any_of(value.bytes_begin(), value.bytes_end(), control))
    return createError("the value of label '" + key.str() + "' holds a control character");
  return llvm::Error::success();
}

llvm::Expected<std::pair<std::string, std::string>> parseLabelArgument(llvm::StringRef argument) {
  auto [key, value] = argument.split('=');
  if (key.size() == argument.size())
    return createError("label '" + toValidUtf8(argument) + "' is not KEY=VALUE");
  if (llvm::Error e = checkLabel(key, value))
    return e;
  return std::make_pair(key.str(), value.str());
}

} // namespace dumpsift
