// Task-augmented tools/call for one client connection (MCP 2025-11-25 tasks): start() answers at
// once with a CreateTaskResult and runs the tool on a thread of its own; tasks/get, tasks/result,
// tasks/list and tasks/cancel read and steer the connection's TaskStore. A task keeps its place in
// its sandbox session's line (SessionLanes) and waits there holding nothing: its thread, one of
// the server's task threads (`threads`), is taken when its turn comes (none free: it fails with
// "busy"), and it holds an execution slot like any call while it runs. A tasks/result that waits
// holds no thread either (jsonrpc::Reply).
// Thread-safe. shutdown() (or destruction) cancels every task and joins every thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/cancel_token.h"
#include "config/config.h"
#include "jsonrpc/reply.h"
#include "mcp/session_lanes.h"
#include "mcp/task_memory.h"
#include "mcp/task_notifications.h"
#include "mcp/task_store.h"
#include "server/caller.h"
#include "server/execution_slots.h"
#include "tools/tool_metrics.h"
#include "tools/tool_registry.h"

namespace server {
class SessionRegistry;
}  // namespace server

namespace mcp {

class TaskRunner {
 public:
  using json = nlohmann::json;

  // How long a task waits for its client's input (tasks/update) before it fails: a person may be
  // filling a form, but a waiting task holds a task thread.
  static constexpr std::chrono::minutes kInputPatience{5};

  TaskRunner(server::Caller caller, const config::ServerConfig& config,
             server::SessionRegistry& sessions, SessionLanes& lanes,
             server::ExecutionSlots& threads, const tools::ToolMetrics* metrics = nullptr,
             TaskMemory* server_memory = nullptr);
  ~TaskRunner();
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  struct Start {
    const tools::Tool& tool;
    json arguments;
    json task_params;      // params.task: {"ttl"?: milliseconds}
    json progress_token;   // from the request's _meta, or null
    std::string lane_key;  // the session the call names; empty: a new session
    bool client_logs_output = false;
    // Set when notifications may be sent after the request is answered (stdio); else they wait
    // for a tasks/result stream (TaskNotifications).
    std::function<void(const json&)> direct_notify;
    // A task of the tasks extension: it may ask its client for input (input_required), and
    // `inputs` are the request's declared capabilities and MRTR answers.
    bool extension = false;
    tools::ToolInputs inputs;
  };
  // Returns the CreateTaskResult. Throws jsonrpc::Error when the task cannot be accepted.
  json start(Start request);

  json get(const json& params);

  // The tasks extension (MCP 2026-07-28, io.modelcontextprotocol/tasks; task_extension.cc). The
  // server decides: within tasks.inline_wait_ms a call answers as a synchronous one would, with
  // its CallToolResult (unless `result_inline` is false: a tool that requires a task) or, when
  // the tool asks for input first, with those requests (`asked`: an input-required result, and
  // the task is forgotten); past it, with a CreateTaskResult (resultType "task"), and runs on.
  struct Answer {
    json result;  // CallToolResult or CreateTaskResult; null when `asked`
    std::optional<tools::ToolResult> asked;
  };
  Answer startOrInline(Start request, bool result_inline);
  // tasks/get: the task, with inputRequests while input_required, the tool's result once
  // completed, the error once failed.
  json getExtension(const json& params);
  // tasks/cancel and tasks/update (answers for an input_required task): acknowledgements;
  // -32602 for an unknown task.
  json cancelExtension(const json& params);
  json updateExtension(const json& params);
  // Blocks until the task's result is in; its notifications go to `notify` meanwhile (when set).
  json result(const json& params, const std::function<void(const json&)>& notify,
              CancelToken& stop);
  // The same without a thread: `reply` gets the result when it comes. `cancel` (the client's
  // notifications/cancelled) answers with an error, `abandoned` (its connection went away) drops
  // the wait; the task goes on either way. Throws jsonrpc::Error for an unknown task at once.
  void resultLater(const json& params, const std::function<void(const json&)>& notify,
                   std::shared_ptr<jsonrpc::Reply> reply,
                   const std::shared_ptr<CancelToken>& cancel,
                   const std::shared_ptr<CancelToken>& abandoned);
  json list(const json& params);
  json cancel(const json& params);

  void shutdown();

  // Runs after each task's tool call with its arguments, still in the session's turn (e.g. to
  // announce the files it changed). Set before the first task starts.
  void afterEachCall(std::function<void(const json& arguments)> hook) {
    after_call_ = std::move(hook);
  }

 private:
  struct Running {
    std::string id;
    CancelToken cancel;
    // Its notifications: to `direct` when set (in order: `direct_mutex`), else through the
    // connection's TaskNotifications.
    std::function<void(const json&)> direct;
    std::mutex direct_mutex;
    std::thread thread;
    std::atomic<bool> launched{false};  // its turn came (or it was cancelled while queued)
    std::atomic<bool> done{false};
    // For startOrInline(): set once the task finished or first asked for input (`asked`).
    std::mutex settle_mutex;
    std::condition_variable settled_changed;
    bool settled = false;
    std::optional<tools::ToolResult> asked;
  };
  // What a queued task needs once its turn comes.
  struct Launch {
    const tools::Tool& tool;
    json arguments;
    json progress_token;
    bool client_logs_output = false;
    bool extension = false;
    tools::ToolInputs inputs;
  };
  // What a run ends with: the CallToolResult to keep, and the JSON-RPC error of a call that
  // failed (the extension's "failed").
  struct Outcome {
    json result;
    std::optional<json> error;
  };

  // Its turn came: takes a task thread and starts it, or ends the task (cancelled, busy).
  void launch(const std::shared_ptr<Running>& task, const std::shared_ptr<Launch>& what,
              const std::shared_ptr<SessionLanes::Place>& place);
  void run(const std::shared_ptr<Running>& task, const Launch& what, SessionLanes::Place& place,
           std::optional<server::ExecutionSlots::Slot> slot);
  // Runs the tool, and again with the client's answers each time it asks for input (extension
  // tasks: input_required until tasks/update brings them).
  Outcome runRounds(Running& task, const Launch& what, tools::ToolContext& ctx);
  // Stores a task's result and tells its client the status changed.
  void finishTask(Running& task, json result, std::optional<json> error = std::nullopt);
  static void settle(Running& task, std::optional<tools::ToolResult> asked);
  // The tool's result as it will be kept: within the result budgets, spilled to the sandbox first
  // when it does not fit.
  json keepable(const std::string& task_id, tools::ToolResult result);
  void notify(Running& task, const json& message);
  // params.taskId of a tasks/* request, or -32602 naming `method`.
  [[nodiscard]] static std::string taskIdOf(const json& params, const char* method);
  void reap();  // mutex_ held: joins finished threads, forgets tasks the store forgot

  const server::Caller caller_;
  const config::ServerConfig& config_;
  server::SessionRegistry& sessions_;
  const tools::ToolMetrics* metrics_;
  SessionLanes& lanes_;
  server::ExecutionSlots& threads_;
  TaskStore store_;
  TaskNotifications notifications_;
  std::function<void(const json& arguments)> after_call_;
  std::atomic<std::size_t> awaiting_input_{0};  // tasks in input_required now

  std::mutex mutex_;
  bool stopped_ = false;
  std::unordered_map<std::string, std::shared_ptr<Running>> running_;
};

}  // namespace mcp
