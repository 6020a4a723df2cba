#include "mcp/task_runner.h"

#include <spdlog/spdlog.h>

#include <future>
#include <system_error>
#include <vector>

#include "common/json_codec.h"
#include "jsonrpc/errors.h"
#include "jsonrpc/protocol_era.h"
#include "mcp/input_required.h"
#include "mcp/parked_request.h"
#include "mcp/tool_wire.h"
#include "server/session_registry.h"
#include "tools/result_spill.h"

namespace mcp {
namespace {

using json = nlohmann::json;

const char* kImmediateResponseKey = "io.modelcontextprotocol/model-immediate-response";
// What a result too big for the budgets keeps of stdout and of stderr.
constexpr std::size_t kKeptStreamBytes = std::size_t{16} * 1024;

TaskLimits limitsFrom(const config::ServerConfig& config, const std::string& route_tag) {
  TaskLimits limits;
  limits.route_tag = route_tag;
  limits.max_tasks = static_cast<std::size_t>(config.tasks.max_per_client);
  limits.default_ttl = std::chrono::milliseconds(config.tasks.default_ttl_ms);
  limits.max_ttl = std::chrono::milliseconds(config.tasks.max_ttl_ms);
  limits.poll_interval = std::chrono::milliseconds(config.tasks.poll_interval_ms);
  limits.max_result_bytes = static_cast<std::size_t>(config.tasks.max_result_bytes_per_client);
  return limits;
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

std::string TaskRunner::taskIdOf(const json& params, const char* method) {
  const auto id = params.find("taskId");
  if (id == params.end() || !id->is_string()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         std::string(method) +
                             " needs params.taskId (a string from the task "
                             "that tools/call returned)");
  }
  return id->get<std::string>();
}

TaskRunner::TaskRunner(server::Caller caller, const config::ServerConfig& config,
                       server::SessionRegistry& sessions, SessionLanes& lanes,
                       server::ExecutionSlots& threads, const tools::ToolMetrics* metrics,
                       TaskMemory* server_memory)
    : caller_(std::move(caller)),
      config_(config),
      sessions_(sessions),
      metrics_(metrics),
      lanes_(lanes),
      threads_(threads),
      store_(limitsFrom(config, sessions.routeTag()), TaskStore::Clock::now,
             server_memory != nullptr ? &server_memory->results : nullptr),
      notifications_(static_cast<std::size_t>(config.tasks.max_queued_bytes_per_client),
                     server_memory) {}

TaskRunner::~TaskRunner() { shutdown(); }

json TaskRunner::start(Start request) {
  const auto ttl = requestedTtl(request.task_params);
  auto running = std::make_shared<Running>();
  json task;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) throw jsonrpc::Error(jsonrpc::kInvalidRequest, "the connection is closing");
    reap();
    task = store_.create(ttl);  // bounded per client: tasks.max_per_client, queued ones included
    running->id = task["taskId"].get<std::string>();
    running->direct = std::move(request.direct_notify);
    running_.emplace(running->id, running);
  }
  auto what = std::make_shared<Launch>(
      Launch{request.tool, std::move(request.arguments), std::move(request.progress_token),
             request.client_logs_output, request.extension, std::move(request.inputs)});
  // Taken now, while the transport still holds this session's later requests back; the task
  // waits there without a thread.
  auto place = std::make_shared<SessionLanes::Place>(lanes_.enqueue(request.lane_key));
  // Cancelled while it waits: it leaves the line and ends without running.
  running->cancel.subscribe([this, weak = std::weak_ptr<Running>(running), place] {
    auto queued = weak.lock();
    if (!queued || queued->launched.exchange(true)) return;
    place->leave();
    finishTask(*queued, cancelledBeforeStart());
    queued->done = true;
  });
  place->whenTurn([this, running, what, place] { launch(running, what, place); });
  spdlog::debug("task {} started for {}", running->id, request.tool.spec.name);
  return json{{"task", std::move(task)},
              {"_meta",
               {{kImmediateResponseKey,
                 "The run continues as task " + running->id +
                     ". Poll tasks/get for its status; tasks/result waits for and returns the "
                     "tool result; tasks/cancel stops it."}}}};
}

void TaskRunner::launch(const std::shared_ptr<Running>& task, const std::shared_ptr<Launch>& what,
                        const std::shared_ptr<SessionLanes::Place>& place) {
  if (task->launched.exchange(true)) return;  // cancelled while it waited
  const auto end = [&](json result) {
    place->leave();
    finishTask(*task, std::move(result));
    task->done = true;
  };
  auto slot = threads_.tryClaim();
  if (!slot) {
    end(toCallResult(tools::ToolResult::failure(
        "busy: " + std::to_string(threads_.capacity()) +
        " tasks are running on this server (execution.max_concurrent) when this one's turn "
        "came; nothing ran. Start it again in a moment.")));
    return;
  }
  std::string failure;
  {
    std::lock_guard lock(mutex_);
    if (!stopped_) {
      try {
        task->thread = std::thread([this, task, what, place, slot = std::move(slot)]() mutable {
          run(task, *what, *place, std::move(slot));
        });
        return;
      } catch (const std::system_error& e) {
        failure = e.what();
      }
    }
  }
  // Outside mutex_: leaving the line may launch the next task, which takes it (and a slot).
  slot.reset();
  if (failure.empty()) {  // shutting down: the store is closed, nothing to keep
    place->leave();
    task->done = true;
    return;
  }
  spdlog::error("task {}: cannot start a thread: {}", task->id, failure);
  end(toCallResult(tools::ToolResult::failure("The server could not start the task (" + failure +
                                              "); retry later, or call without params.task.")));
}

void TaskRunner::run(const std::shared_ptr<Running>& task, const Launch& what,
                     SessionLanes::Place& place, std::optional<server::ExecutionSlots::Slot> slot) {
  const std::string& id = task->id;
  json result;
  // MCP: every notification about a task names it in _meta.
  auto tagged = [this, task, id](const json& message) {
    json copy = message;
    copy["params"]["_meta"][kRelatedTaskMetaKey] = {{"taskId", id}};
    notify(*task, copy);
  };
  RequestUpdates updates(tagged, what.progress_token, what.client_logs_output);
  tools::ToolContext ctx{caller_, task->cancel, sessions_, config_, updates, metrics_};
  Outcome outcome;
  try {
    outcome = runRounds(*task, what, ctx);
  } catch (const std::exception& e) {  // callTool catches the tool's own; this is rendering
    outcome.result = toCallResult(tools::ToolResult::failure(
        std::string("Internal error in ") + what.tool.spec.name + ": " + e.what()));
    outcome.error = json{{"code", jsonrpc::kInternalError}, {"message", e.what()}};
  }
  if (after_call_) after_call_(what.arguments);
  // Stored and announced while the slot is held (a drain waits for the slots, and a blocking
  // stdio write stays counted); then the slot goes back before the session's next task takes its
  // turn: that one claims a slot at once and must not find this one's (it would be refused "busy"
  // with nothing running). Answering before leaving the line is as a queued plain call does.
  finishTask(*task, std::move(outcome.result), std::move(outcome.error));
  slot.reset();
  place.leave();  // the session's next call may start
  task->done = true;
}

TaskRunner::Outcome TaskRunner::runRounds(Running& task, const Launch& what,
                                          tools::ToolContext& ctx) {
  tools::ToolInputs inputs = what.inputs;
  ctx.inputs = &inputs;
  for (;;) {
    tools::ToolResult result = tools::callTool(what.tool, what.arguments, ctx);
    if (result.input_requests.empty()) {
      std::optional<json> error;
      if (result.internal_error) {
        error = json{{"code", jsonrpc::kInternalError}, {"message", result.text}};
      }
      return Outcome{keepable(task.id, std::move(result)), std::move(error)};
    }
    if (!what.extension) {  // a 2025 task has no way to ask
      return Outcome{toCallResult(tools::ToolResult::failure(
                         "This call needs input from the client (MCP 2026-07-28 input-required "
                         "results); connect with a 2026-07-28 client to use it")),
                     std::nullopt};
    }
    json needed = json::object();
    json requests =
        declaredInputRequests(result.input_requests, inputs.client_capabilities, &needed);
    if (requests.empty()) {
      const std::string message =
          what.tool.spec.name + " needs input the client did not declare the capability for";
      return Outcome{toCallResult(tools::ToolResult::failure(message)),
                     json{{"code", era::kMissingRequiredClientCapability},
                          {"message", message},
                          {"data", {{"requiredCapabilities", needed}}}}};
    }
    // Each waiting task holds a task thread: one client may not hold more than its share.
    const std::size_t waiting = awaiting_input_.fetch_add(1) + 1;
    struct Leave {
      std::atomic<std::size_t>& count;
      ~Leave() { count.fetch_sub(1); }
    } leave{awaiting_input_};
    if (waiting > caller_.max_concurrent_executions) {
      const std::string message =
          "busy: this client already has " + std::to_string(waiting - 1) +
          " tasks waiting for its input, its limit (execution.max_concurrent_per_client, or its "
          "principal's max_concurrent_executions). Answer them with tasks/update or cancel them.";
      return Outcome{toCallResult(tools::ToolResult::failure(message)),
                     json{{"code", jsonrpc::kInternalError}, {"message", message}}};
    }
    settle(task, result);  // a call still waiting inline may answer with these requests
    auto answers = store_.awaitInput(task.id, std::move(requests), task.cancel, kInputPatience);
    if (!answers) {
      const std::string message =
          "The task ended while it waited for the client's input: it was cancelled, or no "
          "answer came within " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kInputPatience).count()) +
          " s (tasks/update brings the answers).";
      return Outcome{toCallResult(tools::ToolResult::failure(message)),
                     json{{"code", jsonrpc::kInternalError}, {"message", message}}};
    }
    inputs.responses = std::move(*answers);
    inputs.state = std::move(result.request_state);  // kept here, never sent: nothing to seal
  }
}

void TaskRunner::settle(Running& task, std::optional<tools::ToolResult> asked) {
  std::lock_guard lock(task.settle_mutex);
  if (task.settled) return;
  task.settled = true;
  task.asked = std::move(asked);
  task.settled_changed.notify_all();
}

void TaskRunner::finishTask(Running& task, json result, std::optional<json> error) {
  auto finished = store_.finish(task.id, std::move(result), std::move(error));
  settle(task, std::nullopt);  // after the store has the result: a call waiting inline reads it
  if (finished) {
    spdlog::debug("task {} {}", task.id, (*finished)["status"].get<std::string>());
    notify(
        task,
        json{{"jsonrpc", "2.0"}, {"method", "notifications/tasks/status"}, {"params", *finished}});
  }
}

json TaskRunner::keepable(const std::string& task_id, tools::ToolResult result) {
  json call_result = toCallResult(result);
  std::size_t bytes = common::dumpJson(call_result).size();
  if (store_.reserveResultBytes(task_id, bytes)) return call_result;
  // Too big to keep for the client: the streams go to the sandbox, a link stays.
  const std::string session_id = result.structured.value("session_id", "");
  try {
    if (session_id.empty()) throw std::runtime_error("the result names no session");
    auto session = sessions_.find(caller_.owner, session_id);
    tools::spillExecOutput(result, *session, "task-" + task_id, kKeptStreamBytes);
  } catch (const std::exception& e) {
    spdlog::warn("task {}: cannot save its large output in the sandbox: {}", task_id, e.what());
    result = tools::ToolResult::failure(
        "The task finished, but its result (" + std::to_string(bytes) +
        " bytes) is larger than the server keeps for a client (tasks.max_result_bytes_per_client) "
        "and its session is gone, so its output could not be saved there (" +
        e.what() + "). Run it again without params.task, or print less.");
  }
  call_result = toCallResult(std::move(result));
  bytes = common::dumpJson(call_result).size();
  (void)store_.reserveResultBytes(task_id, bytes, true);  // as small as it gets
  return call_result;
}

void TaskRunner::notify(Running& task, const json& message) {
  if (task.direct) {
    std::lock_guard lock(task.direct_mutex);
    task.direct(message);
    return;
  }
  notifications_.send(task.id, message);
}

json TaskRunner::get(const json& params) { return store_.get(taskIdOf(params, "tasks/get")); }

json TaskRunner::result(const json& params, const std::function<void(const json&)>& notify,
                        CancelToken& stop) {
  const std::string id = taskIdOf(params, "tasks/result");
  std::uint64_t listener = 0;
  if (notify && store_.contains(id)) listener = notifications_.attach(id, notify);
  struct Detach {
    TaskNotifications& notifications;
    const std::string& id;
    std::uint64_t key;
    ~Detach() {
      if (key != 0) notifications.detach(id, key);
    }
  } detach{notifications_, id, listener};
  return store_.waitResult(id, stop);
}

void TaskRunner::resultLater(const json& params, const std::function<void(const json&)>& notify,
                             std::shared_ptr<jsonrpc::Reply> reply,
                             const std::shared_ptr<CancelToken>& cancel,
                             const std::shared_ptr<CancelToken>& abandoned) {
  const std::string id = taskIdOf(params, "tasks/result");
  // The task's notifications ride on this request's stream while it waits.
  const std::uint64_t listener =
      notify && store_.contains(id) ? notifications_.attach(id, notify) : 0;
  const auto stopListening = [this, id, listener] {
    if (listener != 0) notifications_.detach(id, listener);
  };
  auto parked = std::make_shared<ParkedRequest>(std::move(reply));
  std::uint64_t waiter = 0;
  try {
    waiter = store_.whenResult(id, [parked, stopListening](const TaskStore::Outcome& outcome) {
      if (!parked->claim()) return;
      stopListening();
      parked->reply().complete(outcome);
    });
  } catch (...) {
    stopListening();
    throw;
  }
  if (waiter == 0) return;  // answered already
  parked->watch(cancel, abandoned,
                [this, waiter, id, stopListening](ParkedRequest& ended, bool by_client) {
                  store_.dropWaiter(waiter);
                  stopListening();
                  if (!by_client) {
                    ended.reply().drop();
                    return;
                  }
                  ended.reply().complete([&id]() -> json {
                    throw jsonrpc::Error(jsonrpc::kInvalidRequest,
                                         "tasks/result was cancelled before task '" + id +
                                             "' finished; the task keeps running (tasks/get "
                                             "shows it)");
                  });
                });
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
      notifications_.forget(task->id);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace mcp
