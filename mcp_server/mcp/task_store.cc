#include "mcp/task_store.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <vector>

#include "common/random_id.h"
#include "jsonrpc/errors.h"

namespace mcp {
namespace {

constexpr std::size_t kMaxCursorDigits = 20;

[[noreturn]] void throwNotFound(const std::string& id) {
  throw jsonrpc::Error(jsonrpc::kInvalidParams,
                       "Task not found: '" + id.substr(0, 64) +
                           "'. It may have expired (finished tasks are kept for their ttl) or "
                           "belong to another connection; tasks/list shows this connection's "
                           "tasks.");
}

std::optional<std::uint64_t> parseCursor(const std::string& cursor) {
  if (cursor.empty() || cursor.size() > kMaxCursorDigits) return std::nullopt;
  if (!std::all_of(cursor.begin(), cursor.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  try {
    return std::stoull(cursor);
  } catch (const std::exception&) {  // out of range
    return std::nullopt;
  }
}

}  // namespace

const char* toString(TaskStatus status) noexcept {
  switch (status) {
    case TaskStatus::kWorking:
      return "working";
    case TaskStatus::kInputRequired:
      return "input_required";
    case TaskStatus::kCompleted:
      return "completed";
    case TaskStatus::kFailed:
      return "failed";
    case TaskStatus::kCancelled:
      return "cancelled";
  }
  return "working";
}

TaskStore::TaskStore(TaskLimits limits, std::function<Clock::time_point()> now,
                     ByteBudget* server_bytes)
    : limits_(std::move(limits)),
      now_(std::move(now)),
      server_bytes_(server_bytes),
      steady_epoch_(now_()),
      wall_epoch_(std::chrono::system_clock::now()) {}

TaskStore::~TaskStore() { close(); }

bool TaskStore::reserveResultBytes(const std::string& id, std::size_t bytes, bool force) {
  std::lock_guard lock(mutex_);
  sweep();
  const auto it = tasks_.find(id);
  if (it == tasks_.end()) return true;  // gone: nothing will be kept
  if (!force && result_bytes_ + bytes > limits_.max_result_bytes) return false;
  if (server_bytes_ != nullptr && !server_bytes_->tryAdd(bytes, force)) return false;
  result_bytes_ += bytes;
  it->second.result_bytes += bytes;
  return true;
}

std::size_t TaskStore::resultBytes() {
  std::lock_guard lock(mutex_);
  sweep();
  return result_bytes_;
}

void TaskStore::forget(const Record& record) {
  result_bytes_ -= std::min(record.result_bytes, result_bytes_);
  if (server_bytes_ != nullptr) server_bytes_->remove(record.result_bytes);
}

nlohmann::json TaskStore::create(std::optional<std::int64_t> requested_ttl_ms) {
  std::chrono::milliseconds ttl = limits_.default_ttl;
  if (requested_ttl_ms) {
    ttl = std::clamp(std::chrono::milliseconds(*requested_ttl_ms), std::chrono::milliseconds(0),
                     limits_.max_ttl);
  }
  std::lock_guard lock(mutex_);
  if (closed_) throw jsonrpc::Error(jsonrpc::kInvalidRequest, "the connection is closing");
  sweep();
  if (tasks_.size() >= limits_.max_tasks && !evictOne()) {
    throw jsonrpc::Error(
        jsonrpc::kInvalidRequest,
        "Too many tasks: this connection holds " + std::to_string(tasks_.size()) +
            " tasks that are running or whose results were never fetched (limit "
            "tasks.max_per_client). Fetch finished results with tasks/result, cancel tasks you "
            "no longer need with tasks/cancel, or call without params.task.");
  }
  Record record;
  record.id = common::randomHex(16) + (limits_.route_tag.empty() ? "" : "~" + limits_.route_tag);
  record.serial = next_serial_++;
  record.created = record.updated = now_();
  record.ttl = ttl;
  json task = toJson(record);
  by_serial_.emplace(record.serial, record.id);
  tasks_.emplace(record.id, std::move(record));
  return task;
}

nlohmann::json TaskStore::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  sweep();
  return toJson(find(id));
}

std::optional<nlohmann::json> TaskStore::peekResult(const std::string& id) {
  std::lock_guard lock(mutex_);
  sweep();
  Record& record = find(id);
  if (!record.result || record.status == TaskStatus::kCancelled) return std::nullopt;
  record.result_fetched = true;
  return *record.result;
}

TaskStore::Detail TaskStore::detail(const std::string& id) {
  std::lock_guard lock(mutex_);
  sweep();
  Record& record = find(id);
  Detail out;
  out.task = toJson(record);
  if (record.status == TaskStatus::kInputRequired) out.input_requests = record.pending_input;
  if (record.error) {
    record.result_fetched = true;
    out.error = record.error;
  } else if (record.result && record.status != TaskStatus::kCancelled) {
    record.result_fetched = true;
    out.result = record.result;
  }
  return out;
}

bool TaskStore::contains(const std::string& id) {
  std::lock_guard lock(mutex_);
  sweep();
  return tasks_.count(id) != 0;
}

nlohmann::json TaskStore::list(const std::optional<std::string>& cursor) {
  std::lock_guard lock(mutex_);
  sweep();
  std::uint64_t from = 0;
  if (cursor) {
    const auto parsed = parseCursor(*cursor);
    if (!parsed || *parsed == 0 || *parsed >= next_serial_) {
      throw jsonrpc::Error(jsonrpc::kInvalidParams,
                           "tasks/list: invalid cursor; pass the nextCursor of the previous page "
                           "unchanged, or omit it to start from the first task");
    }
    from = *parsed;
  }
  json tasks = json::array();
  auto it = by_serial_.lower_bound(from);
  for (; it != by_serial_.end() && tasks.size() < limits_.page_size; ++it) {
    tasks.push_back(toJson(tasks_.at(it->second)));
  }
  json page{{"tasks", std::move(tasks)}};
  if (it != by_serial_.end()) page["nextCursor"] = std::to_string(it->first);
  return page;
}

std::optional<nlohmann::json> TaskStore::finish(const std::string& id, json call_result,
                                                std::optional<json> error) {
  std::unique_lock lock(mutex_);
  const auto it = tasks_.find(id);
  if (it == tasks_.end()) return std::nullopt;
  Record& record = it->second;
  if (!isTerminal(record.status)) {
    if (error || call_result.value("isError", false)) {
      setStatus(record, TaskStatus::kFailed,
                "The tool reported an error; tasks/result returns its message.");
    } else {
      setStatus(record, TaskStatus::kCompleted, {});
    }
  }
  record.result = std::move(call_result);
  if (record.status == TaskStatus::kFailed) record.error = std::move(error);
  changed_.notify_all();
  std::vector<ResultWaiter> ready;
  for (auto w = waiters_.begin(); w != waiters_.end();) {
    if (w->second.task_id != id) {
      ++w;
      continue;
    }
    ready.push_back(std::move(w->second.deliver));
    w = waiters_.erase(w);
  }
  json task = toJson(record);
  if (ready.empty()) return task;
  const json result = takeResult(record);
  lock.unlock();  // waiters answer their requests: never under the store's mutex
  for (const auto& deliver : ready) deliver([&result] { return json(result); });  // a copy each
  return task;
}

nlohmann::json TaskStore::cancel(const std::string& id) {
  std::lock_guard lock(mutex_);
  sweep();
  Record& record = find(id);
  if (isTerminal(record.status)) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         std::string("Cannot cancel task '") + record.id + "': it is already " +
                             toString(record.status) + "; tasks/result returns its outcome.");
  }
  setStatus(record, TaskStatus::kCancelled, "The task was cancelled by request.");
  changed_.notify_all();
  return toJson(record);
}

nlohmann::json TaskStore::waitResult(const std::string& id, CancelToken& stop) {
  // The callback takes the mutex so its wake-up cannot fall between a check and the wait.
  CancelSubscription wake(stop, [this] {
    std::lock_guard lock(mutex_);
    changed_.notify_all();
  });
  std::unique_lock lock(mutex_);
  sweep();
  find(id);  // unknown ids fail at once
  for (;;) {
    if (closed_) throw jsonrpc::Error(jsonrpc::kInvalidRequest, "the connection is closing");
    Record& record = find(id);  // it may have expired while we waited
    if (record.result) return takeResult(record);
    if (stop.cancelled()) {
      throw jsonrpc::Error(jsonrpc::kInvalidRequest,
                           "tasks/result was cancelled before task '" + record.id +
                               "' finished; the task keeps running (tasks/get shows it)");
    }
    changed_.wait(lock);
  }
}

std::uint64_t TaskStore::whenResult(const std::string& id, ResultWaiter deliver) {
  std::unique_lock lock(mutex_);
  if (closed_) throw jsonrpc::Error(jsonrpc::kInvalidRequest, "the connection is closing");
  sweep();
  Record& record = find(id);  // unknown ids fail at once
  if (!record.result) {
    const std::uint64_t key = next_waiter_++;
    waiters_.emplace(key, Waiter{id, std::move(deliver)});
    return key;
  }
  const json result = takeResult(record);
  lock.unlock();
  deliver([&result] { return json(result); });
  return 0;
}

bool TaskStore::dropWaiter(std::uint64_t key) {
  std::lock_guard lock(mutex_);
  return waiters_.erase(key) != 0;
}

nlohmann::json TaskStore::takeResult(Record& record) {
  record.result_fetched = true;
  json result = *record.result;
  result["_meta"][kRelatedTaskMetaKey] = {{"taskId", record.id}};
  return result;
}

void TaskStore::close() {
  std::map<std::uint64_t, Waiter> waiting;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    for (const auto& [id, record] : tasks_) forget(record);
    tasks_.clear();
    by_serial_.clear();
    waiting.swap(waiters_);
    changed_.notify_all();
  }
  const Outcome closing = []() -> json {
    throw jsonrpc::Error(jsonrpc::kInvalidRequest, "the connection is closing");
  };
  for (auto& [key, waiter] : waiting) waiter.deliver(closing);
}

nlohmann::json TaskStore::toJson(const Record& record) const {
  json task{{"taskId", record.id},
            {"status", toString(record.status)},
            {"createdAt", timestamp(record.created)},
            {"lastUpdatedAt", timestamp(record.updated)},
            {"ttl", record.ttl.count()},
            {"pollInterval", limits_.poll_interval.count()}};
  std::string message = record.status_message;
  if (isTerminal(record.status)) {  // when a client must have fetched the result by
    message += std::string(message.empty() ? "" : " ") + "Kept until " +
               timestamp(record.updated + record.ttl) + " (ttl from when it finished).";
  }
  if (!message.empty()) task["statusMessage"] = std::move(message);
  return task;
}

// ISO 8601 in UTC with milliseconds, e.g. 2025-11-25T10:30:00.123Z.
std::string TaskStore::timestamp(Clock::time_point at) const {
  const auto wall = wall_epoch_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                      at - steady_epoch_);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch());
  const std::time_t seconds = static_cast<std::time_t>(ms.count() / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[80];  // roomy: the compiler cannot bound the tm fields
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(ms.count() % 1000));
  return text;
}

TaskStore::Record& TaskStore::find(const std::string& id) {
  const auto it = tasks_.find(id);
  if (it == tasks_.end()) throwNotFound(id);
  return it->second;
}

// A finished task lives `ttl` from the moment it finished (the spec lets a receiver keep a task
// past its ttl; counting from creation would drop a long run's result as soon as it finished).
void TaskStore::sweep() {
  const auto now = now_();
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    const Record& record = it->second;
    if (isTerminal(record.status) && now >= record.updated + record.ttl) {
      forget(record);
      by_serial_.erase(record.serial);
      it = tasks_.erase(it);
    } else {
      ++it;
    }
  }
}

bool TaskStore::evictOne() {
  for (auto it = by_serial_.begin(); it != by_serial_.end(); ++it) {
    const Record& record = tasks_.at(it->second);
    const bool needed = !isTerminal(record.status) ||
                        (record.status != TaskStatus::kCancelled && !record.result_fetched);
    if (needed) continue;
    forget(record);
    tasks_.erase(it->second);
    by_serial_.erase(it);
    return true;
  }
  return false;
}

void TaskStore::setStatus(Record& record, TaskStatus status, std::string message) {
  record.status = status;
  record.status_message = std::move(message);
  record.updated = now_();
}

}  // namespace mcp
