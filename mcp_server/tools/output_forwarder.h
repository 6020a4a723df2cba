// Sends an execution's output to the client while it runs: as progress (the bytes so far, the
// chunk as its message, "[stderr] " before stderr) when the request asked for progress, and as
// log lines (logger "stdout" or "stderr") when the client asked for log messages at info or below.
// The tool result still carries the whole (capped) output. Thread-safe: the callback runs on the
// channel's reader.
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>

#include "sandbox/backend.h"
#include "tools/tool.h"

namespace tools {

class OutputForwarder {
 public:
  explicit OutputForwarder(ClientUpdates& updates) : updates_(updates) {}

  // Whether the client asked for anything; when false, executions run without output events.
  [[nodiscard]] bool enabled() const noexcept;
  // A callback for Sandbox::exec; it refers to this object, which must outlive the execution.
  [[nodiscard]] sandbox::OutputCallback callback();

 private:
  void forward(std::string_view stream, std::string_view data);

  ClientUpdates& updates_;
  std::mutex mutex_;  // keeps notifications in order and progress increasing
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace tools
