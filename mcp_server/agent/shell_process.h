// One `/bin/sh` run of a command: its own process group, stdin from /dev/null, stdout and stderr
// read through pipes. A shell can be started cold with its command (`sh -c COMMAND`), or
// prestarted ("warm") before the command is known and handed it later: under gVisor starting a
// process costs ~10 ms, which a warm shell pays while the sandbox is idle. Not thread-safe.
#pragma once

#include <limits.h>
#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

#include "agent/child_process.h"
#include "agent/event_loop.h"
#include "agent/output_stream.h"
#include "agent/pipe_reader.h"

namespace agent {

// Commands longer than this go to a cold shell. A warm shell's command is written into its pipe in
// one write of at most PIPE_BUF bytes, which is all or nothing: a shell never sees part of one.
inline constexpr std::size_t kMaxWarmShellCommandBytes = PIPE_BUF - 16;

class ShellProcess {
 public:
  // Callbacks may destroy the ShellProcess that invoked them.
  struct Events {
    std::function<void(OutputStream, std::string_view)> on_output;
    std::function<void(int wait_status)> on_exit;  // the shell itself ended
  };

  // Cold: runs `sh -c command` now. Throws std::system_error when /bin/sh cannot be started.
  ShellProcess(EventLoop& loop, Reaper& reaper, std::string_view command, Events events);
  // Warm: starts `sh` waiting to read its command from a pipe (run() hands it over). Throws
  // std::system_error when /bin/sh cannot be started.
  [[nodiscard]] static std::unique_ptr<ShellProcess> prestart(EventLoop& loop, Reaper& reaper);
  // Stops reading. Does not kill a shell that ran a command: background jobs may outlive it. An
  // idle warm shell is killed.
  ~ShellProcess();
  ShellProcess(const ShellProcess&) = delete;
  ShellProcess& operator=(const ShellProcess&) = delete;

  // Hands `command` to a warm shell; false (and nothing happened) when the shell has died (code
  // may kill it while it waits), it already ran something, or the command is too long: start a
  // cold one then. The shell sources the command, so it runs as with `sh -c` in the same shell
  // process ($0, exit, line numbers alike); only error messages name /proc/self/fd/3 as the
  // script, e.g. "sh: 1: /proc/self/fd/3: Syntax error: ...".
  [[nodiscard]] bool run(std::string_view command, Events events);

  void signalGroup(int signal) noexcept;
  void drainOutput();
  [[nodiscard]] pid_t pgid() const noexcept { return pid_; }
  // A warm shell that is still alive and has not been handed a command.
  [[nodiscard]] bool waiting() const noexcept { return waiting_ && !exited_; }

 private:
  ShellProcess(EventLoop& loop, Reaper& reaper) : loop_(loop), reaper_(reaper) {}
  void start(const SpawnSpec& spec, Pipe& out, Pipe& err);
  void attach(Events events);

  EventLoop& loop_;
  Reaper& reaper_;
  Events events_;
  pid_t pid_ = -1;
  UniqueFd stdout_fd_;  // read ends, until attach() hands them to the readers
  UniqueFd stderr_fd_;
  UniqueFd script_fd_;  // a warm shell's command goes in here
  bool waiting_ = false;
  bool exited_ = false;
  std::unique_ptr<PipeReader> stdout_;
  std::unique_ptr<PipeReader> stderr_;
};

}  // namespace agent
