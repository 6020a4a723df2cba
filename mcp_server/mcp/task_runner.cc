#include "mcp/task_runner.h"

#include <spdlog/spdlog.h>

#include <system_error>
#include <vector>

#include "jsonrpc/errors.h"
#include "mcp/tool_wire.h"
#include "server/session_registry.h"

namespace mcp {
namespace {

using json = nlohmann::json;

const char* kImmediateResponseKey = "io.modelcontextprotocol/model-immediate-response";

TaskLimits limitsFrom(const config::ServerConfig& config) {
  TaskLimits limits;
  limits.max_tasks = static_cast<std::size_t>(config.tasks.max_per_client);
  limits.default_ttl = std::chrono::milliseconds(config.tasks.default_ttl_ms);
  limits.max_ttl = std::chrono::milliseconds(config.tasks.max_ttl_ms);
  limits.poll_interval = std::chrono::milliseconds(config.tasks.poll_interval_ms);
  return limits;
}

std::string taskIdOf(const json& params, const char* method) {
  const auto id = params.find("taskId");
  if (id == params.end() || !id->is_string()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         std::string(method) +
                             " needs params.taskId (a string from the task "
                             "that tools/call returned)");
  }
  return id->get<std::string>();
}

std::optional<std::int64_t> requestedTtl(const json& task_params) {
  if (!task_params.is_object()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "tools/call params.task must be an object, e.g. {} or {\"ttl\": 60000}");
  }
  const auto ttl = task_params.find("ttl");
  if (ttl == task_params.end() || ttl->is_null()) return std::nullopt;
  if (!ttl->is_number() || ttl->get<double>() < 0) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "tools/call params.task.ttl must be a number of milliseconds >= 0");
  }
  return static_cast<std::int64_t>(std::min(ttl->get<double>(), 1e15));
}

json cancelledBeforeStart() {
  return toCallResult(tools::ToolResult::failure(
      "The task was cancelled before it started; nothing ran. The session is unchanged."));
}

}  // namespace

TaskRunner::TaskRunner(const std::string& owner, const config::ServerConfig& config,
                       server::SessionRegistry& sessions, SessionLanes& lanes,
                       server::ExecutionSlots& threads, const tools::ToolMetrics* metrics)
    : owner_(owner),
      config_(config),
      sessions_(sessions),
      metrics_(metrics),
      lanes_(lanes),
      threads_(threads),
      store_(limitsFrom(config)) {}

TaskRunner::~TaskRunner() { shutdown(); }

json TaskRunner::start(Start request) {
  const auto ttl = requestedTtl(request.task_params);
  auto thread_slot = threads_.tryClaim();
  if (!thread_slot) {
    throw jsonrpc::Error(jsonrpc::kInvalidRequest,
                         "busy: " + std::to_string(threads_.capacity()) +
                             " tasks are already running on this server (execution."
                             "max_concurrent). Retry in a moment, or call without params.task.");
  }
  std::lock_guard lock(mutex_);
  if (stopped_) throw jsonrpc::Error(jsonrpc::kInvalidRequest, "the connection is closing");
  reap();
  json task = store_.create(ttl);
  auto running = std::make_shared<Running>();
  running->id = task["taskId"].get<std::string>();
  // The outbox outlives the thread: a tasks/result may come for the queued messages later.
  running->outbox = std::make_shared<TaskOutbox>(
      std::move(request.direct_notify),
      static_cast<std::size_t>(config_.execution.max_output_bytes) * 2);
  // Taken now, while the transport still holds this session's later requests back.
  SessionLanes::Place place = lanes_.enqueue(request.lane_key);
  try {
    running->thread = std::thread(
        [this, running, &tool = request.tool, arguments = std::move(request.arguments),
         progress = std::move(request.progress_token), logs = request.client_logs_output,
         place = std::move(place), slot = std::move(*thread_slot)]() mutable {
          run(running, tool, arguments, progress, logs, place);
        });
  } catch (const std::system_error& e) {
    spdlog::error("task {}: cannot start a thread: {}", running->id, e.what());
    store_.finish(running->id, toCallResult(tools::ToolResult::failure(
                                   std::string("The server could not start the task (") + e.what() +
                                   "); retry later, or call without params.task.")));
    running->done = true;
  }
  running_.emplace(running->id, running);
  spdlog::debug("task {} started for {}", running->id, request.tool.spec.name);
  return json{{"task", std::move(task)},
              {"_meta",
               {{kImmediateResponseKey,
                 "The run continues as task " + running->id +
                     ". Poll tasks/get for its status; tasks/result waits for and returns the "
                     "tool result; tasks/cancel stops it."}}}};
}

void TaskRunner::run(const std::shared_ptr<Running>& task, const tools::Tool& tool,
                     const json& arguments, const json& progress_token, bool client_logs_output,
                     SessionLanes::Place& place) {
  const std::string& id = task->id;
  json result;
  if (!place.waitTurn(task->cancel)) {
    result = cancelledBeforeStart();
  } else {
    auto outbox = task->outbox;
    // MCP: every notification about a task names it in _meta.
    auto notify = [outbox, id](const json& message) {
      json tagged = message;
      tagged["params"]["_meta"][kRelatedTaskMetaKey] = {{"taskId", id}};
      outbox->send(tagged);
    };
    RequestUpdates updates(notify, progress_token, client_logs_output);
    tools::ToolContext ctx{owner_, task->cancel, sessions_, config_, updates, metrics_};
    try {
      result = toCallResult(tools::callTool(tool, arguments, ctx));
    } catch (const std::exception& e) {  // callTool catches the tool's own; this is rendering
      result = toCallResult(tools::ToolResult::failure(std::string("Internal error in ") +
                                                       tool.spec.name + ": " + e.what()));
    }
  }
  place.leave();  // the session's next call may start
  if (auto finished = store_.finish(id, std::move(result))) {
    spdlog::debug("task {} {}", id, (*finished)["status"].get<std::string>());
    task->outbox->send(
        json{{"jsonrpc", "2.0"}, {"method", "notifications/tasks/status"}, {"params", *finished}});
  }
  task->done = true;
}

json TaskRunner::get(const json& params) { return store_.get(taskIdOf(params, "tasks/get")); }

json TaskRunner::result(const json& params, const std::function<void(const json&)>& notify,
                        CancelToken& stop) {
  const std::string id = taskIdOf(params, "tasks/result");
  std::shared_ptr<TaskOutbox> outbox;
  {
    std::lock_guard lock(mutex_);
    if (const auto it = running_.find(id); it != running_.end()) outbox = it->second->outbox;
  }
  std::uint64_t listener = 0;
  if (outbox && notify) listener = outbox->attach(notify);
  struct Detach {
    TaskOutbox* outbox;
    std::uint64_t key;
    ~Detach() {
      if (outbox != nullptr && key != 0) outbox->detach(key);
    }
  } detach{outbox.get(), listener};
  return store_.waitResult(id, stop);
}

json TaskRunner::list(const json& params) {
  std::optional<std::string> cursor;
  if (const auto it = params.find("cursor"); it != params.end() && !it->is_null()) {
    if (!it->is_string()) {
      throw jsonrpc::Error(jsonrpc::kInvalidParams, "tasks/list params.cursor must be a string");
    }
    cursor = it->get<std::string>();
  }
  return store_.list(cursor);
}

json TaskRunner::cancel(const json& params) {
  const std::string id = taskIdOf(params, "tasks/cancel");
  json task = store_.cancel(id);  // throws for unknown and finished tasks
  std::shared_ptr<Running> running;
  {
    std::lock_guard lock(mutex_);
    if (const auto it = running_.find(id); it != running_.end()) running = it->second;
  }
  if (running) running->cancel.cancel();
  spdlog::info("task {} cancelled by the client", id);
  return task;
}

void TaskRunner::shutdown() {
  std::unordered_map<std::string, std::shared_ptr<Running>> all;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    all.swap(running_);
  }
  store_.close();  // wakes tasks/result waiters
  for (auto& [id, task] : all) task->cancel.cancel();
  for (auto& [id, task] : all) {
    if (task->thread.joinable()) task->thread.join();
  }
}

void TaskRunner::reap() {
  for (auto it = running_.begin(); it != running_.end();) {
    auto& task = it->second;
    if (!task->done) {
      ++it;
      continue;
    }
    if (task->thread.joinable()) task->thread.join();  // it has finished: returns at once
    if (!store_.contains(task->id)) {
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace mcp
