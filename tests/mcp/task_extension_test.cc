// The tasks extension (io.modelcontextprotocol/tasks, MCP 2026-07-28) beyond a plain long call
// (mcp_modern_era_test.cc): tools that require a task, tools that ask their client for input
// before and after their call became a task (input_required, tasks/update), and a call that does
// not run to its end (failed with an error, where a tool's own error is completed + isError).
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "fake_backend.h"
#include "jsonrpc/errors.h"
#include "jsonrpc/protocol_era.h"
#include "mcp/mcp_server.h"

namespace {

using jsonrpc::json;
using tools::TaskSupport;
using tools::ToolContext;
using tools::ToolResult;

json meta(bool tasks) {
  json capabilities{{"elicitation", json::object()}};
  if (tasks) capabilities["extensions"] = {{"io.modelcontextprotocol/tasks", json::object()}};
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
          {"io.modelcontextprotocol/clientCapabilities", capabilities},
          {"io.modelcontextprotocol/clientInfo", {{"name", "t"}, {"version", "2"}}}};
}

json ask(const std::string& key) {
  return {{key,
           {{"method", "elicitation/create"},
            {"params", {{"message", key + "?"}, {"requestedSchema", {{"type", "object"}}}}}}}};
}

// Waits well past the inline wait (so the call is a task by then) unless cancelled.
void pastInlineWait(ToolContext& ctx) {
  for (int i = 0; i < 100 && !ctx.cancel.cancelled(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

tools::Tool tool(std::string name, TaskSupport support, tools::ToolHandler handler) {
  tools::Tool out;
  out.spec.name = std::move(name);
  out.spec.input_schema = {{"type", "object"}};
  out.spec.output_schema = nullptr;
  out.spec.task_support = support;
  out.handler = std::move(handler);
  return out;
}

ToolResult answered(const ToolContext& ctx) {
  ToolResult result;
  result.text = "answers: " + ctx.inputs->responses.dump();
  return result;
}

class TaskExtensionTest : public ::testing::Test {
 protected:
  TaskExtensionTest() {
    cfg.pool.size = 0;
    cfg.tasks.inline_wait_ms = 300;  // room for a quick tool on a loaded machine
    registry.add(tool("quick_required", TaskSupport::kRequired, [](const json&, ToolContext&) {
      ToolResult result;
      result.text = "done";
      return result;
    }));
    registry.add(tool("asks_first", TaskSupport::kRequired, [](const json&, ToolContext& ctx) {
      if (ctx.inputs->responses.empty()) return ToolResult::inputRequired(ask("name"));
      return answered(ctx);
    }));
    registry.add(tool("asks_later", TaskSupport::kOptional, [](const json&, ToolContext& ctx) {
      if (!ctx.inputs->responses.empty()) return answered(ctx);
      pastInlineWait(ctx);
      json both = ask("a");
      both.update(ask("b"));
      return ToolResult::inputRequired(both, {{"round", 1}});
    }));
    registry.add(tool("crashes", TaskSupport::kOptional, [](const json&, ToolContext& ctx) {
      pastInlineWait(ctx);
      throw std::runtime_error("boom");
      return ToolResult{};
    }));
    registry.add(tool("fails", TaskSupport::kOptional, [](const json&, ToolContext& ctx) {
      pastInlineWait(ctx);
      return ToolResult::failure("the tool's own error");
    }));
    sessions = std::make_unique<server::SessionRegistry>(
        cfg, std::make_unique<server::SessionFactory>(cfg, backend));
    server = std::make_unique<mcp::McpServer>(cfg, *sessions, registry);
    endpoint = server->open("owner-a");
  }

  json send(const std::string& method, json params, bool tasks = true) {
    params["_meta"] = meta(tasks);
    jsonrpc::RequestContext ctx;
    auto reply = endpoint->handle(
        {{"jsonrpc", "2.0"}, {"id", ++next_id}, {"method", method}, {"params", params}}, ctx);
    return reply.value_or(json());
  }
  json callTool(const std::string& name, json extra = json::object(), bool tasks = true) {
    extra["name"] = name;
    extra["arguments"] = json::object();
    return send("tools/call", std::move(extra), tasks);
  }
  json get(const json& id) { return send("tasks/get", {{"taskId", id}})["result"]; }
  // tasks/get until the status is no longer `status` (or 5 s pass).
  json waitPast(const json& id, const std::string& status) {
    json task = get(id);
    for (int i = 0; i < 500 && task["status"] == status; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      task = get(id);
    }
    return task;
  }

  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  tools::ToolRegistry registry;
  std::unique_ptr<server::SessionRegistry> sessions;
  std::unique_ptr<mcp::McpServer> server;
  std::shared_ptr<jsonrpc::Endpoint> endpoint;
  int next_id = 0;
};

TEST_F(TaskExtensionTest, ARequiredToolIsRefusedWithoutTheExtensionAndNamesIt) {
  const json modern = callTool("quick_required", json::object(), false);
  EXPECT_EQ(modern["error"]["code"], mcp::era::kMissingRequiredClientCapability) << modern;
  EXPECT_TRUE(modern["error"]["data"]["requiredCapabilities"]["extensions"].contains(
      "io.modelcontextprotocol/tasks"));
  // A 2025 call without params.task: -32601, as MCP 2025-11-25 says for taskSupport "required".
  const auto legacy_request = [this](const std::string& method, const json& params) {
    jsonrpc::RequestContext ctx;
    return endpoint
        ->handle({{"jsonrpc", "2.0"}, {"id", ++next_id}, {"method", method}, {"params", params}},
                 ctx)
        .value_or(json());
  };
  legacy_request("initialize", {{"protocolVersion", "2025-11-25"},
                                {"capabilities", json::object()},
                                {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
  const json legacy = legacy_request("tools/call", {{"name", "quick_required"}});
  EXPECT_EQ(legacy["error"]["code"], jsonrpc::kMethodNotFound) << legacy;
}

TEST_F(TaskExtensionTest, ARequiredToolAnswersWithATaskEvenWhenItIsQuick) {
  const json created = callTool("quick_required")["result"];
  ASSERT_EQ(created["resultType"], "task") << created;
  const json task = waitPast(created["taskId"], "working");
  EXPECT_EQ(task["status"], "completed") << task;
  EXPECT_EQ(task["result"]["content"][0]["text"], "done");
}

TEST_F(TaskExtensionTest, InputAskedBeforeTheCallBecameATaskIsAnInputRequiredResult) {
  const json first = callTool("asks_first")["result"];
  EXPECT_EQ(first["resultType"], "input_required") << first;
  EXPECT_FALSE(first.contains("taskId"));
  ASSERT_TRUE(first["inputRequests"].contains("name"));
  // The retry with the answer runs as a task (the tool requires one) that uses it.
  const json retry =
      callTool("asks_first", {{"inputResponses", {{"name", {{"action", "accept"}}}}}})["result"];
  ASSERT_EQ(retry["resultType"], "task") << retry;
  EXPECT_FALSE(retry.contains("requestState"));
  const json task = waitPast(retry["taskId"], "working");
  EXPECT_EQ(task["status"], "completed") << task;
  EXPECT_NE(task["result"]["content"][0]["text"].get<std::string>().find("accept"),
            std::string::npos);
}

TEST_F(TaskExtensionTest, ATaskStaysInputRequiredUntilEveryRequestIsAnswered) {
  const json created = callTool("asks_later")["result"];
  ASSERT_EQ(created["resultType"], "task") << created;
  const json& id = created["taskId"];
  json task = waitPast(id, "working");
  ASSERT_EQ(task["status"], "input_required") << task;
  EXPECT_EQ(task["inputRequests"].size(), 2U);
  EXPECT_FALSE(task.contains("requestState"));

  const json ack =
      send("tasks/update",
           {{"taskId", id},
            {"inputResponses", {{"a", {{"action", "accept"}}}, {"unknown", {{"x", 1}}}}}});
  EXPECT_EQ(ack["result"], json({{"resultType", "complete"}})) << ack;
  task = get(id);
  EXPECT_EQ(task["status"], "input_required");
  EXPECT_EQ(task["inputRequests"].size(), 1U);
  EXPECT_TRUE(task["inputRequests"].contains("b")) << task;

  send("tasks/update", {{"taskId", id}, {"inputResponses", {{"b", {{"action", "decline"}}}}}});
  task = waitPast(id, "input_required");
  task = waitPast(id, "working");
  ASSERT_EQ(task["status"], "completed") << task;
  const std::string text = task["result"]["content"][0]["text"];
  EXPECT_NE(text.find("accept"), std::string::npos) << text;
  EXPECT_NE(text.find("decline"), std::string::npos) << text;
  EXPECT_EQ(text.find("unknown"), std::string::npos) << "keys never asked are ignored";
}

// Each task waiting for input holds a task thread: a client gets no more than its share.
TEST_F(TaskExtensionTest, AClientHasAtMostItsShareOfTasksWaitingForInput) {
  cfg.execution.max_concurrent_per_client = 1;
  endpoint = server->open("owner-b");
  const json first = callTool("asks_later")["result"]["taskId"];
  ASSERT_EQ(waitPast(first, "working")["status"], "input_required");
  const json second = callTool("asks_later")["result"]["taskId"];
  const json refused = waitPast(second, "working");
  EXPECT_EQ(refused["status"], "failed") << refused;
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("waiting for its input"),
            std::string::npos)
      << refused;
  EXPECT_EQ(get(first)["status"], "input_required") << "the first one still waits";
  EXPECT_EQ(send("tasks/cancel", {{"taskId", first}})["result"]["resultType"], "complete");
}

TEST_F(TaskExtensionTest, CancellingATaskThatWaitsForInputEndsItCancelled) {
  const json id = callTool("asks_later")["result"]["taskId"];
  ASSERT_EQ(waitPast(id, "working")["status"], "input_required");
  EXPECT_EQ(send("tasks/cancel", {{"taskId", id}})["result"]["resultType"], "complete");
  const json task = get(id);
  EXPECT_EQ(task["status"], "cancelled") << task;
  EXPECT_FALSE(task.contains("inputRequests"));
}

TEST_F(TaskExtensionTest, ACrashIsAFailedTaskWithAnErrorAndAToolErrorACompletedOne) {
  const json crashed = waitPast(callTool("crashes")["result"]["taskId"], "working");
  EXPECT_EQ(crashed["status"], "failed") << crashed;
  EXPECT_EQ(crashed["error"]["code"], jsonrpc::kInternalError);
  EXPECT_NE(crashed["error"]["message"].get<std::string>().find("boom"), std::string::npos);
  EXPECT_FALSE(crashed.contains("result"));

  const json failed = waitPast(callTool("fails")["result"]["taskId"], "working");
  EXPECT_EQ(failed["status"], "completed") << failed;
  EXPECT_EQ(failed["result"]["isError"], true);
  EXPECT_FALSE(failed.contains("error"));
}

}  // namespace
