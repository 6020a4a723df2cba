#include "agent/shell_process.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

namespace agent {
namespace {

// The warm shell sources its command from fd 3 (as a file it opens itself, close-on-exec); the
// command's first line closes fd 3 so that nothing the command starts inherits it.
constexpr const char* kWarmScript = ". /proc/self/fd/3";
constexpr std::string_view kCloseScriptFd = "exec 3<&-; ";
static_assert(kMaxWarmShellCommandBytes + kCloseScriptFd.size() + 1 <= PIPE_BUF);

}  // namespace

ShellProcess::ShellProcess(EventLoop& loop, Reaper& reaper, std::string_view command, Events events)
    : ShellProcess(loop, reaper) {
  Pipe out = makePipe(true);
  Pipe err = makePipe(true);
  SpawnSpec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", std::string(command)};
  spec.fds = {{1, out.write_end.get()}, {2, err.write_end.get()}};
  start(spec, out, err);
  attach(std::move(events));
}

std::unique_ptr<ShellProcess> ShellProcess::prestart(EventLoop& loop, Reaper& reaper) {
  std::unique_ptr<ShellProcess> shell(new ShellProcess(loop, reaper));
  Pipe out = makePipe(true);
  Pipe err = makePipe(true);
  Pipe script = makePipe(false);
  SpawnSpec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", kWarmScript};
  spec.fds = {{1, out.write_end.get()}, {2, err.write_end.get()}, {3, script.read_end.get()}};
  shell->start(spec, out, err);
  shell->script_fd_ = std::move(script.write_end);
  shell->waiting_ = true;
  ShellProcess* raw = shell.get();
  reaper.onExit(shell->pid_, [raw](int /*wait_status*/) { raw->exited_ = true; });
  return shell;
}

void ShellProcess::start(const SpawnSpec& spec, Pipe& out, Pipe& err) {
  pid_ = spawnProcess(spec);
  stdout_fd_ = std::move(out.read_end);
  stderr_fd_ = std::move(err.read_end);
}

void ShellProcess::attach(Events events) {
  events_ = std::move(events);
  stdout_ = std::make_unique<PipeReader>(loop_, std::move(stdout_fd_), [this](std::string_view c) {
    events_.on_output(OutputStream::kStdout, c);
  });
  stderr_ = std::make_unique<PipeReader>(loop_, std::move(stderr_fd_), [this](std::string_view c) {
    events_.on_output(OutputStream::kStderr, c);
  });
  reaper_.onExit(pid_, [this](int wait_status) {
    auto on_exit = events_.on_exit;  // copy: the callback may destroy *this
    on_exit(wait_status);
  });
}

bool ShellProcess::run(std::string_view command, Events events) {
  if (!waiting() || command.size() > kMaxWarmShellCommandBytes) return false;
  std::string script;
  script.reserve(kCloseScriptFd.size() + command.size() + 1);
  script.append(kCloseScriptFd).append(command).push_back('\n');
  // Non-blocking, and at most PIPE_BUF bytes: written whole or not at all. Not at all means the
  // shell is gone (EPIPE): the caller starts a cold one.
  const int flags = ::fcntl(script_fd_.get(), F_GETFL);
  ::fcntl(script_fd_.get(), F_SETFL, flags | O_NONBLOCK);
  ssize_t n;
  do {
    n = ::write(script_fd_.get(), script.data(), script.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(script.size())) return false;
  script_fd_.reset();  // end of file: the shell exits after the command, as `sh -c` does
  waiting_ = false;
  attach(std::move(events));
  return true;
}

ShellProcess::~ShellProcess() {
  reaper_.forget(pid_);
  // An unused warm shell has no command to outlive: it goes with its group.
  if (waiting_ && !exited_) agent::signalGroup(pid_, SIGKILL);
}

void ShellProcess::signalGroup(int signal) noexcept { agent::signalGroup(pid_, signal); }

void ShellProcess::drainOutput() {
  if (stdout_) stdout_->drain();
  if (stderr_) stderr_->drain();
}

}  // namespace agent
