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
#include "mcp/task_memory.h"

namespace mcp {

// kInputRequired: the tool asked its client for input (the tasks extension's tasks only) and
// waits for tasks/update to bring every answer.
enum class TaskStatus { kWorking, kInputRequired, kCompleted, kFailed, kCancelled };

[[nodiscard]] const char* toString(TaskStatus status) noexcept;
[[nodiscard]] constexpr bool isTerminal(TaskStatus status) noexcept {
  return status != TaskStatus::kWorking && status != TaskStatus::kInputRequired;
}

inline constexpr const char* kRelatedTaskMetaKey = "io.modelcontextprotocol/related-task";

struct TaskLimits {
  std::size_t max_tasks = 32;
  // Serialized results a connection keeps (finished, not yet expired); a result that does not fit
  // is made smaller first (tools/result_spill.h). config: tasks.max_result_bytes_per_client
  std::size_t max_result_bytes = std::size_t{8} * 1024 * 1024;
  std::chrono::milliseconds default_ttl{10 * 60 * 1000};
  std::chrono::milliseconds max_ttl{60 * 60 * 1000};
  std::chrono::milliseconds poll_interval{500};
  std::size_t page_size = 50;  // tasks/list
  // Ends every task id after a "~" (the replica's instance id), so that a front routes tasks/get
  // by the id (Mcp-Name) to the replica holding the task. Empty: ids are 128 random bits alone.
  std::string route_tag;
};

class TaskStore {
 public:
  using Clock = std::chrono::steady_clock;
  using json = nlohmann::json;

  // `now` is injectable for tests; wall-clock timestamps follow it from the construction time.
  // `server_bytes`, when set, is the budget all connections' results share; it must outlive
  // the store.
  explicit TaskStore(TaskLimits limits, std::function<Clock::time_point()> now = Clock::now,
                     ByteBudget* server_bytes = nullptr);
  ~TaskStore();
  TaskStore(const TaskStore&) = delete;
  TaskStore& operator=(const TaskStore&) = delete;

  // A new task in status working; returns its Task object. `requested_ttl_ms` (params.task.ttl)
  // is clamped to the limits. Throws jsonrpc::Error when the store is full of tasks the client
  // still needs (running, or finished with a result never fetched).
  json create(std::optional<std::int64_t> requested_ttl_ms);

  // The Task object; throws jsonrpc::Error(-32602) for an unknown or expired id.
  [[nodiscard]] json get(const std::string& id);
  [[nodiscard]] bool contains(const std::string& id);
  // The stored CallToolResult of a finished task (marked fetched), or nullopt while it runs or
  // when it was cancelled before it ran. Throws -32602 for an unknown or expired id.
  [[nodiscard]] std::optional<json> peekResult(const std::string& id);

  // tasks/list: {"tasks": [...], "nextCursor"?}, oldest first. Throws -32602 for a bad cursor.
  [[nodiscard]] json list(const std::optional<std::string>& cursor);

  // Stores the tool's CallToolResult: completed, or failed when it has isError. A cancelled task
  // stays cancelled (its result is still kept). `error` (a JSON-RPC error object) says the call
  // itself failed (the tool did not run to its end): the tasks extension shows it instead of the
  // result. Returns the Task object, or nullopt when the task is gone (expired, discarded or the
  // store was closed).
  std::optional<json> finish(const std::string& id, json call_result,
                             std::optional<json> error = std::nullopt);

  // Everything tasks/get of the tasks extension shows, read at one instant.
  struct Detail {
    json task;                             // as get() returns it
    std::optional<json> result;            // completed or failed with a result (marked fetched)
    std::optional<json> error;             // failed without running to its end
    json input_requests = json::object();  // input_required: the requests still unanswered
  };
  [[nodiscard]] Detail detail(const std::string& id);

  // The tasks extension's input_required (task_store_input.cc). awaitInput() puts a working task
  // in input_required with `requests` (key -> {"method", "params"}) and blocks until answers to
  // all of them came through deliverInput() (returns them, key -> response; the task is working
  // again), or until `stop` is cancelled, the task is cancelled or discarded, the store closes or
  // `patience` passes (nullopt). deliverInput() takes the answers to pending requests and ignores
  // other keys; it throws -32602 for an unknown id and does nothing for a task not waiting.
  [[nodiscard]] std::optional<json> awaitInput(const std::string& id, json requests,
                                               CancelToken& stop,
                                               std::chrono::milliseconds patience);
  void deliverInput(const std::string& id, const json& responses);

  // Forgets a task the client never saw (its call was answered without it); its waits end.
  void discard(const std::string& id);

  // Room for a result of `bytes` (serialized) in this connection's and the server's budgets; when
  // there is, it is taken for the task `id` and released when the task is forgotten. `force`
  // takes it regardless (a result already made as small as it gets). False: make it smaller.
  [[nodiscard]] bool reserveResultBytes(const std::string& id, std::size_t bytes,
                                        bool force = false);
  [[nodiscard]] std::size_t resultBytes();

  // tasks/cancel: working -> cancelled; returns the Task object. Throws -32602 for an unknown id
  // or a task already in a terminal status.
  json cancel(const std::string& id);

  // tasks/result: blocks until the task's result is stored (or `stop` is cancelled, or the store
  // closes), then returns it with the related-task _meta. Throws jsonrpc::Error for an unknown id,
  // an interrupted wait or a closed store.
  json waitResult(const std::string& id, CancelToken& stop);

  // tasks/result without a thread: `deliver` runs once with the outcome, a function that returns
  // the result (as waitResult() does) or throws what waitResult() would. It runs at once, on this
  // thread, when the result is in (returns 0); else on the thread that finishes the task, or in
  // close(). Returns a key for dropWaiter(). Throws jsonrpc::Error for an unknown id.
  using Outcome = std::function<json()>;
  using ResultWaiter = std::function<void(const Outcome& outcome)>;
  std::uint64_t whenResult(const std::string& id, ResultWaiter deliver);
  // Forgets a waiter that has not run; false when it ran (or runs) already.
  bool dropWaiter(std::uint64_t key);

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
    std::optional<json> error;  // finish()'s JSON-RPC error
    bool result_fetched = false;
    json pending_input = json::object();   // input_required: unanswered requests
    json gathered_input = json::object();  // their answers so far
    std::size_t result_bytes = 0;          // reserved by reserveResultBytes()
  };

  [[nodiscard]] json toJson(const Record& record) const;
  [[nodiscard]] std::string timestamp(Clock::time_point at) const;
  Record& find(const std::string& id);  // mutex_ held; throws -32602
  json takeResult(Record& record);      // mutex_ held: the result as tasks/result returns it
  void sweep();                         // mutex_ held: drops expired finished tasks
  bool evictOne();                      // mutex_ held: drops the oldest task nobody needs
  void setStatus(Record& record, TaskStatus status, std::string message);
  void forget(const Record& record);  // mutex_ held: gives its result bytes back

  const TaskLimits limits_;
  const std::function<Clock::time_point()> now_;
  ByteBudget* const server_bytes_;
  std::size_t result_bytes_ = 0;  // reserved by this connection's tasks
  const Clock::time_point steady_epoch_;
  const std::chrono::system_clock::time_point wall_epoch_;

  std::mutex mutex_;
  std::condition_variable changed_;
  bool closed_ = false;
  std::uint64_t next_serial_ = 1;
  std::map<std::uint64_t, std::string> by_serial_;  // creation order, for tasks/list
  std::map<std::string, Record> tasks_;
  struct Waiter {
    std::string task_id;
    ResultWaiter deliver;
  };
  std::uint64_t next_waiter_ = 1;
  std::map<std::uint64_t, Waiter> waiters_;  // whenResult() for tasks still working
};

}  // namespace mcp
