// TaskRunner's part of the tasks extension (MCP 2026-07-28, io.modelcontextprotocol/tasks): the
// server decides whether a tools/call becomes a task; tasks/get shows a task with its input
// requests, result or error inlined; tasks/update brings the client's answers; tasks/cancel
// acknowledges.
#include <chrono>

#include "jsonrpc/errors.h"
#include "mcp/task_runner.h"

namespace mcp {
namespace {

using json = nlohmann::json;

// A task as the extension shows it. 2025 tasks fail when the tool's result is an error; the
// extension keeps "failed" for calls that did not run to their end (`has_error`), so a task
// whose tool reported an error is completed (its result says isError).
json extensionTask(const json& task, bool has_error) {
  std::string status = task.at("status").get<std::string>();
  if (status == "failed" && !has_error) status = "completed";
  json out{{"taskId", task.at("taskId")},       {"status", status},
           {"createdAt", task.at("createdAt")}, {"lastUpdatedAt", task.at("lastUpdatedAt")},
           {"ttlMs", task.at("ttl")},           {"pollIntervalMs", task.at("pollInterval")}};
  if (task.contains("statusMessage") && status == "working") {
    out["statusMessage"] = task["statusMessage"];
  }
  return out;
}

// The extension names the task at the root of tasks/get: the 2025 related-task _meta goes.
json withoutRelatedTask(json result) {
  if (auto meta = result.find("_meta"); meta != result.end() && meta->is_object()) {
    meta->erase(kRelatedTaskMetaKey);
    if (meta->empty()) result.erase("_meta");
  }
  return result;
}

}  // namespace

TaskRunner::Answer TaskRunner::startOrInline(Start request, bool result_inline) {
  request.extension = true;
  const json created = start(std::move(request));
  const std::string id = created.at("task").at("taskId").get<std::string>();
  std::shared_ptr<Running> task;
  {
    std::lock_guard lock(mutex_);
    if (const auto it = running_.find(id); it != running_.end()) task = it->second;
  }
  std::optional<tools::ToolResult> asked;
  bool settled = task == nullptr;  // gone from running_: it ran to its end already
  if (task) {
    std::unique_lock lock(task->settle_mutex);
    settled = task->settled_changed.wait_for(
        lock, std::chrono::milliseconds(config_.tasks.inline_wait_ms),
        [&task] { return task->settled; });
    if (settled) asked = task->asked;
  }
  if (asked) {  // asked before the client saw a task: an input-required result, and no task
    store_.discard(id);
    task->cancel.cancel();
    return Answer{nullptr, std::move(asked)};
  }
  if (settled && result_inline) {
    if (auto result = store_.peekResult(id)) return Answer{withoutRelatedTask(*result), {}};
  }
  json out = extensionTask(store_.get(id), false);
  out["resultType"] = "task";
  return Answer{std::move(out), {}};
}

json TaskRunner::getExtension(const json& params) {
  const TaskStore::Detail detail = store_.detail(taskIdOf(params, "tasks/get"));
  json task = extensionTask(detail.task, detail.error.has_value());
  const std::string status = task["status"].get<std::string>();
  if (status == "input_required") task["inputRequests"] = detail.input_requests;
  if (status == "completed" && detail.result) task["result"] = withoutRelatedTask(*detail.result);
  if (status == "failed" && detail.error) task["error"] = *detail.error;
  task["resultType"] = "complete";
  return task;
}

json TaskRunner::cancelExtension(const json& params) {
  const std::string id = taskIdOf(params, "tasks/cancel");
  try {
    (void)cancel(params);
  } catch (const jsonrpc::Error&) {
    if (!store_.contains(id)) throw;  // unknown: -32602; finished already: acknowledged
  }
  return json{{"resultType", "complete"}};
}

json TaskRunner::updateExtension(const json& params) {
  const auto responses = params.find("inputResponses");
  if (responses == params.end() || !responses->is_object()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "tasks/update needs params.inputResponses: an object of answers keyed "
                         "as the task's inputRequests (tasks/get shows them)");
  }
  // Answers to requests the task is not waiting for are ignored (the update is acknowledged).
  store_.deliverInput(taskIdOf(params, "tasks/update"), *responses);
  return json{{"resultType", "complete"}};
}

}  // namespace mcp
