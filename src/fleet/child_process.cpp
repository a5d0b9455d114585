// A child process with a time limit (child_process.h).
#include "child_process.h"

#include "llvm/Support/Errno.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace dumpsift::detail {

namespace {
constexpr size_t kStderrKept = 64 << 10;

using Clock = std::chrono::steady_clock;

/// Milliseconds left until `deadline` (none: -1, poll's "no limit"), at least 0.
int millisecondsLeft(const std::optional<Clock::time_point> &deadline) {
  if (!deadline)
    return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
  return int(std::max<int64_t>(0, std::min<int64_t>(left.count(), 1 << 30)));
}

/// In the child, after fork: dies with the parent, stdin and stdout on /dev/null, stderr into
/// `stderr_fd`, then becomes `argv`. Only async-signal-safe calls.
[[noreturn]] void becomeChild(char *const *argv, int stderr_fd, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) // the parent died before prctl
    _exit(127);
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0 ||
      dup2(stderr_fd, STDERR_FILENO) < 0)
    _exit(127);
  execv(argv[0], argv);
  const char message[] = "dumpsift: error: cannot run the analysis\n";
  (void)!write(STDERR_FILENO, message, sizeof message - 1);
  _exit(127);
}
} // namespace

llvm::Expected<ChildEnd> runChild(const std::vector<std::string> &argv,
                                  std::optional<double> timeout_seconds) {
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0)
    return llvm::errorCodeToError(std::error_code(errno, std::generic_category()));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int saved = errno;
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return llvm::errorCodeToError(std::error_code(saved, std::generic_category()));
  }
  if (pid == 0)
    becomeChild(args.data(), pipe_fds[1], parent);
  close(pipe_fds[1]);

  std::optional<Clock::time_point> deadline;
  if (timeout_seconds)
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(*timeout_seconds));
  ChildEnd end;
  // Read stderr until the child closes it (it exits) or the time is up.
  for (;;) {
    pollfd poll_fd{pipe_fds[0], POLLIN, 0};
    const int ready = poll(&poll_fd, 1, millisecondsLeft(deadline));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready == 0) {
      end.timed_out = true;
      break;
    }
    char chunk[4096];
    const ssize_t got = read(pipe_fds[0], chunk, sizeof chunk);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break;
    end.stderr_tail.append(chunk, size_t(got));
    if (end.stderr_tail.size() > 2 * kStderrKept)
      end.stderr_tail.erase(0, end.stderr_tail.size() - kStderrKept);
  }
  close(pipe_fds[0]);
  if (end.stderr_tail.size() > kStderrKept)
    end.stderr_tail.erase(0, end.stderr_tail.size() - kStderrKept);

  // Wait for it to end; past the deadline, kill it.
  int status = 0;
  for (;;) {
    if (end.timed_out)
      kill(pid, SIGKILL);
    const pid_t waited = waitpid(pid, &status, end.timed_out ? 0 : WNOHANG);
    if (waited == pid)
      break;
    if (waited < 0 && errno != EINTR)
      return llvm::errorCodeToError(std::error_code(errno, std::generic_category()));
    if (waited == 0) {
      if (millisecondsLeft(deadline) == 0)
        end.timed_out = true;
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (WIFEXITED(status))
    end.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    end.signal = WTERMSIG(status);
  return end;
}

} // namespace dumpsift::detail
