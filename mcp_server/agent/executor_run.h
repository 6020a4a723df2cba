// The execution in progress, shared by the Executor's translation units (executor.cc,
// executor_javascript.cc). Private to the Executor.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/event_loop.h"
#include "agent/exec_request.h"
#include "agent/executor.h"
#include "agent/output_batcher.h"
#include "agent/output_capture.h"
#include "agent/output_spill.h"
#include "agent/shell_process.h"

namespace agent {

using Clock = std::chrono::steady_clock;

// What an interpreter printed before failing to start is kept up to this size for the error.
inline constexpr std::size_t kMaxStartupOutputBytes = 4096;
// Streamed output goes out at most once per interval (the first chunk after a quiet interval at
// once), in events of at most this size.
inline constexpr std::chrono::milliseconds kOutputEventInterval{50};
inline constexpr std::size_t kMaxOutputEventBytes = std::size_t{64} * 1024;

struct Executor::Run {
  Run(ExecRequest r, const std::filesystem::path& saved_output_dir)
      : request(std::move(r)),
        out(request.max_output_bytes),
        err(request.max_output_bytes),
        started(Clock::now()) {
    if (request.save_output_bytes == 0) return;
    const std::string prefix = "exec-" + std::to_string(request.id) + "-";
    out.saveOverflowTo(std::make_unique<OutputSpill>(saved_output_dir, prefix + "stdout.txt",
                                                     request.save_output_bytes));
    err.saveOverflowTo(std::make_unique<OutputSpill>(saved_output_dir, prefix + "stderr.txt",
                                                     request.save_output_bytes));
  }

  ExecRequest request;
  OutputCapture out;
  OutputCapture err;
  Utf8Rechunker out_events;
  Utf8Rechunker err_events;
  std::unique_ptr<OutputBatcher> events;  // set when the request streams
  EventLoop::TimerId events_timer = 0;
  Clock::time_point started;
  EventLoop::TimerId deadline_timer = 0;
  EventLoop::TimerId grace_timer = 0;
  std::optional<ExecStatus> stop_status;  // kTimeout | kCancelled once the agent stops it
  std::unique_ptr<ShellProcess> shell;
  std::vector<std::string> notes;  // "[sandbox] ..." lines appended to stderr

  [[nodiscard]] std::string stoppedBecause() const {
    return *stop_status == ExecStatus::kTimeout
               ? "exceeded " + protocol::formatSeconds(request.timeout)
               : "was cancelled";
  }
  [[nodiscard]] int stoppedExitCode() const {
    return *stop_status == ExecStatus::kTimeout ? protocol::kTimeoutExitCode
                                                : protocol::kCancelledExitCode;
  }
};

}  // namespace agent
