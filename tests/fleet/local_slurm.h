// A real Slurm cluster of two nodes on localhost for one test (Debian's slurm-wlm and munge):
// slurmctld and two slurmd (node1, node2) started with a configuration in the test's directory, no
// systemd, and taken down whatever happens when it goes out of scope. What matters in the
// configuration, and how a node is killed safely, is in ../shared/docs/notes/fleet_engines.md and
// docs/fleet.md. Processes are only ever signalled by PID, each checked first: a daemon's PID from
// its pid file with its command line, a task's from its environment.
#pragma once

#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace dumpsift::test {

/// The NUL-separated strings of /proc/PID/NAME (cmdline, environ); empty when unreadable.
inline std::vector<std::string> procStrings(pid_t pid, const char *name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + name, std::ios::binary);
  std::vector<std::string> strings;
  for (std::string s; std::getline(in, s, '\0');)
    strings.push_back(s);
  return strings;
}

/// Every process id in /proc.
inline std::vector<pid_t> allPids() {
  std::vector<pid_t> pids;
  for (const auto &entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
      pids.push_back(pid_t(std::stol(name)));
  }
  return pids;
}

/// Whether the environment of `pid` holds exactly `variable` ("NAME=VALUE").
inline bool hasEnvironment(pid_t pid, const std::string &variable) {
  for (const std::string &entry : procStrings(pid, "environ"))
    if (entry == variable)
      return true;
  return false;
}

/// SIGKILL to `pid`, a process this test started (by way of Slurm), checked by the caller.
inline void killChecked(pid_t pid) {
  REQUIRE(pid > 1);
  REQUIRE(pid != getpid());
  kill(pid, SIGKILL);
}

class LocalSlurm {
public:
  /// Whether the programs the cluster needs are installed.
  static bool installed() {
    return runCommand("command -v slurmctld && command -v slurmd && command -v sbatch && "
                      "command -v squeue && command -v scontrol && command -v munged")
               .exit_code == 0;
  }

  /// Writes the configuration into `dir` and starts the cluster: munged (unless one runs),
  /// slurmctld, slurmd for node1 and node2; REQUIREs both nodes idle within 30 s.
  explicit LocalSlurm(const std::string &dir) : dir_(dir) {
    namespace fs = std::filesystem;
    fs::create_directories(dir_ + "/state");
    fs::create_directories(dir_ + "/spool");
    fs::create_directories(dir_ + "/log");
    conf_ = dir_ + "/slurm.conf";
    std::ofstream conf(conf_);
    conf << "ClusterName=dumpsift\n"
            "SlurmctldHost=localhost\n"
            "SlurmctldPort=16817\n"
            "SlurmdPort=16818\n"
            "SlurmUser=root\n"
            "SlurmdUser=root\n"
            "AuthType=auth/munge\n"
            "CredType=cred/munge\n"
            "StateSaveLocation="
         << dir_ << "/state\nSlurmdSpoolDir=" << dir_ << "/spool/%n\nSlurmctldPidFile=" << dir_
         << "/slurmctld.pid\nSlurmdPidFile=" << dir_ << "/slurmd-%n.pid\nSlurmctldLogFile=" << dir_
         << "/log/slurmctld.log\nSlurmdLogFile=" << dir_
         << "/log/slurmd-%n.log\n"
            "ProctrackType=proctrack/linuxproc\n"
            "TaskPlugin=task/none\n"
            "ReturnToService=2\n"
            "SchedulerType=sched/backfill\n"
            "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0\n"
            "SelectType=select/cons_tres\n"
            "SelectTypeParameters=CR_Core\n"
            "AccountingStorageType=accounting_storage/none\n"
            "JobAcctGatherType=jobacct_gather/none\n"
            "JobCompType=jobcomp/filetxt\n"
            "JobCompLoc="
         << dir_
         << "/jobcomp.txt\n"
            "MailProg=/bin/true\n"
            "MpiDefault=none\n"
            "SlurmdTimeout=10\n"
            "KillWait=5\n"
            "MinJobAge=600\n"
            "NodeName=node[1-2] NodeHostname=localhost NodeAddr=127.0.0.1 "
            "Port=[17001-17002] CPUs=1 RealMemory=2048\n"
            "PartitionName=main Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP\n";
    conf.close();
    REQUIRE(conf.good());

    if (!std::filesystem::exists("/run/munge/munge.socket.2")) {
      REQUIRE(runCommand("mkdir -p /run/munge /var/log/munge /var/lib/munge && chown munge:munge "
                         "/run/munge /var/log/munge /var/lib/munge && runuser -u munge -- munged")
                  .exit_code == 0);
      started_munged_ = true;
    }
    CommandResult ctld = run("slurmctld -f '" + conf_ + "'");
    REQUIRE(ctld.exit_code == 0);
    startNode("node1");
    startNode("node2");
    waitUntil([&] { return idleNodes() == 2; }, 30, "both nodes idle");
  }

  ~LocalSlurm() {
    // Whatever happened: no job left, then each daemon this cluster started, then munged.
    (void)run("scancel --full --user=" + std::to_string(getuid()));
    for (const char *name : {"slurmd-node1", "slurmd-node2", "slurmctld"})
      killDaemon(name);
    if (started_munged_) {
      std::ifstream pid_file("/run/munge/munged.pid");
      pid_t pid = 0;
      if (pid_file >> pid && pid > 1 && commandLine(pid).rfind("munged", 0) == 0)
        kill(pid, SIGTERM);
    }
  }
  LocalSlurm(const LocalSlurm &) = delete;
  LocalSlurm &operator=(const LocalSlurm &) = delete;

  const std::string &conf() const { return conf_; }
  const std::string &dir() const { return dir_; }

  /// A command line run with SLURM_CONF set to this cluster's configuration.
  CommandResult run(const std::string &command) const {
    return runCommand("export SLURM_CONF='" + conf_ + "'; " + command);
  }

  /// Starts slurmd for `node`.
  void startNode(const std::string &node) const {
    REQUIRE(run("slurmd -f '" + conf_ + "' -N " + node).exit_code == 0);
  }

  /// How many nodes are idle.
  int idleNodes() const {
    CommandResult r = run("sinfo -h -N -t idle -o %N");
    int n = 0;
    for (char c : r.out)
      n += c == '\n';
    return r.exit_code == 0 ? n : 0;
  }

  /// Kills node `node` as a machine failure would: its slurmd (the PID in its pid file, whose
  /// command line names it), the step daemon of batch job `job_id` ("slurmstepd: [JOB.batch]"),
  /// and every process whose environment holds SLURM_JOB_ID=`job_id`. Returns the command lines
  /// of the processes killed.
  std::vector<std::string> killNode(const std::string &node, const std::string &job_id) const {
    std::vector<std::string> killed;
    const pid_t slurmd = pidFromFile(dir_ + "/slurmd-" + node + ".pid");
    const std::string slurmd_command = commandLine(slurmd);
    INFO("slurmd of " << node << ": pid " << slurmd << ": " << slurmd_command);
    REQUIRE(slurmd_command.rfind("slurmd ", 0) == 0);
    REQUIRE(slurmd_command.find("-N " + node) != std::string::npos);
    killChecked(slurmd);
    killed.push_back(slurmd_command);
    const std::string step = "slurmstepd: [" + job_id + ".batch]";
    for (pid_t pid : allPids()) {
      if (pid <= 1 || pid == getpid())
        continue;
      const std::string command = commandLine(pid);
      if (command.rfind(step, 0) == 0 || hasEnvironment(pid, "SLURM_JOB_ID=" + job_id)) {
        killChecked(pid);
        killed.push_back(command);
      }
    }
    return killed;
  }

  /// Waits, polling every 100 ms, until `done()` or `seconds` pass (then FAILs naming `what`).
  template <typename Done>
  void waitUntil(Done done, double seconds, const std::string &what) const {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(seconds));
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline)
        FAIL("the Slurm cluster in " << dir_ << ": not " << what << " within " << seconds << " s");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  /// The command line of `pid`, its arguments joined by spaces ("" when it is gone).
  static std::string commandLine(pid_t pid) {
    std::string line;
    for (const std::string &arg : procStrings(pid, "cmdline"))
      line += (line.empty() ? "" : " ") + arg;
    return line;
  }

private:
  static pid_t pidFromFile(const std::string &path) {
    std::ifstream in(path);
    pid_t pid = 0;
    in >> pid;
    return pid;
  }

  /// Stops the daemon whose pid file is `name`.pid, when that process is the daemon: SIGTERM,
  /// and SIGKILL when it is still there 10 s later (the next cluster uses the same ports).
  void killDaemon(const std::string &name) const {
    const pid_t pid = pidFromFile(dir_ + "/" + name + ".pid");
    if (pid <= 1 || pid == getpid())
      return;
    const std::string command = commandLine(pid);
    if (command.find(conf_) == std::string::npos ||
        (command.rfind("slurmctld ", 0) != 0 && command.rfind("slurmd ", 0) != 0))
      return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 100 && commandLine(pid) == command; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (commandLine(pid) == command)
      kill(pid, SIGKILL);
  }

  std::string dir_;
  std::string conf_;
  bool started_munged_ = false;
};

} // namespace dumpsift::test
