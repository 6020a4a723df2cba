// TaskStore's part of the tasks extension's input_required status: a task's tool asked its client
// for input; tasks/update brings the answers, one or several at a time, and the task runs on once
// every request is answered.
#include "mcp/task_store.h"

namespace mcp {

std::optional<nlohmann::json> TaskStore::awaitInput(const std::string& id, json requests,
                                                    CancelToken& stop,
                                                    std::chrono::milliseconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  // The callback takes the mutex so its wake-up cannot fall between a check and the wait.
  CancelSubscription wake(stop, [this] {
    std::lock_guard lock(mutex_);
    changed_.notify_all();
  });
  std::unique_lock lock(mutex_);
  {
    const auto it = tasks_.find(id);
    if (closed_ || it == tasks_.end() || it->second.status != TaskStatus::kWorking) {
      return std::nullopt;
    }
    it->second.pending_input = std::move(requests);
    it->second.gathered_input = json::object();
    setStatus(it->second, TaskStatus::kInputRequired, {});
  }
  for (;;) {
    const auto it = tasks_.find(id);  // discarded or expired meanwhile: gone
    if (closed_ || stop.cancelled() || it == tasks_.end() ||
        it->second.status != TaskStatus::kInputRequired) {
      return std::nullopt;
    }
    Record& record = it->second;
    if (record.pending_input.empty()) {
      setStatus(record, TaskStatus::kWorking, {});
      return std::exchange(record.gathered_input, json::object());
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      // The client never answered: the task stops waiting (and holding its thread).
      const auto gone = tasks_.find(id);
      if (gone != tasks_.end() && gone->second.status == TaskStatus::kInputRequired) {
        gone->second.pending_input = json::object();
        setStatus(gone->second, TaskStatus::kWorking, {});
      }
      return std::nullopt;
    }
  }
}

void TaskStore::deliverInput(const std::string& id, const json& responses) {
  std::lock_guard lock(mutex_);
  sweep();
  Record& record = find(id);
  if (record.status != TaskStatus::kInputRequired || !responses.is_object()) return;
  for (const auto& [key, response] : responses.items()) {
    // Keys the task is not waiting for (answered already, or never asked) are ignored.
    if (record.pending_input.erase(key) == 0) continue;
    record.gathered_input[key] = response;
  }
  record.updated = now_();
  changed_.notify_all();
}

void TaskStore::discard(const std::string& id) {
  std::lock_guard lock(mutex_);
  const auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  forget(it->second);
  by_serial_.erase(it->second.serial);
  tasks_.erase(it);
  changed_.notify_all();
}

}  // namespace mcp
