// Turns an execution's output chunks into few `output` events: under gVisor every event costs
// syscalls in the agent and a notification on the server, so 20,000 printed lines must not become
// 20,000 events. The first chunk after a quiet interval goes out at once (a line printed before a
// sleep shows without delay); later ones wait until the interval since the last event has passed
// and go out together. The order across stdout and stderr is kept: pending output of one stream
// goes out before the other stream's. An event never holds more than max_event_bytes.
// Pure: the caller reads the clock and arms the timer. Not thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/output_stream.h"

namespace agent {

class OutputBatcher {
 public:
  using Clock = std::chrono::steady_clock;
  using Send = std::function<void(OutputStream, std::string data)>;

  OutputBatcher(std::chrono::milliseconds interval, std::size_t max_event_bytes, Send send)
      : interval_(interval), max_event_bytes_(max_event_bytes), send_(std::move(send)) {}

  // Adds a chunk (whole UTF-8 characters). Returns when flushDue() should run next, or nullopt
  // when nothing waits.
  std::optional<Clock::time_point> push(OutputStream stream, std::string_view chunk,
                                        Clock::time_point now);
  // Sends what waits once the interval has passed; returns when to run again (as push does).
  std::optional<Clock::time_point> flushDue(Clock::time_point now);
  // Sends everything that waits (the end of an execution).
  void flushAll();

  [[nodiscard]] std::size_t eventsSent() const noexcept { return events_sent_; }

 private:
  struct Pending {
    OutputStream stream;
    std::string data;
  };

  void send(OutputStream stream, std::string_view data);
  [[nodiscard]] std::optional<Clock::time_point> nextDue() const;

  const std::chrono::milliseconds interval_;
  const std::size_t max_event_bytes_;
  Send send_;
  std::vector<Pending> pending_;  // in arrival order; adjacent entries differ in stream
  std::size_t pending_bytes_ = 0;
  std::optional<Clock::time_point> last_sent_;
  std::size_t events_sent_ = 0;
};

}  // namespace agent
