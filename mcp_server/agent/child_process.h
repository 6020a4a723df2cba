// Starting child processes with chosen file descriptors, and reaping every exited child (PID 1
// also inherits orphans). Not thread-safe; the agent is single-threaded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/unique_fd.h"

namespace agent {

using common::UniqueFd;

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};

// A pipe whose both ends are close-on-exec; the read end is non-blocking when asked.
[[nodiscard]] Pipe makePipe(bool nonblocking_read);

struct SpawnSpec {
  std::string executable;         // absolute path; no PATH search
  std::vector<std::string> argv;  // argv[0] included
  // child fd number <- parent fd. Everything else is closed in the child (all agent fds are
  // close-on-exec). The child's stdin is /dev/null unless mapped here.
  std::vector<std::pair<int, int>> fds;
};

// Forks and execs `spec` in a new process group (pgid == pid) with an empty signal mask and default
// signal dispositions. Throws std::system_error naming the executable when fork or exec fails.
[[nodiscard]] pid_t spawnProcess(const SpawnSpec& spec);

// Exit status as a shell reports it: the exit code, or 128 + signal number.
[[nodiscard]] int shellStyleExitCode(int wait_status) noexcept;
// "exited with code 3", "was killed by signal 9 (Killed)": for notes and log lines.
[[nodiscard]] std::string describeExit(int wait_status);

// Reaps every exited child and tells whoever asked about that pid.
class Reaper {
 public:
  using ExitCallback = std::function<void(int wait_status)>;

  void onExit(pid_t pid, ExitCallback callback) { callbacks_[pid] = std::move(callback); }
  void forget(pid_t pid) noexcept { callbacks_.erase(pid); }

  // waitpid(-1, WNOHANG) until nothing is left to reap; runs the callbacks of watched pids.
  void reapAll();

 private:
  std::map<pid_t, ExitCallback> callbacks_;
};

// Sends `signal` to process group `pgid`; a group that is already gone is not an error.
void signalGroup(pid_t pgid, int signal) noexcept;
[[nodiscard]] bool groupExists(pid_t pgid) noexcept;

// SIGKILLs every remaining child of this process (found through /proc, so orphans adopted by
// PID 1 or a subreaper are included) and reaps them, for at most `wait`. For shutdown.
void killRemainingChildren(
    std::chrono::milliseconds wait = std::chrono::milliseconds(1000)) noexcept;

}  // namespace agent
