// One `/bin/sh -c <command>` run: its own process group, stdin from /dev/null, stdout and stderr
// read through pipes. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string_view>

#include "agent/child_process.h"
#include "agent/event_loop.h"
#include "agent/output_stream.h"
#include "agent/pipe_reader.h"

namespace agent {

class ShellProcess {
 public:
  // Callbacks may destroy the ShellProcess that invoked them.
  struct Events {
    std::function<void(OutputStream, std::string_view)> on_output;
    std::function<void(int wait_status)> on_exit;  // the shell itself ended
  };

  // Throws std::system_error when /bin/sh cannot be started.
  ShellProcess(EventLoop& loop, Reaper& reaper, std::string_view command, Events events);
  // Stops reading. Does not kill: background jobs may outlive the command that started them.
  ~ShellProcess();
  ShellProcess(const ShellProcess&) = delete;
  ShellProcess& operator=(const ShellProcess&) = delete;

  void signalGroup(int signal) noexcept;
  void drainOutput();
  [[nodiscard]] pid_t pgid() const noexcept { return pid_; }

 private:
  Reaper& reaper_;
  Events events_;
  pid_t pid_ = -1;
  std::unique_ptr<PipeReader> stdout_;
  std::unique_ptr<PipeReader> stderr_;
};

}  // namespace agent
