#include "agent/executor.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

#include "agent/executor_run.h"
#include "agent/output_capture.h"

namespace agent {

Executor::Executor(EventLoop& loop, Reaper& reaper, SendFrame send,
                   std::filesystem::path saved_output_dir)
    : loop_(loop),
      reaper_(reaper),
      send_(std::move(send)),
      saved_output_dir_(std::move(saved_output_dir)) {}

Executor::~Executor() { killEverything(); }

// ---- queue ----------------------------------------------------------------------------------

void Executor::submit(ExecRequest request) {
  queue_.push_back(std::move(request));
  pump();
}

void Executor::pump() {
  while (!run_ && !queue_.empty()) {
    const ExecRequest& next = queue_.front();
    if (next.kind == ExecKind::kJavascript && !(js_driver_ && js_driver_->ready())) {
      if (js_driver_) return;  // starting: onJavascriptReady() pumps again
      if (!front_start_attempted_) {
        front_start_attempted_ = true;
        startJavascript();
        if (js_driver_) return;
      }
      const std::int64_t id = next.id;
      queue_.pop_front();
      front_start_attempted_ = false;
      rejectRequest(id, js_failure_);
      continue;
    }
    if (next.kind == ExecKind::kPython && !(driver_ && driver_->ready())) {
      if (driver_) return;  // starting: onDriverReady() pumps again
      if (python3_ && !front_start_attempted_) {
        front_start_attempted_ = true;
        startDriver();
        if (driver_) return;
      }
      const std::int64_t id = next.id;
      queue_.pop_front();
      front_start_attempted_ = false;
      rejectRequest(id, driver_failure_);
      continue;
    }
    ExecRequest request = std::move(queue_.front());
    queue_.pop_front();
    front_start_attempted_ = false;
    beginRun(std::move(request));
  }
  if (!run_ && queue_.empty()) prestartShell();  // idle: pay for the next shell now
}

void Executor::beginRun(ExecRequest request) {
  run_ = std::make_unique<Run>(std::move(request), saved_output_dir_);
  run_->deadline_timer = loop_.addTimer(run_->request.timeout, [this] {
    run_->deadline_timer = 0;
    stop("timeout");
  });
  if (run_->request.kind == ExecKind::kShell) {
    startShell();
    return;
  }
  if (run_->request.kind == ExecKind::kJavascript) {
    // When sending fails Node.js is dying: onJavascriptExit() (or the deadline) finishes this run.
    (void)js_driver_->sendCell(run_->request.code, run_->request.max_output_bytes);
    return;
  }
  // When sending fails the driver is dying: onDriverExit() (or the deadline) finishes this run.
  (void)driver_->sendCell(run_->request.code, run_->request.max_output_bytes, run_->request.images,
                          (saved_output_dir_.parent_path() / "figures").string());
}

void Executor::rejectRequest(std::int64_t id, const std::string& error) {
  send_({{"id", id}, {"ok", false}, {"error", error}});
}

bool Executor::cancel(std::int64_t target) {
  if (run_ && run_->request.id == target) {
    if (!run_->stop_status) stop("cancelled");
    return true;
  }
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->id != target) continue;
    const bool was_front = it == queue_.begin();
    queue_.erase(it);
    if (was_front) front_start_attempted_ = false;
    ExecResult result;
    result.status = "cancelled";
    result.exit_code = kCancelledExitCode;
    result.stderr_text = "[sandbox] execution was cancelled before it started\n";
    send_(toReply(target, result));
    return true;
  }
  return false;
}

// ---- Python driver --------------------------------------------------------------------------

void Executor::startPython() {
  python3_ = findPython3();
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
  PythonDriver::Events events{
      [this] { onDriverReady(); },
      [this](OutputStream s, std::string_view d) { onDriverOutput(s, d); },
      [this](const nlohmann::json& reply) { onDriverReply(reply); },
      [this](int wait_status) { onDriverExit(wait_status); },
  };
  try {
    driver_ = std::make_unique<PythonDriver>(loop_, reaper_, *python3_, std::move(events));
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
  nlohmann::json info = {{"python", running},
                         {"python_version", running ? nlohmann::json(driver_->pythonVersion())
                                                    : nlohmann::json(nullptr)}};
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
  ExecResult result;
  if (run_->stop_status) {
    result.status = *run_->stop_status;
    result.exit_code = run_->stoppedExitCode();
    run_->notes.push_back("[sandbox] execution " + run_->stoppedBecause() +
                          " and was interrupted (KeyboardInterrupt); the interpreter state "
                          "(variables, imports) is kept");
  } else {
    // User code shares the driver's process and can write fd 4 itself: trust no field.
    const auto status = reply.find("status");
    result.status =
        status != reply.end() && status->is_string() && (*status == "success" || *status == "error")
            ? status->get<std::string>()
            : "error";
    const auto exit_code = reply.find("exit_code");
    result.exit_code =
        exit_code != reply.end() && exit_code->is_number_integer()
            ? static_cast<int>(std::clamp<std::int64_t>(exit_code->get<std::int64_t>(), -255, 255))
            : 1;
    const auto value = reply.find("result");
    if (value != reply.end() && value->is_string()) {
      const auto& text = value->get_ref<const std::string&>();
      const std::size_t cap = run_->request.max_output_bytes;
      result.result = text.size() <= cap ? text : text.substr(0, cap) + "...[result cut]";
    }
    result.rich = common::parseRichOutput(reply, run_->request.images);
    for (const auto& why : result.rich.dropped) run_->notes.push_back("[sandbox] " + why);
    // For the timing breakdown only; a forged value misleads nobody but its author.
    const auto exec_ms = reply.find("exec_ms");
    if (exec_ms != reply.end() && exec_ms->is_number() && exec_ms->get<double>() >= 0) {
      result.exec_ms = exec_ms->get<double>();
    }
  }
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
    result.status = "error";
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

// ---- common ---------------------------------------------------------------------------------

void Executor::stop(const std::string& status) {
  if (!run_ || run_->stop_status) return;
  run_->stop_status = status;
  loop_.cancelTimer(run_->deadline_timer);
  run_->deadline_timer = 0;
  if (run_->request.kind == ExecKind::kPython) {
    if (driver_) driver_->interrupt();
    run_->grace_timer = loop_.addTimer(kPythonInterruptGrace, [this] { onPythonGraceExpired(); });
  } else if (run_->request.kind == ExecKind::kJavascript) {
    if (js_driver_) js_driver_->interrupt();
    run_->grace_timer =
        loop_.addTimer(kJavascriptInterruptGrace, [this] { onJavascriptGraceExpired(); });
  } else if (run_->shell) {
    run_->shell->signalGroup(SIGTERM);
    run_->grace_timer = loop_.addTimer(kShellTerminateGrace, [this] {
      run_->grace_timer = 0;
      if (run_->shell) run_->shell->signalGroup(SIGKILL);  // onShellExit() follows
    });
  }
}

void Executor::appendOutput(OutputStream stream, std::string_view data) {
  const bool is_stdout = stream == OutputStream::kStdout;
  const std::string_view kept = (is_stdout ? run_->out : run_->err).append(data);
  if (!run_->request.stream || kept.empty()) return;
  const std::string chunk = (is_stdout ? run_->out_events : run_->err_events).push(kept);
  if (chunk.empty()) return;
  send_({{"id", run_->request.id},
         {"event", "output"},
         {"stream", streamName(stream)},
         {"data", chunk}});
}

void Executor::finish(ExecResult result) {
  Run& run = *run_;
  loop_.cancelTimer(run.deadline_timer);
  loop_.cancelTimer(run.grace_timer);
  if (run.request.stream) {
    for (const auto stream : {OutputStream::kStdout, OutputStream::kStderr}) {
      const bool is_stdout = stream == OutputStream::kStdout;
      const std::string rest = (is_stdout ? run.out_events : run.err_events).flush();
      if (rest.empty()) continue;
      send_({{"id", run.request.id},
             {"event", "output"},
             {"stream", streamName(stream)},
             {"data", rest}});
    }
  }
  if (run.request.kind == ExecKind::kPython && state_lost_while_idle_ && !result.state_lost) {
    result.state_lost = true;
    run.notes.insert(run.notes.begin(),
                     "[sandbox] the Python interpreter had exited since the previous execution; "
                     "it was restarted and earlier state (variables, imports) was lost");
  }
  if (run.request.kind == ExecKind::kPython) state_lost_while_idle_ = false;
  if (run.request.kind == ExecKind::kJavascript && js_state_lost_while_idle_) {
    js_state_lost_while_idle_ = false;
    if (!result.state_lost) {
      result.state_lost = true;
      run.notes.insert(run.notes.begin(),
                       "[sandbox] the Node.js process had exited since the previous JavaScript "
                       "execution; it was restarted and earlier state (variables, functions) was "
                       "lost");
    }
  }

  result.stdout_text = run.out.data();
  result.stderr_text = run.err.data();
  result.stdout_truncated = run.out.truncated();
  result.stderr_truncated = run.err.truncated();
  result.stdout_bytes = run.out.totalBytes();
  result.stderr_bytes = run.err.totalBytes();
  keepSavedOutputs(run, result);
  for (const auto& note : run.notes) {
    if (!result.stderr_text.empty() && result.stderr_text.back() != '\n') {
      result.stderr_text.push_back('\n');
    }
    result.stderr_text += note + "\n";
  }
  result.duration_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - run.started).count();
  const std::int64_t id = run.request.id;
  run_.reset();
  send_(toReply(id, result));
  pump();
}

void Executor::keepSavedOutputs(Run& run, ExecResult& result) {
  for (const auto stream : {OutputStream::kStdout, OutputStream::kStderr}) {
    const OutputSpill* spill = (stream == OutputStream::kStdout ? run.out : run.err).overflow();
    if (spill == nullptr) continue;
    if (!spill->error().empty()) {
      run.notes.push_back("[sandbox] the full " + std::string(streamName(stream)) +
                          " could not be saved: " + spill->error());
    }
    if (spill->bytes() == 0) continue;
    result.saved_outputs.push_back({std::string(streamName(stream)), spill->path().string(),
                                    spill->bytes(), spill->complete()});
    saved_output_files_.push_back(spill->path());
  }
  // The files live on the sandbox's tmpfs: only the newest few are kept.
  while (saved_output_files_.size() > kMaxSavedOutputFiles) {
    std::error_code ignored;
    std::filesystem::remove(saved_output_files_.front(), ignored);
    saved_output_files_.pop_front();
  }
}

// ---- process groups -------------------------------------------------------------------------

void Executor::pruneGroups() {
  std::erase_if(groups_, [](pid_t pgid) { return !groupExists(pgid); });
}

void Executor::killEverything() noexcept {
  for (const pid_t pgid : groups_) signalGroup(pgid, SIGKILL);
  if (driver_) driver_->killGroup();
  if (js_driver_) js_driver_->killGroup();
}

}  // namespace agent
