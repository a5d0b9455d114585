// A finding's figures for the analysis tests. Header-only: only tests that link the analysis layer
// include it.
#pragma once

#include "dumpsift/analysis/findings.h"

#include <catch2/catch.hpp>
#include <string>

namespace dumpsift::test {

/// The figure `key` of finding `f` (the test fails when it has none).
inline uint64_t findingNumber(const Finding &f, const std::string &key) {
  for (const auto &[k, v] : f.numbers)
    if (k == key)
      return v;
  FAIL("finding " << f.type << " has no number " << key);
  return 0;
}

} // namespace dumpsift::test
