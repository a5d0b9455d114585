#include "options.h"

#include "dumpsift/support/hex.h"

namespace dumpsift::tool {

llvm::Error resolveFilters(const RawFilters &raw, AnalyzeOptions &options) {
  auto bad = [](const std::string &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", what.c_str());
  };
  std::optional<uint64_t> min = parseSize(raw.min_size);
  if (!min)
    return bad("--min-size: '" + raw.min_size + "' is not a size (e.g. 65536, 64K, 1M)");
  options.min_size = *min;
  if (!raw.max_size.empty()) {
    std::optional<uint64_t> max = parseSize(raw.max_size);
    if (!max)
      return bad("--max-size: '" + raw.max_size + "' is not a size");
    options.max_size = *max;
  }
  for (const std::string &k : raw.kinds) {
    std::optional<ContentKind> kind = parseKind(k);
    if (!kind) {
      std::string names;
      for (ContentKind known : allKinds())
        names += (names.empty() ? "" : ", ") + kindName(known).str();
      return bad("--kind: unknown kind '" + k + "' (known: " + names + ")");
    }
    options.kinds.push_back(*kind);
  }
  if (raw.state == "used")
    options.state = AllocState::Used;
  else if (raw.state == "free")
    options.state = AllocState::Free;
  else if (raw.state == "unknown")
    options.state = AllocState::Unknown;
  else if (raw.state != "all")
    return bad("--state: '" + raw.state + "' is not one of used, free, unknown, all");
  return llvm::Error::success();
}

} // namespace dumpsift::tool
