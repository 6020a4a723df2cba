// McpServer's tool executions through McpEndpoint over in-memory sandboxes (FakeBackend):
// cancellation by notifications/cancelled, output streamed as progress or log messages, and the
// execution limit answering busy at once.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mcp_server_fixture.h"

namespace {

using jsonrpc::json;
using mcp_test::McpServerTest;

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

mcp_test::RecordedRequest callRecording(jsonrpc::Endpoint& ep, const json& params) {
  return mcp_test::requestRecording(ep, "tools/call", params);
}

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

}  // namespace
