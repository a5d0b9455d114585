// Running one program as a child process with a time limit, for `fleet task` (task.cpp).
#pragma once

#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace dumpsift::detail {

/// How a child process ended.
struct ChildEnd {
  bool timed_out = false;  // it ran past the limit and was killed (SIGKILL)
  int exit_code = -1;      // its exit status, when it exited
  int signal = 0;          // the signal that ended it, when one did (SIGKILL after a timeout too)
  std::string stderr_tail; // the last 64 KiB it wrote on stderr
};

/// Runs `argv` (argv[0] a path) with stdin and stdout on /dev/null and stderr captured, and waits
/// for it to end, at most `timeout_seconds` when given: then it is killed. The child is killed
/// too when the calling process dies first (PR_SET_PDEATHSIG), so that no analysis outlives its
/// task. Fails only when the child cannot be started (the error keeps the system's code).
llvm::Expected<ChildEnd> runChild(const std::vector<std::string> &argv,
                                  std::optional<double> timeout_seconds);

} // namespace dumpsift::detail
