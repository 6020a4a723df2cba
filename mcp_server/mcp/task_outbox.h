// Where a task's notifications (progress, log lines, its status change) go once the request that
// created it has been answered. Over stdio the connection has one stream for everything, so they
// go out at once (`direct`). Over Streamable HTTP a notification needs an open response stream:
// they wait here (bounded; the oldest go first) until a tasks/result request attaches its stream,
// which then receives the queued ones and everything after, live, while it waits.
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace mcp {

class TaskOutbox {
 public:
  using Sink = std::function<void(const nlohmann::json& message)>;

  // `direct` (may be empty) takes every message at once; otherwise up to `max_queued_bytes` of
  // serialized messages wait for a listener.
  TaskOutbox(Sink direct, std::size_t max_queued_bytes)
      : direct_(std::move(direct)), max_queued_bytes_(max_queued_bytes) {}

  void send(const nlohmann::json& message) {
    std::lock_guard lock(mutex_);  // held while sending: messages keep their order
    if (direct_) {
      direct_(message);
    } else if (listener_) {
      listener_(message);
    } else {
      queue(message);
    }
  }

  // Makes `listener` the receiver (replacing an earlier one) after handing it the queued
  // messages. Returns a key for detach().
  std::uint64_t attach(Sink listener) {
    std::lock_guard lock(mutex_);
    for (const auto& queued : queued_) listener(queued.message);
    queued_.clear();
    queued_bytes_ = 0;
    listener_ = std::move(listener);
    return ++listener_key_;
  }

  // Stops sending to the listener attached under `key`, unless another replaced it since.
  void detach(std::uint64_t key) {
    std::lock_guard lock(mutex_);
    if (key == listener_key_) listener_ = nullptr;
  }

  [[nodiscard]] std::size_t dropped() {
    std::lock_guard lock(mutex_);
    return dropped_;
  }

 private:
  void queue(const nlohmann::json& message) {  // mutex_ held
    // Output may hold invalid UTF-8: measure it the way the transports will write it.
    const std::size_t bytes =
        message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
    queued_.push_back({message, bytes});
    queued_bytes_ += bytes;
    while (queued_bytes_ > max_queued_bytes_ && !queued_.empty()) {
      queued_bytes_ -= queued_.front().bytes;
      queued_.pop_front();
      ++dropped_;
    }
  }

  struct Queued {
    nlohmann::json message;
    std::size_t bytes;
  };

  const Sink direct_;
  const std::size_t max_queued_bytes_;
  std::mutex mutex_;
  Sink listener_;
  std::uint64_t listener_key_ = 0;
  std::deque<Queued> queued_;
  std::size_t queued_bytes_ = 0;
  std::size_t dropped_ = 0;
};

}  // namespace mcp
