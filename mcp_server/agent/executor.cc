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
  if (run_->request.stream) {
    run_->events = std::make_unique<OutputBatcher>(
        kOutputEventInterval, kMaxOutputEventBytes,
        [this, id = run_->request.id](OutputStream stream, std::string data) {
          send_({{"id", id},
                 {"event", "output"},
                 {"stream", streamName(stream)},
                 {"data", std::move(data)}});
        });
  }
  run_->deadline_timer = loop_.addTimer(run_->request.timeout, [this] {
    run_->deadline_timer = 0;
    stop(ExecStatus::kTimeout);
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
  const auto& images = run_->request.images;
  (void)driver_->sendCell(
      run_->request.code, run_->request.max_output_bytes,
      {{"max_images", images.max_count},
       {"image_max_bytes", images.max_bytes},
       {"image_max_px", images.max_px},
       {"figures_dir", (saved_output_dir_.parent_path() / "figures").string()}});
}

void Executor::rejectRequest(std::int64_t id, const std::string& error) {
  send_({{"id", id}, {"ok", false}, {"error", error}});
}

bool Executor::cancel(std::int64_t target) {
  if (run_ && run_->request.id == target) {
    if (!run_->stop_status) stop(ExecStatus::kCancelled);
    return true;
  }
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->id != target) continue;
    const bool was_front = it == queue_.begin();
    queue_.erase(it);
    if (was_front) front_start_attempted_ = false;
    ExecResult result;
    result.status = ExecStatus::kCancelled;
    result.exit_code = protocol::kCancelledExitCode;
    result.stderr_text = "[sandbox] execution was cancelled before it started\n";
    send_(protocol::encodeExecReply(target, result));
    return true;
  }
  return false;
}

// ---- common ---------------------------------------------------------------------------------

void Executor::stop(ExecStatus status) {
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
  if (!run_->events || kept.empty()) return;
  const std::string chunk = (is_stdout ? run_->out_events : run_->err_events).push(kept);
  if (chunk.empty()) return;
  scheduleOutputEvents(run_->events->push(stream, chunk, Clock::now()));
}

void Executor::scheduleOutputEvents(std::optional<Clock::time_point> due) {
  if (!due || run_->events_timer != 0) return;
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*due - Clock::now());
  run_->events_timer = loop_.addTimer(std::max(wait, std::chrono::milliseconds(0)), [this] {
    if (!run_) return;
    run_->events_timer = 0;
    scheduleOutputEvents(run_->events->flushDue(Clock::now()));
  });
}

void Executor::finish(ExecResult result) {
  Run& run = *run_;
  loop_.cancelTimer(run.deadline_timer);
  loop_.cancelTimer(run.grace_timer);
  loop_.cancelTimer(run.events_timer);
  run.events_timer = 0;
  if (run.events) {
    for (const auto stream : {OutputStream::kStdout, OutputStream::kStderr}) {
      const bool is_stdout = stream == OutputStream::kStdout;
      const std::string rest = (is_stdout ? run.out_events : run.err_events).flush();
      (void)run.events->push(stream, rest, Clock::now());
    }
    run.events->flushAll();
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
  send_(protocol::encodeExecReply(id, result));
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
