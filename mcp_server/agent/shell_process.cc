#include "agent/shell_process.h"

#include <string>
#include <utility>

namespace agent {

ShellProcess::ShellProcess(EventLoop& loop, Reaper& reaper, std::string_view command, Events events)
    : reaper_(reaper), events_(std::move(events)) {
  Pipe out = makePipe(true);
  Pipe err = makePipe(true);
  SpawnSpec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", std::string(command)};
  spec.fds = {{1, out.write_end.get()}, {2, err.write_end.get()}};
  pid_ = spawnProcess(spec);
  stdout_ = std::make_unique<PipeReader>(loop, std::move(out.read_end), [this](std::string_view c) {
    events_.on_output(OutputStream::kStdout, c);
  });
  stderr_ = std::make_unique<PipeReader>(loop, std::move(err.read_end), [this](std::string_view c) {
    events_.on_output(OutputStream::kStderr, c);
  });
  reaper_.onExit(pid_, [this](int wait_status) {
    auto on_exit = events_.on_exit;  // copy: the callback may destroy *this
    on_exit(wait_status);
  });
}

ShellProcess::~ShellProcess() { reaper_.forget(pid_); }

void ShellProcess::signalGroup(int signal) noexcept { agent::signalGroup(pid_, signal); }

void ShellProcess::drainOutput() {
  stdout_->drain();
  stderr_->drain();
}

}  // namespace agent
