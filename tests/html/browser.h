// Loading a page dumpsift wrote in headless Chromium (tests/html/browser_check.py): the per-dump
// page's tests and the fleet page's share it.
#pragma once

#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <string>

namespace dumpsift::test {

/// What browser_check.py saw of the page at `html`; its screenshot goes to `png`.
inline nlohmann::json loadInBrowser(const std::string &dir, const std::string &html,
                                    const std::string &png) {
  CommandResult r =
      runCommand("python3 '" + sourceDir() + "/tests/html/browser_check.py' '" + chromiumPath() +
                 "' '" + html + "' '" + png + "' '" + dir + "/chromium-profile'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

/// The page made no request but for itself and logged no error.
inline void requireQuietPage(const nlohmann::json &seen, const std::string &html) {
  INFO(seen.dump(2));
  CHECK(seen["console_errors"].empty());
  REQUIRE(seen["requests"].size() == 1);
  CHECK(seen["requests"][0] == "file://" + html);
}

} // namespace dumpsift::test
