// The manifest fixtures/programs/waste.c prints (one JSON line per buffer it holds), by buffer
// name: the ground truth of the findings tests (tests/analysis) and of the summary's
// (tests/report).
#pragma once

#include "dumpsift/support/hex.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dumpsift::test {

/// The waste fixture's manifest, by buffer name: (address, usable size, content bytes).
struct Planted3 {
  uint64_t address, usable, content;
};
inline std::map<std::string, std::vector<Planted3>>
byName(const std::vector<nlohmann::json> &manifest) {
  std::map<std::string, std::vector<Planted3>> out;
  for (const nlohmann::json &line : manifest) {
    if (!line.contains("address"))
      continue;
    out[line["name"].get<std::string>()].push_back(
        {*parseHexAddress(line["address"].get<std::string>()), line["usable_size"].get<uint64_t>(),
         line["content_bytes"].get<uint64_t>()});
  }
  return out;
}

inline std::vector<uint64_t> addressesOf(const std::vector<Planted3> &planted, bool sorted) {
  std::vector<uint64_t> out;
  for (const Planted3 &p : planted)
    out.push_back(p.address);
  if (sorted)
    std::sort(out.begin(), out.end());
  return out;
}

} // namespace dumpsift::test
