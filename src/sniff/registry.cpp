// The one list of content kinds and their sniffers, read from kinds.def. Adding a kind: one row
// there plus the sniffer's file; nothing here changes.
#include "common.h"

#include <algorithm>
#include <array>

namespace dumpsift {

using namespace sniffimpl;

namespace {

struct KindRow {
  ContentKind kind;
  const char *name;
  const char *extension;
  std::unique_ptr<Sniffer> (*factory)(); // nullptr for the statistical kinds
  int priority;
};

constexpr KindRow kKinds[] = {
#define DUMPSIFT_SIGNATURE_KIND(kind, name, extension, factory, priority)                          \
  {ContentKind::kind, name, extension, factory, priority},
#define DUMPSIFT_STATISTICAL_KIND(kind, name, extension)                                           \
  {ContentKind::kind, name, extension, nullptr, 0},
#include "dumpsift/sniff/kinds.def"
};

} // namespace

llvm::StringRef kindName(ContentKind kind) {
  return kKinds[static_cast<size_t>(kind)].name;
}

llvm::StringRef kindExtension(ContentKind kind) {
  return kKinds[static_cast<size_t>(kind)].extension;
}

std::optional<ContentKind> parseKind(llvm::StringRef name) {
  for (const KindRow &row : kKinds)
    if (name == row.name)
      return row.kind;
  return std::nullopt;
}

const std::vector<ContentKind> &allKinds() {
  static const std::vector<ContentKind> kinds = [] {
    std::vector<ContentKind> list;
    for (const KindRow &row : kKinds)
      list.push_back(row.kind);
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
