#include "mcp/task_notifications.h"

#include "mcp/task_store.h"

namespace mcp {
namespace {

using json = nlohmann::json;

json droppedNotice(const std::string& task_id, std::size_t dropped) {
  return json{{"jsonrpc", "2.0"},
              {"method", "notifications/message"},
              {"params",
               {{"level", "warning"},
                {"logger", "sandbox-mcp"},
                {"data", std::to_string(dropped) + " earlier notifications of task " + task_id +
                             " were dropped while no tasks/result listened (the server keeps "
                             "tasks.max_queued_bytes_per_client of them per client). The "
                             "task's result is whole: tasks/result returns it."},
                {"_meta", {{kRelatedTaskMetaKey, {{"taskId", task_id}}}}}}}};
}

}  // namespace

TaskNotifications::TaskNotifications(std::size_t max_client_bytes, TaskMemory* server)
    : max_client_bytes_(max_client_bytes), server_(server) {}

TaskNotifications::~TaskNotifications() {
  if (server_ != nullptr) server_->queued.remove(waiting_bytes_);
}

void TaskNotifications::send(const std::string& task_id, const json& message) {
  std::lock_guard lock(mutex_);
  if (const auto it = listeners_.find(task_id); it != listeners_.end() && it->second.sink) {
    it->second.sink(message);
    return;
  }
  wait(task_id, message);
}

void TaskNotifications::wait(const std::string& task_id, const json& message) {
  // Output may hold invalid UTF-8: kept the way the transports will write it.
  std::string text = message.dump(-1, ' ', false, json::error_handler_t::replace);
  const std::size_t bytes = text.size();
  const auto lose = [&] {
    ++dropped_[task_id].count;
    if (server_ != nullptr) ++server_->dropped_notifications;
  };
  if (bytes > max_client_bytes_) {
    lose();
    return;
  }
  while (waiting_bytes_ + bytes > max_client_bytes_) dropOldest();
  if (server_ != nullptr) {
    // The server's budget is shared: this connection makes room from its own oldest only.
    while (!server_->queued.tryAdd(bytes)) {
      if (waiting_.empty()) {
        lose();
        return;
      }
      dropOldest();
    }
  }
  waiting_.push_back({task_id, std::move(text)});
  waiting_bytes_ += bytes;
}

void TaskNotifications::dropOldest() {
  const Waiting& oldest = waiting_.front();
  ++dropped_[oldest.task_id].count;
  waiting_bytes_ -= oldest.text.size();
  if (server_ != nullptr) {
    server_->queued.remove(oldest.text.size());
    ++server_->dropped_notifications;
  }
  waiting_.pop_front();
}

std::uint64_t TaskNotifications::attach(const std::string& task_id, Sink listener) {
  std::lock_guard lock(mutex_);
  if (const auto lost = dropped_.find(task_id);
      lost != dropped_.end() && lost->second.count > lost->second.told) {
    listener(droppedNotice(task_id, lost->second.count - lost->second.told));
    lost->second.told = lost->second.count;
  }
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->task_id != task_id) {
      ++it;
      continue;
    }
    const json message = json::parse(it->text);
    // Given back before the listener runs: a listener that throws leaves the count right.
    waiting_bytes_ -= it->text.size();
    if (server_ != nullptr) server_->queued.remove(it->text.size());
    it = waiting_.erase(it);
    listener(message);
  }
  auto& slot = listeners_[task_id];
  slot.key = ++next_key_;
  slot.sink = std::move(listener);
  return slot.key;
}

void TaskNotifications::detach(const std::string& task_id, std::uint64_t key) {
  std::lock_guard lock(mutex_);
  const auto it = listeners_.find(task_id);
  if (it != listeners_.end() && it->second.key == key) listeners_.erase(it);
}

void TaskNotifications::forget(const std::string& task_id) {
  std::lock_guard lock(mutex_);
  std::size_t freed = 0;
  std::erase_if(waiting_, [&](const Waiting& w) {
    if (w.task_id != task_id) return false;
    freed += w.text.size();
    return true;
  });
  waiting_bytes_ -= freed;
  if (server_ != nullptr) server_->queued.remove(freed);
  listeners_.erase(task_id);
  dropped_.erase(task_id);
}

std::size_t TaskNotifications::dropped(const std::string& task_id) {
  std::lock_guard lock(mutex_);
  const auto it = dropped_.find(task_id);
  return it == dropped_.end() ? 0 : it->second.count;
}

std::size_t TaskNotifications::waitingBytes() {
  std::lock_guard lock(mutex_);
  return waiting_bytes_;
}

}  // namespace mcp
