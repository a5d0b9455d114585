// Details: the ordered facts a sniffer reports about content, and the setters of SniffResult
// that keep its typed facts and their details together (sniffer.h).
#include "dumpsift/sniff/sniffer.h"
#include "dumpsift/support/utf8.h"

#include <algorithm>

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

void SniffResult::setComplete(bool value) {
  complete = value;
  details.set("complete", value);
}

void SniffResult::setTruncated(bool value) {
  truncated = value;
  details.set("truncated", value);
}

void SniffResult::setFinalChunk(bool value) {
  final_chunk = value;
  details.set("final_chunk", value);
}

void SniffResult::setPayloadKind(ContentKind value) {
  payload_kind = value;
  details.set("payload_kind", kindName(value).str());
}

void SniffResult::setStaleBytes(uint64_t value) {
  stale_bytes = value;
  details.set("stale_bytes", value);
}

void SniffResult::setDimensions(uint64_t image_width, uint64_t image_height) {
  width = image_width;
  height = image_height;
  details.set("width", image_width);
  details.set("height", image_height);
}

uint64_t SniffResult::referenceFreeLength() const {
  switch (kindFacts(kind).family) {
  case KindFamily::Statistical:
    // Zeros hold none when every byte was checked; random and unknown bytes were judged on
    // samples, and a pointer among them would not have changed the verdict.
    return kind == ContentKind::Zero && !details.get("sampled") ? length : 0;
  default:
    // A format's walk vouches for every byte up to its end, or up to the buffer's end when the
    // content runs past it (cut); where it stopped early (a budget, damage, text checked only in
    // its first kibibytes), for the bytes its structure accounts for.
    return !length_estimated || cut() ? length : std::min(structure_length, length);
  }
}

} // namespace dumpsift
