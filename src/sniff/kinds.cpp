#include "dumpsift/sniff/sniffer.h"
#include "dumpsift/support/utf8.h"

namespace dumpsift {

namespace {
struct KindInfo {
  ContentKind kind;
  const char *name;
  const char *extension;
};
constexpr KindInfo kKinds[] = {
    {ContentKind::Jpeg, "jpeg", "jpg"},
    {ContentKind::Png, "png", "png"},
    {ContentKind::Gif, "gif", "gif"},
    {ContentKind::Webp, "webp", "webp"},
    {ContentKind::Bmp, "bmp", "bmp"},
    {ContentKind::Gzip, "gzip", "gz"},
    {ContentKind::Zlib, "zlib", "zlib"},
    {ContentKind::Zstd, "zstd", "zst"},
    {ContentKind::Zip, "zip", "zip"},
    {ContentKind::Pdf, "pdf", "pdf"},
    {ContentKind::AwsChunked, "aws-chunked", "aws-chunked.bin"},
    {ContentKind::Amqp, "amqp", "amqp.bin"},
    {ContentKind::Http, "http", "http.txt"},
    {ContentKind::Json, "json", "json"},
    {ContentKind::Xml, "xml", "xml"},
    {ContentKind::Html, "html", "html"},
    {ContentKind::Text, "text", "txt"},
    {ContentKind::Utf16, "utf16", "utf16.txt"},
    {ContentKind::Zero, "zero", "bin"},
    {ContentKind::Random, "random", "bin"},
    {ContentKind::Unknown, "unknown", "bin"},
};
} // namespace

llvm::StringRef kindName(ContentKind kind) {
  return kKinds[static_cast<size_t>(kind)].name;
}

llvm::StringRef kindExtension(ContentKind kind) {
  return kKinds[static_cast<size_t>(kind)].extension;
}

std::optional<ContentKind> parseKind(llvm::StringRef name) {
  for (const KindInfo &info : kKinds)
    if (name == info.name)
      return info.kind;
  return std::nullopt;
}

const std::vector<ContentKind> &allKinds() {
  static const std::vector<ContentKind> kinds = [] {
    std::vector<ContentKind> list;
    for (const KindInfo &info : kKinds)
      list.push_back(info.kind);
    return list;
  }();
  return kinds;
}

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
