// What the test binaries' main (catch_main.cc) and the test helpers share about the running test
// case: its tags (for requireNotUnit) and the skips recorded (availableOrSkipped,
// leftOutOfThisBuild), which decide the binary's exit code.
#pragma once

#include <string>
#include <vector>

namespace dumpsift::test {

/// The exit code of a test binary whose test cases passed but one or more skipped;
/// tests/CMakeLists.txt gives every ctest entry SKIP_RETURN_CODE 77, so ctest shows it skipped.
/// A failure wins over a skip: a test case that failed and skipped exits as a failure.
constexpr int kSkipExitCode = 77;

/// Called by main's listener as each test case starts, with its name and Catch tags.
void testCaseStarting(const std::string &name, const std::vector<std::string> &tags);

/// "<test case>: <why>" for each skip recorded in this run, in order.
const std::vector<std::string> &skipsRecorded();

} // namespace dumpsift::test
