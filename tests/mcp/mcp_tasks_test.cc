// MCP tasks through McpEndpoint with in-memory sandboxes (FakeBackend): the protocol logic.
// tests/e2e/tasks.test.mjs runs the same against real sandboxes with the official client.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "fake_backend.h"
#include "mcp/mcp_server.h"
#include "tools/builtin_tools.h"

namespace {

using jsonrpc::json;
using namespace std::chrono_literals;

// Records the notifications sent through a request's context.
struct Recorder {
  std::mutex mutex;
  std::vector<json> messages;
  std::function<void(const json&)> sink() {
    return [this](const json& m) {
      std::lock_guard lock(mutex);
      messages.push_back(m);
    };
  }
  std::vector<json> snapshot() {
    std::lock_guard lock(mutex);
    return messages;
  }
};

class McpTasksTest : public ::testing::Test {
 protected:
  McpTasksTest() {
    cfg.pool.size = 0;
    cfg.tasks.max_per_client = 4;
    tools::registerBuiltinTools(registry, cfg);
    sessions = std::make_unique<server::SessionRegistry>(
        cfg, std::make_unique<server::SessionFactory>(cfg, backend));
    server = std::make_unique<mcp::McpServer>(cfg, *sessions, registry);
    endpoint = open("owner-a");
  }

  std::shared_ptr<jsonrpc::Endpoint> open(const std::string& owner) {
    auto ep = server->open(owner);
    request(*ep, "initialize", {{"protocolVersion", "2025-11-25"}});
    return ep;
  }
  json request(jsonrpc::Endpoint& ep, const std::string& method, json params = json::object(),
               jsonrpc::RequestContext ctx = {}) {
    auto reply = ep.handle(
        {{"jsonrpc", "2.0"}, {"id", ++next_id}, {"method", method}, {"params", params}}, ctx);
    EXPECT_TRUE(reply);
    return reply.value_or(json());
  }
  // A task-augmented tools/call; returns the whole reply.
  json startTask(jsonrpc::Endpoint& ep, const std::string& tool, json arguments,
                 const json& extra = json::object(), jsonrpc::RequestContext ctx = {}) {
    json params{{"name", tool}, {"arguments", std::move(arguments)}, {"task", {{"ttl", 60000}}}};
    params.update(extra);
    return request(ep, "tools/call", params, std::move(ctx));
  }
  std::string taskId(const json& reply) { return reply["result"]["task"]["taskId"]; }

  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  tools::ToolRegistry registry;
  std::unique_ptr<server::SessionRegistry> sessions;
  std::unique_ptr<mcp::McpServer> server;
  std::shared_ptr<jsonrpc::Endpoint> endpoint;
  std::atomic<int> next_id{0};
};

TEST_F(McpTasksTest, ServerAndToolsDeclareTaskSupportTitlesAndAllFourAnnotations) {
  auto ep = server->open("fresh");
  const json init = request(*ep, "initialize", {{"protocolVersion", "2025-11-25"}});
  const json tasks = init["result"]["capabilities"]["tasks"];
  EXPECT_TRUE(tasks["list"].is_object());
  EXPECT_TRUE(tasks["cancel"].is_object());
  EXPECT_TRUE(tasks["requests"]["tools"]["call"].is_object());

  const json tools = request(*ep, "tools/list")["result"]["tools"];
  ASSERT_FALSE(tools.empty());
  for (const auto& tool : tools) {
    const std::string name = tool["name"];
    EXPECT_FALSE(tool.value("title", "").empty()) << name;
    for (const char* hint :
         {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}) {
      ASSERT_TRUE(tool["annotations"].contains(hint)) << name << " lacks " << hint;
      EXPECT_TRUE(tool["annotations"][hint].is_boolean()) << name << " " << hint;
    }
    const bool runs_code = name == "run_code" || name == "run_shell";
    EXPECT_EQ(tool["execution"]["taskSupport"], runs_code ? "optional" : "forbidden") << name;
    if (runs_code) {
      EXPECT_FALSE(tool["annotations"]["readOnlyHint"]) << name;
      EXPECT_FALSE(tool["annotations"]["idempotentHint"]) << name;
    }
  }
}

TEST_F(McpTasksTest, TaskAnswersAtOnceThenGetListAndResultWork) {
  const json created = startTask(*endpoint, "run_shell", {{"command", "echo hi"}});
  ASSERT_TRUE(created.contains("result")) << created;
  const json& task = created["result"]["task"];
  EXPECT_EQ(task["status"], "working");
  EXPECT_EQ(task["ttl"], 60000);
  EXPECT_FALSE(created["result"].contains("content")) << "a CreateTaskResult, not the tool result";
  const std::string id = taskId(created);

  const json result = request(*endpoint, "tasks/result", {{"taskId", id}})["result"];
  EXPECT_EQ(result["structuredContent"]["stdout"], "ran: echo hi");
  EXPECT_EQ(result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
  EXPECT_EQ(request(*endpoint, "tasks/get", {{"taskId", id}})["result"]["status"], "completed");
  const json listed = request(*endpoint, "tasks/list")["result"]["tasks"];
  ASSERT_EQ(listed.size(), 1U);
  EXPECT_EQ(listed[0]["taskId"], id);
  // Terminal tasks cannot be cancelled.
  EXPECT_EQ(request(*endpoint, "tasks/cancel", {{"taskId", id}})["error"]["code"], -32602);
}

TEST_F(McpTasksTest, CancelStopsARunningTaskAndTheSessionSurvives) {
  const json first =
      request(*endpoint, "tools/call", {{"name", "run_code"}, {"arguments", {{"code", "x = 1"}}}});
  const std::string sid = first["result"]["structuredContent"]["session_id"];
  const std::string id =
      taskId(startTask(*endpoint, "run_code", {{"code", "wait-for-cancel"}, {"session_id", sid}}));
  EXPECT_EQ(request(*endpoint, "tasks/get", {{"taskId", id}})["result"]["status"], "working");
  // Cancel a run, not a call still waiting for its thread to reach the session.
  for (int i = 0; i < 500 && *backend.waiting_for_cancel == 0; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(*backend.waiting_for_cancel, 1) << "the task never started running";
  const auto started = std::chrono::steady_clock::now();
  const json cancelled = request(*endpoint, "tasks/cancel", {{"taskId", id}})["result"];
  EXPECT_EQ(cancelled["status"], "cancelled");
  const json result = request(*endpoint, "tasks/result", {{"taskId", id}})["result"];
  EXPECT_EQ(result["structuredContent"]["status"], "cancelled");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_EQ(request(*endpoint, "tasks/get", {{"taskId", id}})["result"]["status"], "cancelled");
  const json next =
      request(*endpoint, "tools/call",
              {{"name", "run_code"}, {"arguments", {{"session_id", sid}, {"code", "y"}}}});
  EXPECT_EQ(next["result"]["structuredContent"]["session_id"], sid);
  EXPECT_EQ(backend.created, 1);
}

TEST_F(McpTasksTest, BadTaskRequestsGetClearProtocolErrors) {
  const json forbidden = startTask(*endpoint, "list_sessions", json::object());
  EXPECT_EQ(forbidden["error"]["code"], -32601);
  EXPECT_NE(forbidden["error"]["message"].get<std::string>().find("without params.task"),
            std::string::npos);
  EXPECT_EQ(startTask(*endpoint, "run_code", {{"code", 5}})["error"]["code"], -32602);
  EXPECT_EQ(request(*endpoint, "tools/call",
                    {{"name", "run_code"},
                     {"arguments", {{"code", "1"}}},
                     {"task", "soon"}})["error"]["code"],
            -32602);
  EXPECT_EQ(request(*endpoint, "tools/call",
                    {{"name", "run_code"},
                     {"arguments", {{"code", "1"}}},
                     {"task", {{"ttl", -1}}}})["error"]["code"],
            -32602);
  for (const char* method : {"tasks/get", "tasks/result", "tasks/cancel"}) {
    EXPECT_EQ(request(*endpoint, method, {{"taskId", "no-such-task"}})["error"]["code"], -32602)
        << method;
    EXPECT_EQ(request(*endpoint, method, json::object())["error"]["code"], -32602) << method;
  }
  EXPECT_EQ(request(*endpoint, "tasks/list", {{"cursor", "bogus"}})["error"]["code"], -32602);
  EXPECT_EQ(backend.created, 0) << "nothing ran";
}

TEST_F(McpTasksTest, AnotherClientCanNeitherSeeReadNorCancelATask) {
  const std::string id = taskId(startTask(*endpoint, "run_code", {{"code", "wait-for-cancel"}}));
  auto other = open("owner-b");
  for (const char* method : {"tasks/get", "tasks/result", "tasks/cancel"}) {
    EXPECT_EQ(request(*other, method, {{"taskId", id}})["error"]["code"], -32602) << method;
  }
  EXPECT_TRUE(request(*other, "tasks/list")["result"]["tasks"].empty());
  EXPECT_EQ(request(*endpoint, "tasks/get", {{"taskId", id}})["result"]["status"], "working");
  (void)request(*endpoint, "tasks/cancel", {{"taskId", id}});
}

TEST_F(McpTasksTest, LaterCallsToTheSameSessionWaitForARunningTask) {
  const json first =
      request(*endpoint, "tools/call", {{"name", "run_code"}, {"arguments", {{"code", "x = 1"}}}});
  const std::string sid = first["result"]["structuredContent"]["session_id"];
  const std::string id =
      taskId(startTask(*endpoint, "run_code", {{"code", "wait-for-cancel"}, {"session_id", sid}}));
  auto later = std::async(std::launch::async, [&] {
    return request(*endpoint, "tools/call",
                   {{"name", "run_code"}, {"arguments", {{"session_id", sid}, {"code", "after"}}}});
  });
  EXPECT_EQ(later.wait_for(300ms), std::future_status::timeout) << "ran beside the task";
  // Another session is not held up.
  const json elsewhere =
      request(*endpoint, "tools/call", {{"name", "run_code"}, {"arguments", {{"code", "1"}}}});
  EXPECT_EQ(elsewhere["result"]["isError"], false);
  (void)request(*endpoint, "tasks/cancel", {{"taskId", id}});
  EXPECT_EQ(later.get()["result"]["structuredContent"]["stdout"], "ran: after");
}

// A task's turn comes on the thread of the one before it, which must have given its task slot back
// by then: else, with every slot in use, the next would be refused "busy" though nothing else runs.
TEST_F(McpTasksTest, QueuedTasksOfASessionRunOneAfterAnotherOnASingleTaskSlot) {
  cfg.execution.max_concurrent = 1;
  endpoint.reset();
  server = std::make_unique<mcp::McpServer>(cfg, *sessions, registry);
  endpoint = open("owner-a");
  const json first =
      request(*endpoint, "tools/call", {{"name", "run_code"}, {"arguments", {{"code", "x = 1"}}}});
  const std::string sid = first["result"]["structuredContent"]["session_id"];
  // The first runs until cancelled, so the other two surely wait in line behind it.
  const std::string running =
      taskId(startTask(*endpoint, "run_code", {{"code", "wait-for-cancel"}, {"session_id", sid}}));
  std::vector<std::string> queued;
  queued.reserve(2);
  for (int i = 0; i < 2; ++i) {
    queued.push_back(taskId(startTask(
        *endpoint, "run_code", {{"code", "step " + std::to_string(i)}, {"session_id", sid}})));
  }
  EXPECT_EQ(request(*endpoint, "tasks/get", {{"taskId", queued[1]}})["result"]["status"],
            "working");
  (void)request(*endpoint, "tasks/cancel", {{"taskId", running}});
  for (int i = 0; i < 2; ++i) {
    const json result = request(*endpoint, "tasks/result", {{"taskId", queued[i]}});
    EXPECT_EQ(result["result"]["isError"], false) << result.dump();
    EXPECT_EQ(result.value(json::json_pointer("/result/structuredContent/stdout"), json()),
              "ran: step " + std::to_string(i));
  }
}

TEST_F(McpTasksTest, QueuedNotificationsReachTheTasksResultStreamTaggedWithTheTask) {
  // As over HTTP: the creating request's notify cannot be used once it was answered.
  const std::string id = taskId(startTask(*endpoint, "run_code", {{"code", "stream"}},
                                          {{"_meta", {{"progressToken", "p1"}}}}));
  Recorder recorder;
  jsonrpc::RequestContext ctx;
  ctx.notify = recorder.sink();
  const json result = request(*endpoint, "tasks/result", {{"taskId", id}}, ctx)["result"];
  EXPECT_EQ(result["structuredContent"]["stdout"], "line 1\nline 2\n");
  const auto got = recorder.snapshot();
  std::vector<std::string> messages;
  for (const auto& n : got) {
    if (n["method"] != "notifications/progress") continue;
    EXPECT_EQ(n["params"]["progressToken"], "p1");
    EXPECT_EQ(n["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
    messages.push_back(n["params"]["message"]);
  }
  EXPECT_EQ(messages, (std::vector<std::string>{"line 1\n", "[stderr] oops\n", "line 2\n"}));
}

TEST_F(McpTasksTest, WhereNotifyOutlivesTheRequestNotificationsGoOutAtOnce) {
  Recorder recorder;
  jsonrpc::RequestContext ctx;  // as over stdio
  ctx.notify = recorder.sink();
  ctx.notify_outlives_request = true;
  const std::string id = taskId(startTask(*endpoint, "run_code", {{"code", "stream"}},
                                          {{"_meta", {{"progressToken", 7}}}}, ctx));
  (void)request(*endpoint, "tasks/result", {{"taskId", id}});
  for (int i = 0; i < 100 && recorder.snapshot().size() < 4; ++i) std::this_thread::sleep_for(10ms);
  const auto got = recorder.snapshot();
  ASSERT_EQ(got.size(), 4U);  // three progress notifications and the status change
  EXPECT_EQ(got[0]["params"]["progressToken"], 7);
  EXPECT_EQ(got[3]["method"], "notifications/tasks/status");
  EXPECT_EQ(got[3]["params"]["status"], "completed");
  EXPECT_EQ(got[3]["params"]["taskId"], id);
}

TEST_F(McpTasksTest, StoreIsBoundedPerClient) {
  std::vector<std::string> ids;
  ids.reserve(4);
  for (int i = 0; i < 4; ++i) {
    ids.push_back(taskId(startTask(*endpoint, "run_code", {{"code", "wait-for-cancel"}})));
  }
  const json refused = startTask(*endpoint, "run_code", {{"code", "1"}});
  EXPECT_EQ(refused["error"]["code"], -32600);
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("tasks.max_per_client"),
            std::string::npos);
  // Another client has its own allowance.
  auto other = open("owner-b");
  const std::string theirs = taskId(startTask(*other, "run_code", {{"code", "1"}}));
  (void)request(*other, "tasks/result", {{"taskId", theirs}});
  for (const auto& id : ids) (void)request(*endpoint, "tasks/cancel", {{"taskId", id}});
}

TEST_F(McpTasksTest, ClosingTheConnectionCancelsItsTasksAndFreesTheirSandboxes) {
  for (int i = 0; i < 3; ++i) (void)startTask(*endpoint, "run_code", {{"code", "wait-for-cancel"}});
  for (int i = 0; i < 200 && backend.live < 3; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(backend.live, 3);
  const auto started = std::chrono::steady_clock::now();
  endpoint->close();  // joins the task threads
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_EQ(backend.live, 0);
  EXPECT_EQ(request(*endpoint, "tasks/list")["result"]["tasks"].size(), 0U);
}

}  // namespace
