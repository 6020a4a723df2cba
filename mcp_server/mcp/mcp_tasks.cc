// McpEndpoint's part of MCP tasks: starting a task-augmented tools/call and the tasks/* methods.
// The work itself is TaskRunner's.
#include "jsonrpc/errors.h"
#include "mcp/mcp_server.h"
#include "tools/schema_validator.h"

namespace mcp {

using jsonrpc::json;

json McpEndpoint::startTask(const tools::Tool& tool, const json& params, const json& arguments,
                            std::string lane_key, jsonrpc::CallContext& call) {
  if (tool.spec.task_support != tools::TaskSupport::kOptional) {
    throw jsonrpc::Error(jsonrpc::kMethodNotFound,
                         "Tool " + tool.spec.name +
                             " does not run as a task (tools/list: execution.taskSupport is "
                             "\"forbidden\"); call it without params.task");
  }
  // Checked now: a task that fails on its arguments would tell a polling client only "failed".
  if (auto problem = tools::validateAgainstSchema(arguments, tool.spec.input_schema, "arguments")) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "Invalid arguments for " + tool.spec.name + ": " + *problem);
  }
  {
    std::lock_guard lock(mutex_);
    if (closed_) throw jsonrpc::Error(jsonrpc::kInvalidRequest, "the connection is closing");
  }
  TaskRunner::Start start{tool,
                          arguments,
                          params.at("task"),
                          progressToken(params),
                          std::move(lane_key),
                          clientLogsOutput(params),
                          call.transport.notify_outlives_request ? call.transport.notify : nullptr};
  return tasks_.start(std::move(start));
}

void McpEndpoint::registerTaskMethods() {
  dispatcher_.onRequest("tasks/get", [this](const json& params, auto&) {
    requireInitialized(params);
    return tasks_.get(params);
  });
  dispatcher_.onRequest("tasks/result", [this](const json& params, jsonrpc::CallContext& call) {
    requireInitialized(params);
    const auto cancel = cancelTokenFor(call);  // notifications/cancelled ends the wait
    if (auto reply = call.answerLater()) {     // waits holding no thread
      tasks_.resultLater(params, call.transport.notify, std::move(reply), cancel,
                         call.transport.abandoned);
      return json();
    }
    return tasks_.result(params, call.transport.notify, *cancel);
  });
  dispatcher_.onRequest("tasks/list", [this](const json& params, auto&) {
    requireInitialized(params);
    return tasks_.list(params);
  });
  dispatcher_.onRequest("tasks/cancel", [this](const json& params, auto&) {
    requireInitialized(params);
    return tasks_.cancel(params);
  });
}

}  // namespace mcp
