#include "mcp/mcp_server.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "fake_backend.h"
#include "tools/builtin_tools.h"

namespace {

using jsonrpc::json;

class McpServerTest : public ::testing::Test {
 protected:
  McpServerTest() {
    cfg.sessions.max_sessions = 3;
    cfg.pool.size = 0;  // these tests count creations; WarmPoolTest covers the pool
    tools::registerBuiltinTools(registry, cfg);
    sessions = std::make_unique<server::SessionRegistry>(
        cfg, std::make_unique<server::SessionFactory>(cfg, backend));
    server = std::make_unique<mcp::McpServer>(cfg, *sessions, registry);
    endpoint = server->open("owner-a");
  }

  json request(jsonrpc::Endpoint& ep, const std::string& method, json params = json::object()) {
    jsonrpc::RequestContext ctx;
    auto reply = ep.handle(
        {{"jsonrpc", "2.0"}, {"id", ++next_id}, {"method", method}, {"params", params}}, ctx);
    EXPECT_TRUE(reply);
    return reply.value_or(json());
  }
  json call(jsonrpc::Endpoint& ep, const std::string& tool, json arguments) {
    return request(ep, "tools/call", {{"name", tool}, {"arguments", arguments}})["result"];
  }
  void initialize(jsonrpc::Endpoint& ep) {
    request(ep, "initialize",
            {{"protocolVersion", "2025-06-18"},
             {"capabilities", json::object()},
             {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
  }

  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  tools::ToolRegistry registry;
  std::unique_ptr<server::SessionRegistry> sessions;
  std::unique_ptr<mcp::McpServer> server;
  std::shared_ptr<jsonrpc::Endpoint> endpoint;
  int next_id = 0;
};

TEST_F(McpServerTest, NegotiatesProtocolVersion) {
  auto reply = request(*endpoint, "initialize", {{"protocolVersion", "2025-03-26"}});
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-03-26");
  EXPECT_EQ(reply["result"]["serverInfo"]["name"], "sandbox-mcp");
  EXPECT_TRUE(reply["result"]["capabilities"].contains("tools"));
  auto other = server->open("owner-b");
  reply = request(*other, "initialize", {{"protocolVersion", "1999-01-01"}});
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-11-25");
  reply = request(*other, "initialize", json::object());
  EXPECT_EQ(reply["error"]["code"], -32602);
}

TEST_F(McpServerTest, ToolsNeedInitialize) {
  EXPECT_EQ(request(*endpoint, "tools/list")["error"]["code"], -32600);
  EXPECT_TRUE(request(*endpoint, "ping")["result"].is_object());
}

TEST_F(McpServerTest, ListsToolsWithSchemas) {
  initialize(*endpoint);
  const auto tools = request(*endpoint, "tools/list")["result"]["tools"];
  std::vector<std::string> names;
  for (const auto& tool : tools) {
    names.push_back(tool["name"]);
    EXPECT_EQ(tool["inputSchema"]["type"], "object") << tool["name"];
    EXPECT_EQ(tool["outputSchema"]["type"], "object") << tool["name"];
    EXPECT_FALSE(tool["description"].get<std::string>().empty());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"run_code", "run_shell", "upload_file",
                                             "download_file", "list_files", "get_session_stats",
                                             "cleanup_session", "list_sessions"}));
}

TEST_F(McpServerTest, CallErrorsAreClear) {
  initialize(*endpoint);
  auto unknown = request(*endpoint, "tools/call", {{"name", "nope"}});
  EXPECT_EQ(unknown["error"]["code"], -32602);
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("run_code"), std::string::npos);
  EXPECT_EQ(request(*endpoint, "tools/call", {{"arguments", json::object()}})["error"]["code"],
            -32602);
  auto invalid = call(*endpoint, "run_code", {{"code", 5}});
  EXPECT_TRUE(invalid["isError"]);
  EXPECT_EQ(invalid["content"][0]["text"],
            "Invalid arguments for run_code: arguments.code: must be a string (got integer)");
  auto missing =
      call(*endpoint, "upload_file", {{"path", "a"}, {"content", "b"}, {"session_id", "ghost"}});
  EXPECT_TRUE(missing["isError"]);
  EXPECT_NE(missing["content"][0]["text"].get<std::string>().find("Unknown session 'ghost'"),
            std::string::npos);
  auto bad_b64 =
      call(*endpoint, "upload_file",
           {{"path", "a"}, {"content", "!!"}, {"encoding", "base64"}, {"session_id", "x"}});
  EXPECT_TRUE(bad_b64["isError"]);
}

TEST_F(McpServerTest, RunCodeCreatesAndReusesSessions) {
  initialize(*endpoint);
  auto first = call(*endpoint, "run_code", {{"code", "x = 1"}});
  ASSERT_FALSE(first["isError"]) << first.dump();
  const auto id = first["structuredContent"]["session_id"].get<std::string>();
  EXPECT_TRUE(first["structuredContent"]["session_created"]);
  auto second = call(*endpoint, "run_shell", {{"command", "ls"}, {"session_id", id}});
  EXPECT_FALSE(second["structuredContent"]["session_created"]);
  EXPECT_EQ(second["structuredContent"]["stdout"], "ran: ls");
  EXPECT_EQ(backend.created, 1);
  auto stats = call(*endpoint, "get_session_stats", {{"session_id", id}});
  EXPECT_EQ(stats["structuredContent"]["execution_count"], 2);
  EXPECT_EQ(stats["structuredContent"]["runtime"], "runsc");
  auto named = call(*endpoint, "run_code", {{"code", "1"}, {"session_id", "my-session"}});
  EXPECT_EQ(named["structuredContent"]["session_id"], "my-session");
  EXPECT_EQ(
      call(*endpoint, "list_sessions", json::object())["structuredContent"]["sessions"].size(), 2U);
}

TEST_F(McpServerTest, SessionsBelongToTheirOwner) {
  initialize(*endpoint);
  auto other = server->open("owner-b");
  initialize(*other);
  call(*endpoint, "run_code", {{"code", "x"}, {"session_id", "mine"}});
  auto stolen = call(*other, "get_session_stats", {{"session_id", "mine"}});
  EXPECT_TRUE(stolen["isError"]);
  EXPECT_TRUE(
      call(*other, "list_sessions", json::object())["structuredContent"]["sessions"].empty());
  EXPECT_TRUE(call(*other, "cleanup_session", {{"session_id", "mine"}})["isError"]);
  other->close();
  EXPECT_EQ(backend.live, 1);
  endpoint->close();
  EXPECT_EQ(backend.live, 0);
}

TEST_F(McpServerTest, OptionsAreFixedAtCreation) {
  initialize(*endpoint);
  call(*endpoint, "run_code", {{"code", "x"}, {"session_id", "s"}, {"environment", {{"A", "1"}}}});
  auto same = call(*endpoint, "run_code",
                   {{"code", "x"}, {"session_id", "s"}, {"environment", {{"A", "1"}}}});
  EXPECT_FALSE(same["isError"]);
  auto changed = call(*endpoint, "run_code",
                      {{"code", "x"}, {"session_id", "s"}, {"environment", {{"A", "2"}}}});
  EXPECT_TRUE(changed["isError"]);
  EXPECT_NE(changed["content"][0]["text"].get<std::string>().find("different environment"),
            std::string::npos);
  EXPECT_EQ(backend.last_spec.environment.at("A"), "1");
}

TEST_F(McpServerTest, MissingImageAndVolumesAreRefused) {
  initialize(*endpoint);
  auto image = call(*endpoint, "run_code", {{"code", "x"}, {"image", "missing:latest"}});
  EXPECT_TRUE(image["isError"]);
  EXPECT_NE(image["content"][0]["text"].get<std::string>().find("never pulls"), std::string::npos);
  auto volumes =
      call(*endpoint, "run_code", {{"code", "x"}, {"volumes", {{"/etc", {{"bind", "/mnt/etc"}}}}}});
  EXPECT_TRUE(volumes["isError"]);
  EXPECT_EQ(backend.created, 0);
}

TEST_F(McpServerTest, SessionLimitGivesBusyError) {
  initialize(*endpoint);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(call(*endpoint, "run_code", {{"code", "x"}})["isError"]);
  }
  auto busy = call(*endpoint, "run_code", {{"code", "x"}});
  EXPECT_TRUE(busy["isError"]);
  EXPECT_EQ(busy["content"][0]["text"].get<std::string>().rfind("busy:", 0), 0U);
}

TEST_F(McpServerTest, CancelledNotificationInterruptsCall) {
  initialize(*endpoint);
  auto pending = std::async(std::launch::async, [&] {
    jsonrpc::RequestContext ctx;
    return endpoint->handle(
        {{"jsonrpc", "2.0"},
         {"id", "long"},
         {"method", "tools/call"},
         {"params", {{"name", "run_code"}, {"arguments", {{"code", "wait-for-cancel"}}}}}},
        ctx);
  });
  // Retry until the call is registered in flight, then cancel it.
  for (int i = 0;
       i < 200 && pending.wait_for(std::chrono::milliseconds(10)) == std::future_status::timeout;
       ++i) {
    jsonrpc::RequestContext ctx;
    endpoint->handle({{"jsonrpc", "2.0"},
                      {"method", "notifications/cancelled"},
                      {"params", {{"requestId", "long"}, {"reason", "test"}}}},
                     ctx);
  }
  auto reply = pending.get();
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["result"]["structuredContent"]["status"], "cancelled");
}

TEST_F(McpServerTest, MissingGvisorRefusesByDefault) {
  backend.runtime_names = {"runc"};
  initialize(*endpoint);
  auto refused = call(*endpoint, "run_code", {{"code", "x"}});
  EXPECT_TRUE(refused["isError"]);
  const auto text = refused["content"][0]["text"].get<std::string>();
  EXPECT_NE(text.find("scripts/setup.sh"), std::string::npos) << text;
  EXPECT_NE(text.find("allow_runc_fallback"), std::string::npos) << text;
  EXPECT_EQ(backend.created, 0);
}

TEST_F(McpServerTest, DockerfileIsOffUnlessTheOperatorEnablesIt) {
  initialize(*endpoint);
  auto refused = call(*endpoint, "run_code",
                      {{"code", "x"}, {"dockerfile", "FROM sandbox-mcp/python:latest\n"}});
  EXPECT_TRUE(refused["isError"]);
  EXPECT_NE(refused["content"][0]["text"].get<std::string>().find("sandbox.allow_dockerfile"),
            std::string::npos);
  EXPECT_EQ(backend.created, 0);
}

TEST_F(McpServerTest, DockerfileBuildsAreCheckedBeforeTheBackendSeesThem) {
  cfg.sandbox.allow_dockerfile = true;
  initialize(*endpoint);
  const auto error = [&](const std::string& dockerfile) {
    auto r = call(*endpoint, "run_code", {{"code", "x"}, {"dockerfile", dockerfile}});
    EXPECT_TRUE(r["isError"]) << dockerfile;
    return r["content"][0]["text"].get<std::string>();
  };
  EXPECT_NE(
      error("FROM sandbox-mcp/python:latest\nADD http://127.0.0.1:1/x /x\n").find("ADD is refused"),
      std::string::npos);
  EXPECT_NE(error("FROM other:latest\nRUN true\n").find("sandbox.allowed_images"),
            std::string::npos);
  EXPECT_NE(error("FROM missing:latest\n").find("never pulls"), std::string::npos);
  EXPECT_TRUE(backend.last_build.plan.from.empty()) << "a refused build reached the backend";

  auto built = call(*endpoint, "run_code",
                    {{"code", "x"}, {"dockerfile", "FROM sandbox-mcp/python\nRUN true\n"}});
  EXPECT_FALSE(built["isError"]) << built.dump();
  EXPECT_EQ(backend.last_build.runtime, "runsc-build");
  EXPECT_EQ(backend.last_build.base_id, "sha256:sandbox-mcp/python");
  EXPECT_EQ(backend.last_build.limits.memory_mib, cfg.sandbox.memory_mib);
  EXPECT_EQ(backend.last_build.timeout, std::chrono::seconds(300));
  EXPECT_EQ(backend.last_spec.image, "built:1");
}

TEST_F(McpServerTest, OnlyAllowedImagesRun) {
  initialize(*endpoint);
  auto refused = call(*endpoint, "run_code", {{"code", "x"}, {"image", "other:latest"}});
  EXPECT_TRUE(refused["isError"]);
  EXPECT_NE(refused["content"][0]["text"].get<std::string>().find("sandbox.allowed_images"),
            std::string::npos);
  EXPECT_EQ(backend.created, 0);
  cfg.sandbox.allowed_images = {"other:*"};
  EXPECT_FALSE(call(*endpoint, "run_code", {{"code", "x"}, {"image", "other:latest"}})["isError"]);
  EXPECT_EQ(backend.last_spec.image, "other:latest");
}

TEST_F(McpServerTest, FallsBackToRuncOnlyWhenTheOperatorOptsIn) {
  backend.runtime_names = {"runc"};
  cfg.sandbox.allow_runc_fallback = true;
  initialize(*endpoint);
  EXPECT_FALSE(call(*endpoint, "run_code", {{"code", "x"}})["isError"]);
  EXPECT_EQ(backend.last_spec.runtime, "runc");
}

}  // namespace

namespace {

// Runs tools/call with a RequestContext that records the notifications sent for it.
struct RecordedCall {
  json reply;
  std::vector<json> notifications;
};

RecordedCall callRecording(jsonrpc::Endpoint& ep, json params) {
  RecordedCall out;
  std::mutex mutex;
  jsonrpc::RequestContext ctx;
  ctx.notify = [&](const json& notification) {
    std::lock_guard lock(mutex);
    out.notifications.push_back(notification);
  };
  out.reply =
      ep.handle({{"jsonrpc", "2.0"}, {"id", 99}, {"method", "tools/call"}, {"params", params}}, ctx)
          .value_or(json());
  return out;
}

}  // namespace

TEST_F(McpServerTest, OutputIsStreamedAsProgressWhenAskedFor) {
  initialize(*endpoint);
  auto plain =
      callRecording(*endpoint, {{"name", "run_code"}, {"arguments", {{"code", "stream"}}}});
  EXPECT_TRUE(plain.notifications.empty()) << "no progressToken, no logging: nothing streamed";

  auto streamed = callRecording(*endpoint, {{"name", "run_code"},
                                            {"arguments", {{"code", "stream"}}},
                                            {"_meta", {{"progressToken", "tok-1"}}}});
  ASSERT_EQ(streamed.notifications.size(), 3U);
  std::vector<std::string> messages;
  double last_progress = 0;
  for (const auto& n : streamed.notifications) {
    EXPECT_EQ(n["method"], "notifications/progress");
    EXPECT_EQ(n["params"]["progressToken"], "tok-1");
    EXPECT_GT(n["params"]["progress"].get<double>(), last_progress) << "progress must increase";
    last_progress = n["params"]["progress"].get<double>();
    messages.push_back(n["params"]["message"]);
  }
  EXPECT_EQ(messages, (std::vector<std::string>{"line 1\n", "[stderr] oops\n", "line 2\n"}));
  // The final result still carries the whole output.
  EXPECT_EQ(streamed.reply["result"]["structuredContent"]["stdout"], "line 1\nline 2\n");
}

TEST_F(McpServerTest, OutputIsStreamedAsLogMessagesAtInfo) {
  initialize(*endpoint);
  request(*endpoint, "logging/setLevel", {{"level", "warning"}});
  auto quiet =
      callRecording(*endpoint, {{"name", "run_code"}, {"arguments", {{"code", "stream"}}}});
  EXPECT_TRUE(quiet.notifications.empty()) << "output is info: not sent at level warning";

  request(*endpoint, "logging/setLevel", {{"level", "info"}});
  auto logged =
      callRecording(*endpoint, {{"name", "run_code"}, {"arguments", {{"code", "stream"}}}});
  ASSERT_EQ(logged.notifications.size(), 3U);
  EXPECT_EQ(logged.notifications[0]["method"], "notifications/message");
  EXPECT_EQ(logged.notifications[0]["params"]["level"], "info");
  EXPECT_EQ(logged.notifications[0]["params"]["logger"], "stdout");
  EXPECT_EQ(logged.notifications[0]["params"]["data"], "line 1\n");
  EXPECT_EQ(logged.notifications[1]["params"]["logger"], "stderr");
}

TEST_F(McpServerTest, ExecutionLimitGivesBusyErrorAtOnce) {
  cfg.execution.max_concurrent = 1;
  server::SessionRegistry limited(cfg, std::make_unique<server::SessionFactory>(cfg, backend));
  mcp::McpServer limited_server(cfg, limited, registry);
  auto ep = limited_server.open("owner-c");
  initialize(*ep);
  auto running = std::async(std::launch::async, [&] {
    jsonrpc::RequestContext ctx;
    return ep->handle(
        {{"jsonrpc", "2.0"},
         {"id", "long"},
         {"method", "tools/call"},
         {"params", {{"name", "run_code"}, {"arguments", {{"code", "wait-for-cancel"}}}}}},
        ctx);
  });
  // Wait until the long call holds the only slot, then try a second one.
  for (int i = 0; i < 500 && limited.executionSlots().inUse() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(limited.executionSlots().inUse(), 1U);
  auto busy = call(*ep, "run_code", {{"code", "1"}});
  EXPECT_TRUE(busy["isError"]);
  const auto text = busy["content"][0]["text"].get<std::string>();
  EXPECT_EQ(text.rfind("busy:", 0), 0U) << text;
  EXPECT_NE(text.find("execution.max_concurrent"), std::string::npos) << text;
  jsonrpc::RequestContext ctx;
  ep->handle({{"jsonrpc", "2.0"},
              {"method", "notifications/cancelled"},
              {"params", {{"requestId", "long"}}}},
             ctx);
  EXPECT_EQ((*running.get())["result"]["structuredContent"]["status"], "cancelled");
  EXPECT_EQ(limited.executionSlots().inUse(), 0U);
  EXPECT_FALSE(call(*ep, "run_code", {{"code", "1"}})["isError"]) << "the slot was given back";
  ep->close();
}

// A sandbox that died between calls (killed from outside, OOM) is replaced, and the call says
// so: state_lost plus a warning; never a silently empty sandbox under the old id.
TEST_F(McpServerTest, DeadSandboxIsReplacedWithStateLostAndAWarning) {
  initialize(*endpoint);
  auto first = call(*endpoint, "run_code", {{"code", "x = 1"}, {"session_id", "victim"}});
  ASSERT_FALSE(first["isError"]) << first.dump();
  backend.sandboxes_alive->store(false);
  backend.sandboxes_alive = std::make_shared<std::atomic<bool>>(true);  // new ones live

  auto next = call(*endpoint, "run_code", {{"code", "x"}, {"session_id", "victim"}});
  ASSERT_FALSE(next["isError"]) << next.dump();
  const auto& s = next["structuredContent"];
  EXPECT_EQ(s["session_id"], "victim");
  EXPECT_TRUE(s["state_lost"]);
  ASSERT_TRUE(s.contains("warnings")) << s.dump();
  EXPECT_NE(s["warnings"][0].get<std::string>().find("was lost"), std::string::npos);
  EXPECT_EQ(backend.created, 2);

  auto after = call(*endpoint, "run_code", {{"code", "x"}, {"session_id", "victim"}});
  EXPECT_FALSE(after["structuredContent"]["state_lost"]) << "reported once, not forever";
  EXPECT_FALSE(after["structuredContent"].contains("warnings"));
}

TEST_F(McpServerTest, FileToolOnDeadSandboxSaysLostThenRunReportsIt) {
  initialize(*endpoint);
  ASSERT_FALSE(call(*endpoint, "run_code", {{"code", "1"}, {"session_id", "s"}})["isError"]);
  backend.sandboxes_alive->store(false);
  backend.sandboxes_alive = std::make_shared<std::atomic<bool>>(true);
  auto listed = call(*endpoint, "list_files", {{"session_id", "s"}});
  EXPECT_TRUE(listed["isError"]);
  EXPECT_NE(listed["content"][0]["text"].get<std::string>().find("was lost"), std::string::npos)
      << listed.dump();
  auto next = call(*endpoint, "run_code", {{"code", "1"}, {"session_id", "s"}});
  EXPECT_TRUE(next["structuredContent"]["state_lost"]) << next.dump();
}

TEST_F(McpServerTest, CleanupForgetsALostSandbox) {
  initialize(*endpoint);
  ASSERT_FALSE(call(*endpoint, "run_code", {{"code", "1"}, {"session_id", "s"}})["isError"]);
  backend.sandboxes_alive->store(false);
  backend.sandboxes_alive = std::make_shared<std::atomic<bool>>(true);
  (void)call(*endpoint, "list_files", {{"session_id", "s"}});  // notices and forgets it
  (void)call(*endpoint, "cleanup_session", {{"session_id", "s"}});
  auto next = call(*endpoint, "run_code", {{"code", "1"}, {"session_id", "s"}});
  EXPECT_FALSE(next["structuredContent"]["state_lost"]) << "an explicit cleanup is not a loss";
}
