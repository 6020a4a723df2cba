// The Executor's shell commands: each in its own `/bin/sh`, a warm one when it is ready.
#include <signal.h>

#include <cstdio>
#include <system_error>
#include <utility>

#include "agent/executor.h"
#include "agent/executor_run.h"

namespace agent {

void Executor::prestartShell() {
  if (warm_shell_failed_ || (warm_shell_ && warm_shell_->waiting())) return;
  warm_shell_.reset();  // one that died while it waited
  try {
    warm_shell_ = ShellProcess::prestart(loop_, reaper_);
    groups_.insert(warm_shell_->pgid());
  } catch (const std::system_error& e) {
    // Commands still start cold, and report the failure then.
    warm_shell_failed_ = true;
    std::fprintf(stderr, "sandbox-agent: no warm shell (%s)\n", e.what());
  }
}

void Executor::startShell() {
  ShellProcess::Events events{
      [this](OutputStream s, std::string_view d) { appendOutput(s, d); },
      [this](int wait_status) { onShellExit(wait_status); },
  };
  if (warm_shell_ && warm_shell_->run(run_->request.code, events)) {
    run_->shell = std::move(warm_shell_);
    return;
  }
  warm_shell_.reset();  // dead, or the command is too long for it: a new one once idle
  try {
    run_->shell =
        std::make_unique<ShellProcess>(loop_, reaper_, run_->request.code, std::move(events));
    groups_.insert(run_->shell->pgid());
  } catch (const std::system_error& e) {
    const std::int64_t id = run_->request.id;
    loop_.cancelTimer(run_->deadline_timer);
    run_.reset();
    rejectRequest(id, std::string("cannot start /bin/sh (") + e.what() +
                          "); shell commands need an image with /bin/sh");
    pump();
  }
}

void Executor::onShellExit(int wait_status) {
  run_->shell->drainOutput();
  ExecResult result;
  if (run_->stop_status) {
    run_->shell->signalGroup(SIGKILL);  // whatever outlived the shell goes too
    result.status = *run_->stop_status;
    result.exit_code = run_->stoppedExitCode();
    run_->notes.push_back("[sandbox] command " + run_->stoppedBecause() +
                          "; its process group was killed");
  } else {
    result.exit_code = shellStyleExitCode(wait_status);
    result.status = result.exit_code == 0 ? ExecStatus::kSuccess : ExecStatus::kError;
  }
  run_->shell.reset();
  finish(std::move(result));
}

}  // namespace agent
