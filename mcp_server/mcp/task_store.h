// The tasks of one MCP client connection (MCP 2025-11-25 tasks): their status, timestamps, ttl and
// the tool result each ends with. One store per connection, so another client can neither see,
// read nor cancel them. Bounded: at most `max_tasks` entries; a finished task is forgotten `ttl`
// after it finished. Thread-safe; waitResult() blocks until a task's result is in.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/cancel_token.h"

namespace mcp {

enum class TaskStatus { kWorking, kCompleted, kFailed, kCancelled };

[[nodiscard]] const char* toString(TaskStatus status) noexcept;
[[nodiscard]] constexpr bool isTerminal(TaskStatus status) noexcept {
  return status != TaskStatus::kWorking;
}

inline constexpr const char* kRelatedTaskMetaKey = "io.modelcontextprotocol/related-task";

struct TaskLimits {
  std::size_t max_tasks = 32;
  std::chrono::milliseconds default_ttl{10 * 60 * 1000};
  std::chrono::milliseconds max_ttl{60 * 60 * 1000};
  std::chrono::milliseconds poll_interval{500};
  std::size_t page_size = 50;  // tasks/list
};

class TaskStore {
 public:
  using Clock = std::chrono::steady_clock;
  using json = nlohmann::json;

  // `now` is injectable for tests; wall-clock timestamps follow it from the construction time.
  explicit TaskStore(TaskLimits limits, std::function<Clock::time_point()> now = Clock::now);
  TaskStore(const TaskStore&) = delete;
  TaskStore& operator=(const TaskStore&) = delete;

  // A new task in status working; returns its Task object. `requested_ttl_ms` (params.task.ttl)
  // is clamped to the limits. Throws jsonrpc::Error when the store is full of tasks the client
  // still needs (running, or finished with a result never fetched).
  json create(std::optional<std::int64_t> requested_ttl_ms);

  // The Task object; throws jsonrpc::Error(-32602) for an unknown or expired id.
  [[nodiscard]] json get(const std::string& id);
  [[nodiscard]] bool contains(const std::string& id);

  // tasks/list: {"tasks": [...], "nextCursor"?}, oldest first. Throws -32602 for a bad cursor.
  [[nodiscard]] json list(const std::optional<std::string>& cursor);

  // Stores the tool's CallToolResult: completed, or failed when it has isError. A cancelled task
  // stays cancelled (its result is still kept). Returns the Task object, or nullopt when the task
  // is gone (expired or the store was closed).
  std::optional<json> finish(const std::string& id, json call_result);

  // tasks/cancel: working -> cancelled; returns the Task object. Throws -32602 for an unknown id
  // or a task already in a terminal status.
  json cancel(const std::string& id);

  // tasks/result: blocks until the task's result is stored (or `stop` is cancelled, or the store
  // closes), then returns it with the related-task _meta. Throws jsonrpc::Error for an unknown id,
  // an interrupted wait or a closed store.
  json waitResult(const std::string& id, CancelToken& stop);

  // Wakes every waiter and forgets every task; later calls find nothing.
  void close();

 private:
  struct Record {
    std::string id;
    std::uint64_t serial = 0;
    TaskStatus status = TaskStatus::kWorking;
    std::string status_message;
    Clock::time_point created;
    Clock::time_point updated;
    std::chrono::milliseconds ttl{0};
    std::optional<json> result;
    bool result_fetched = false;
  };

  [[nodiscard]] json toJson(const Record& record) const;
  [[nodiscard]] std::string timestamp(Clock::time_point at) const;
  Record& find(const std::string& id);  // mutex_ held; throws -32602
  void sweep();                         // mutex_ held: drops expired finished tasks
  bool evictOne();                      // mutex_ held: drops the oldest task nobody needs
  void setStatus(Record& record, TaskStatus status, std::string message);

  const TaskLimits limits_;
  const std::function<Clock::time_point()> now_;
  const Clock::time_point steady_epoch_;
  const std::chrono::system_clock::time_point wall_epoch_;

  std::mutex mutex_;
  std::condition_variable changed_;
  bool closed_ = false;
  std::uint64_t next_serial_ = 1;
  std::map<std::uint64_t, std::string> by_serial_;  // creation order, for tasks/list
  std::map<std::string, Record> tasks_;
};

}  // namespace mcp
