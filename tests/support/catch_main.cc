// The main of every test binary, compiled once (tests/CMakeLists.txt) and linked into each:
// Catch2's session, with a listener that tells the test helpers which test case runs (its tags
// decide what it may start: requireNotUnit), and an exit code ctest reads: kSkipExitCode when
// every test case run passed and one or more was skipped (SKIP_RETURN_CODE), the reasons listed
// on stdout.
#define CATCH_CONFIG_RUNNER
#define CATCH_CONFIG_EXTERNAL_INTERFACES
// Catch2 v2's console reporter indents the lines of a test case's name after its first ": ", and
// throws std::out_of_range when that is past the console width (80 by default): a test case
// whose ": " comes late (column 83) aborted whenever it printed a warning or a failure.
#define CATCH_CONFIG_CONSOLE_WIDTH 120
#include "support/test_run.h"

#include <catch2/catch.hpp>
#include <iostream>

namespace {

struct TestCaseTags : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo &info) override {
    dumpsift::test::testCaseStarting(info.name, info.tags);
  }
};

} // namespace

CATCH_REGISTER_LISTENER(TestCaseTags)

int main(int argc, char *argv[]) {
  const int result = Catch::Session().run(argc, argv);
  const std::vector<std::string> &skips = dumpsift::test::skipsRecorded();
  for (const std::string &skip : skips)
    std::cout << "SKIPPED: " << skip << "\n";
  if (result != 0) // failures (or, with --list-*, the number of test cases listed)
    return result == dumpsift::test::kSkipExitCode ? 1 : result;
  return skips.empty() ? 0 : dumpsift::test::kSkipExitCode;
}
