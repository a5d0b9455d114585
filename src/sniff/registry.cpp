// The one list of content kinds, their facts and their sniffers, read from kinds.def. Adding a
// kind: one row there plus the sniffer's file; nothing here changes.
#include "common.h"

#include <algorithm>
#include <array>

namespace dumpsift {

using namespace sniffimpl;

namespace {

struct KindRow {
  KindFacts facts;
  std::unique_ptr<Sniffer> (*factory)(); // nullptr for the statistical kinds
  int priority;
};

constexpr KindRow kKinds[] = {
#define DUMPSIFT_SIGNATURE_KIND(kind, name, extension, family, mime, payloads, thumbnail, colour,  \
                                factory, priority)                                                 \
  {{ContentKind::kind, name, extension, KindFamily::family, mime, KindPayloads::payloads,          \
    thumbnail, colour, true},                                                                      \
   factory,                                                                                        \
   priority},
#define DUMPSIFT_STATISTICAL_KIND(kind, name, extension, family, mime, colour)                     \
  {{ContentKind::kind, name, extension, KindFamily::family, mime, KindPayloads::None, false,       \
    colour, false},                                                                                \
   nullptr,                                                                                        \
   0},
#include "dumpsift/sniff/kinds.def"
};

} // namespace

const KindFacts &kindFacts(ContentKind kind) {
  return kKinds[static_cast<size_t>(kind)].facts;
}

llvm::StringRef kindName(ContentKind kind) {
  return kindFacts(kind).name;
}

llvm::StringRef kindExtension(ContentKind kind) {
  return kindFacts(kind).extension;
}

std::optional<ContentKind> parseKind(llvm::StringRef name) {
  for (const KindRow &row : kKinds)
    if (name == row.facts.name)
      return row.facts.kind;
  return std::nullopt;
}

llvm::StringRef familyName(KindFamily family) {
  switch (family) {
  case KindFamily::Image:
    return "image";
  case KindFamily::Compressed:
    return "compressed";
  case KindFamily::Archive:
    return "archive";
  case KindFamily::Document:
    return "document";
  case KindFamily::Framing:
    return "framing";
  case KindFamily::StructuredText:
    return "structured-text";
  case KindFamily::Text:
    return "text";
  case KindFamily::Statistical:
    return "statistical";
  }
  return "statistical";
}

const std::vector<ContentKind> &allKinds() {
  static const std::vector<ContentKind> kinds = [] {
    std::vector<ContentKind> list;
    for (const KindRow &row : kKinds)
      list.push_back(row.facts.kind);
    return list;
  }();
  return kinds;
}

const std::vector<std::unique_ptr<Sniffer>> &sniffers() {
  static const std::vector<std::unique_ptr<Sniffer>> list = [] {
    std::vector<const KindRow *> rows;
    for (const KindRow &row : kKinds)
      if (row.factory)
        rows.push_back(&row);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const KindRow *a, const KindRow *b) { return a->priority < b->priority; });
    std::vector<std::unique_ptr<Sniffer>> made;
    for (const KindRow *row : rows)
      made.push_back(row->factory());
    return made;
  }();
  return list;
}

const Sniffer *snifferFor(ContentKind kind) {
  static const std::array<const Sniffer *, std::size(kKinds)> by_kind = [] {
    std::array<const Sniffer *, std::size(kKinds)> table{};
    for (const auto &sniffer : sniffers())
      table[static_cast<size_t>(sniffer->kind())] = sniffer.get();
    return table;
  }();
  return by_kind[static_cast<size_t>(kind)];
}

} // namespace dumpsift
