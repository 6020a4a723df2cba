// What the tasks of every client connection keep in the server's memory, against the server-wide
// bounds (tasks.max_result_bytes, tasks.max_queued_bytes); each connection also has its own
// (TaskStore, TaskNotifications). Thread-safe.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>

namespace mcp {

// Bytes held against a maximum.
class ByteBudget {
 public:
  explicit ByteBudget(std::size_t max_bytes) : max_(max_bytes) {}
  // Adds `bytes` unless the total would pass the maximum; `force` adds them anyway.
  [[nodiscard]] bool tryAdd(std::size_t bytes, bool force = false) {
    std::lock_guard lock(mutex_);
    if (!force && used_ + bytes > max_) return false;
    used_ += bytes;
    return true;
  }
  void remove(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    used_ -= std::min(bytes, used_);
  }
  [[nodiscard]] std::size_t used() {
    std::lock_guard lock(mutex_);
    return used_;
  }

 private:
  const std::size_t max_;
  std::mutex mutex_;
  std::size_t used_ = 0;
};

struct TaskMemory {
  TaskMemory(std::size_t max_result_bytes, std::size_t max_queued_bytes)
      : results(max_result_bytes), queued(max_queued_bytes) {}
  ByteBudget results;  // serialized results kept until fetched and expired
  ByteBudget queued;   // serialized notifications waiting for a tasks/result stream
  std::atomic<std::size_t> dropped_notifications{0};  // queued ones dropped to stay within
};

}  // namespace mcp
