// Details: the ordered facts a sniffer reports about content (sniffer.h).
#include "dumpsift/sniff/sniffer.h"
#include "dumpsift/support/utf8.h"

namespace dumpsift {

void Details::set(std::string key, DetailValue value) {
  // Some values quote the buffer (a PDF version, trailer names); reports need valid UTF-8.
  if (auto *text = std::get_if<std::string>(&value))
    makeValidUtf8(*text);
  for (auto &entry : entries)
    if (entry.first == key) {
      entry.second = std::move(value);
      return;
    }
  entries.emplace_back(std::move(key), std::move(value));
}

const DetailValue *Details::get(llvm::StringRef key) const {
  for (const auto &entry : entries)
    if (key == entry.first)
      return &entry.second;
  return nullptr;
}

} // namespace dumpsift
