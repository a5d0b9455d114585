// The test helpers' own guards (test_support.h, catch_main.cc), as hidden test cases ([.]) that
// must skip or fail: tests/CMakeLists.txt runs each by name, in the ctest entries "catch: ...",
// and checks its output and exit code.
#include "support/test_support.h"

#include <catch2/catch.hpp>

using namespace dumpsift::test;

TEST_CASE("guard: a test case whose tool is missing skips", "[.]") {
  if (!availableOrSkipped(false, "no-such-tool is missing, on purpose"))
    return;
  FAIL("availableOrSkipped(false, ...) went on");
}

TEST_CASE("guard: a unit test that starts a live process fails", "[.]") {
  LiveProcess process(fixtureProgram("hold_buffers"));
  FAIL("a unit test started " << process.pid());
}
