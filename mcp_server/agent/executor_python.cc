// The Executor's Python cells: the persistent driver (driver.py), its start, replies and restarts.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

#include "agent/driver_reply.h"
#include "agent/driver_source.h"  // generated from driver.py: kDriverSource
#include "agent/executor.h"
#include "agent/executor_run.h"
#include "agent/output_capture.h"
#include "agent/rich_display_source.h"  // generated from rich_display.py: kRichDisplaySource

namespace agent {

void Executor::startPython() {
  python3_ = findOnPath("python3");
  if (!python3_) {
    driver_failure_ =
        "this sandbox image has no python3 on PATH, so Python code cannot run here; run_shell "
        "and the file tools still work (or use an image with Python)";
    std::fprintf(stderr, "sandbox-agent: no python3 found on PATH; Python execution is disabled\n");
    return;
  }
  startDriver();
}

void Executor::startDriver() {
  driver_startup_output_.clear();
  InterpreterDriver::Events events{
      [this] { onDriverReady(); },
      [this](OutputStream s, std::string_view d) { onDriverOutput(s, d); },
      [this](const nlohmann::json& reply) { onDriverReply(reply); },
      [this](int wait_status) { onDriverExit(wait_status); },
  };
  try {
    // rich_display.py first: driver.py uses what it defines (one program, one globals dict).
    driver_ = std::make_unique<InterpreterDriver>(
        loop_, reaper_, *python3_,
        std::vector<std::string>{
            "python3", "-c", std::string(kRichDisplaySource) + "\n" + std::string(kDriverSource)},
        "Python", std::move(events));
    groups_.insert(driver_->pid());
  } catch (const std::system_error& e) {
    driver_failure_ = std::string("cannot start the Python interpreter (") + e.what() +
                      "); run_shell and the file tools still work";
    std::fprintf(stderr, "sandbox-agent: %s\n", driver_failure_.c_str());
    settlePythonWaiters();
  }
}

void Executor::settlePythonWaiters() {
  auto waiters = std::exchange(python_waiters_, {});
  for (auto& waiter : waiters) waiter();
}

void Executor::whenPythonSettled(std::function<void()> callback) {
  if (driver_ && !driver_->ready()) {
    python_waiters_.push_back(std::move(callback));
  } else {
    callback();
  }
}

nlohmann::json Executor::pythonInfo() const {
  const bool running = driver_ && driver_->ready();
  nlohmann::json info = {
      {"python", running},
      {"python_version", running ? nlohmann::json(driver_->version()) : nlohmann::json(nullptr)}};
  if (!running && !driver_failure_.empty()) info["python_error"] = driver_failure_;
  return info;
}

void Executor::onDriverReady() {
  driver_failure_.clear();
  settlePythonWaiters();
  pump();
}

void Executor::onDriverOutput(OutputStream stream, std::string_view data) {
  if (run_ && run_->request.kind == ExecKind::kPython) {
    appendOutput(stream, data);
  } else if (driver_ && !driver_->ready() &&
             driver_startup_output_.size() < kMaxStartupOutputBytes) {
    driver_startup_output_.append(data.substr(0, kMaxStartupOutputBytes));
  }
  // Otherwise: output of a background thread between cells, which belongs to no execution.
}

void Executor::onDriverReply(const nlohmann::json& reply) {
  if (!run_ || run_->request.kind != ExecKind::kPython) {
    std::fprintf(stderr, "sandbox-agent: ignoring a Python reply with no execution running\n");
    return;
  }
  driver_->drainOutput();  // the driver flushed before replying: all output is in the pipes
  if (!run_->stop_status) {
    ExecResult result =
        resultFromDriverReply(reply, {run_->request.max_output_bytes, true, run_->request.images});
    for (const auto& why : result.rich.dropped) run_->notes.push_back("[sandbox] " + why);
    finish(std::move(result));
    return;
  }
  ExecResult result;
  result.status = *run_->stop_status;
  result.exit_code = run_->stoppedExitCode();
  run_->notes.push_back("[sandbox] execution " + run_->stoppedBecause() +
                        " and was interrupted (KeyboardInterrupt); the interpreter state "
                        "(variables, imports) is kept");
  finish(std::move(result));
}

void Executor::onDriverExit(int wait_status) {
  const bool was_ready = driver_->ready();
  driver_->drainOutput();
  driver_.reset();
  if (!was_ready) {
    std::string output = driver_startup_output_;
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
    driver_failure_ = "the Python interpreter (" + *python3_ + ") " + describeExit(wait_status) +
                      " during start-up" + (output.empty() ? "" : ": " + output) +
                      "; run_shell and the file tools still work";
    std::fprintf(stderr, "sandbox-agent: %s\n", driver_failure_.c_str());
    settlePythonWaiters();
    pump();  // a queued Python request is answered with the failure
    return;
  }
  std::fprintf(stderr, "sandbox-agent: the Python driver %s; restarting it\n",
               describeExit(wait_status).c_str());
  startDriver();
  if (!run_ || run_->request.kind != ExecKind::kPython) {
    state_lost_while_idle_ = true;
    return;
  }
  ExecResult result;
  result.state_lost = true;
  if (run_->stop_status) {
    result.status = *run_->stop_status;
    result.exit_code = run_->stoppedExitCode();
  } else {
    result.status = ExecStatus::kError;
    result.exit_code = shellStyleExitCode(wait_status);
  }
  run_->notes.push_back("[sandbox] the Python interpreter " + describeExit(wait_status) +
                        "; it was restarted and its state (variables, imports) was lost");
  finish(std::move(result));
}

void Executor::onPythonGraceExpired() {
  run_->grace_timer = 0;
  driver_->drainOutput();
  driver_->killGroup();
  driver_.reset();
  startDriver();
  ExecResult result;
  result.status = *run_->stop_status;
  result.exit_code = run_->stoppedExitCode();
  result.state_lost = true;
  run_->notes.push_back("[sandbox] execution " + run_->stoppedBecause() +
                        "; the Python interpreter was restarted and its state (variables, "
                        "imports) was lost");
  finish(std::move(result));
}

}  // namespace agent
