// MCP 2026-07-28 beside 2025-11-25 on one endpoint (mcp/protocol_era.h): server/discover, requests
// that carry their version and capabilities in _meta and need no initialize, the revision's errors
// (-32602 for a malformed envelope, -32022 for another version, -32601 for removed methods),
// resultType and caching hints on results, and log messages only for requests that ask.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jsonrpc/protocol_era.h"
#include "mcp_server_fixture.h"

namespace {

using jsonrpc::json;
using mcp_test::McpServerTest;

json modernMeta(const json& extra = json::object()) {
  json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
               {"io.modelcontextprotocol/clientCapabilities", json::object()},
               {"io.modelcontextprotocol/clientInfo", {{"name", "t"}, {"version", "2"}}}};
  meta.update(extra);
  return meta;
}

mcp_test::RecordedRequest exchange(jsonrpc::Endpoint& ep, const std::string& method,
                                   const json& params) {
  return mcp_test::requestRecording(ep, method, params);
}

TEST_F(McpServerTest, DiscoverOffersTheModernRevisionWithCachingHints) {
  const json reply = exchange(*endpoint, "server/discover", {{"_meta", modernMeta()}}).reply;
  ASSERT_TRUE(reply.contains("result")) << reply;
  const json& result = reply["result"];
  EXPECT_EQ(result["resultType"], "complete");
  EXPECT_EQ(result["supportedVersions"], json::array({"2026-07-28"}));
  EXPECT_TRUE(result["capabilities"].contains("tools")) << result;
  EXPECT_FALSE(result["capabilities"].contains("tasks")) << "2025 tasks are not the extension";
  EXPECT_TRUE(result["capabilities"]["extensions"].contains("io.modelcontextprotocol/tasks"));
  EXPECT_EQ(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "sandbox-mcp");
  EXPECT_FALSE(result.contains("serverInfo")) << "2026-07-28 moved it into _meta";
  EXPECT_GE(result["ttlMs"].get<int>(), 0);
  EXPECT_EQ(result["cacheScope"], "public");
  EXPECT_FALSE(result["instructions"].get<std::string>().empty());
}

TEST_F(McpServerTest, ModernRequestsNeedNoInitialize) {
  const json list = exchange(*endpoint, "tools/list", {{"_meta", modernMeta()}}).reply;
  ASSERT_TRUE(list.contains("result")) << list;
  EXPECT_EQ(list["result"]["resultType"], "complete");
  EXPECT_EQ(list["result"]["cacheScope"], "public");
  EXPECT_TRUE(list["result"]["ttlMs"].is_number_integer());
  EXPECT_FALSE(list["result"]["tools"].empty());

  const json call =
      exchange(
          *endpoint, "tools/call",
          {{"_meta", modernMeta()}, {"name", "run_code"}, {"arguments", {{"code", "print('hi')"}}}})
          .reply;
  ASSERT_TRUE(call.contains("result")) << call;
  EXPECT_EQ(call["result"]["resultType"], "complete");
  EXPECT_EQ(call["result"]["isError"], false) << call;

  const json resources = exchange(*endpoint, "resources/list", {{"_meta", modernMeta()}}).reply;
  EXPECT_EQ(resources["result"]["cacheScope"], "private") << resources;
  EXPECT_EQ(resources["result"]["ttlMs"], 0);
  const json templates =
      exchange(*endpoint, "resources/templates/list", {{"_meta", modernMeta()}}).reply;
  EXPECT_EQ(templates["result"]["resultType"], "complete") << templates;

  // A 2025 request on the same endpoint still needs initialize first.
  EXPECT_TRUE(request(*endpoint, "tools/list").contains("error"));
}

TEST_F(McpServerTest, AMalformedEnvelopeIsInvalidParams) {
  struct Case {
    const char* what;
    std::string method;
    json params;
  };
  const Case cases[] = {
      {"discover without _meta", "server/discover", json::object()},
      {"discover with _meta but no version",
       "server/discover",
       {{"_meta", {{"io.modelcontextprotocol/clientCapabilities", json::object()}}}}},
      {"no client capabilities",
       "tools/list",
       {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}}},
      {"capabilities not an object",
       "tools/list",
       {{"_meta", modernMeta({{"io.modelcontextprotocol/clientCapabilities", "all"}})}}},
      {"version not a string",
       "tools/list",
       {{"_meta", modernMeta({{"io.modelcontextprotocol/protocolVersion", 2026}})}}},
      {"unknown log level",
       "tools/list",
       {{"_meta", modernMeta({{"io.modelcontextprotocol/logLevel", "loud"}})}}},
  };
  for (const auto& c : cases) {
    const json reply = exchange(*endpoint, c.method, c.params).reply;
    EXPECT_EQ(reply["error"]["code"], -32602) << c.what << ": " << reply;
    EXPECT_EQ(reply["id"], 99) << c.what;
  }
}

TEST_F(McpServerTest, AnotherVersionIsRefusedWithTheSupportedOnes) {
  const json reply =
      exchange(*endpoint, "tools/list",
               {{"_meta", modernMeta({{"io.modelcontextprotocol/protocolVersion", "v999.0.0"}})}})
          .reply;
  EXPECT_EQ(reply["error"]["code"], -32022) << reply;
  EXPECT_EQ(reply["error"]["data"]["supported"], json::array({"2026-07-28"}));
  EXPECT_EQ(reply["error"]["data"]["requested"], "v999.0.0");
}

TEST_F(McpServerTest, MethodsRemovedIn2026AreNotFound) {
  for (const char* method : {"initialize", "ping", "logging/setLevel", "tasks/result", "tasks/list",
                             "resources/subscribe", "no/such/method"}) {
    const json reply = exchange(*endpoint, method, {{"_meta", modernMeta()}}).reply;
    EXPECT_EQ(reply["error"]["code"], -32601) << method << ": " << reply;
  }
  // None of them initialized the endpoint for 2025 requests.
  EXPECT_TRUE(request(*endpoint, "tools/list").contains("error"));
}

TEST_F(McpServerTest, LogMessagesGoOnlyToRequestsThatAskForThem) {
  const json failing = {{"name", "run_code"}, {"arguments", {{"code", 5}}}};  // not a string
  json quiet_params = failing;
  quiet_params["_meta"] = modernMeta();
  const auto quiet = exchange(*endpoint, "tools/call", quiet_params);
  EXPECT_EQ(quiet.reply["result"]["isError"], true) << quiet.reply;
  EXPECT_TRUE(quiet.notifications.empty()) << quiet.notifications.front();

  json asking = failing;
  asking["_meta"] = modernMeta({{"io.modelcontextprotocol/logLevel", "warning"}});
  const auto logged = exchange(*endpoint, "tools/call", asking);
  ASSERT_EQ(logged.notifications.size(), 1U);
  EXPECT_EQ(logged.notifications[0]["method"], "notifications/message");
  EXPECT_EQ(logged.notifications[0]["params"]["level"], "warning");

  // The level is the request's own: a 2025 logging/setLevel on the endpoint does not apply.
  initialize(*endpoint);
  request(*endpoint, "logging/setLevel", {{"level", "debug"}});
  EXPECT_TRUE(exchange(*endpoint, "tools/call", quiet_params).notifications.empty());
}

TEST_F(McpServerTest, AMissingResourceIsInvalidParamsIn2026AndNotFoundIn2025) {
  const std::string uri = "sandbox://no-such-session/tmp/x.txt";
  const json modern =
      exchange(*endpoint, "resources/read", {{"_meta", modernMeta()}, {"uri", uri}}).reply;
  EXPECT_EQ(modern["error"]["code"], -32602) << modern;
  EXPECT_EQ(modern["error"]["data"]["uri"], uri);
  initialize(*endpoint);
  const json legacy = request(*endpoint, "resources/read", {{"uri", uri}});
  EXPECT_EQ(legacy["error"]["code"], -32002) << legacy;
}

TEST_F(McpServerTest, ABatchHoldingAModernRequestIsRefused) {
  jsonrpc::RequestContext ctx;
  const json batch = json::array({{{"jsonrpc", "2.0"},
                                   {"id", 1},
                                   {"method", "tools/list"},
                                   {"params", {{"_meta", modernMeta()}}}}});
  const auto reply = endpoint->handle(batch, ctx);
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32600) << *reply;
}

TEST(ProtocolEra, ARequestIsModernWhenItsMetaNamesAVersion) {
  EXPECT_TRUE(mcp::era::isModern({{"_meta", modernMeta()}}));
  EXPECT_TRUE(mcp::era::isModern(
      {{"_meta", {{"io.modelcontextprotocol/protocolVersion", nullptr}}}}));  // refused later
  EXPECT_FALSE(mcp::era::isModern({{"_meta", {{"progressToken", 1}}}}));
  EXPECT_FALSE(mcp::era::isModern(json::object()));
  EXPECT_FALSE(mcp::era::isModern(json::array()));
  EXPECT_EQ(mcp::era::requestLogLevel({{"_meta", modernMeta()}}), -1);
  EXPECT_EQ(mcp::era::requestLogLevel(
                {{"_meta", modernMeta({{"io.modelcontextprotocol/logLevel", "error"}})}}),
            4);
}

// The tasks extension: the client declares it on each request; the server decides. A call that
// ends within a moment answers as usual; a longer one answers with a task (resultType "task"),
// polled with tasks/get and cancelled with tasks/cancel.
json withTasks() {
  return modernMeta({{"io.modelcontextprotocol/clientCapabilities",
                      {{"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}}}});
}

TEST_F(McpServerTest, AQuickCallOfATasksClientAnswersInline) {
  cfg.tasks.inline_wait_ms = 60'000;  // quick even on a loaded machine
  const json reply =
      exchange(*endpoint, "tools/call",
               {{"_meta", withTasks()}, {"name", "run_code"}, {"arguments", {{"code", "1"}}}})
          .reply;
  ASSERT_TRUE(reply.contains("result")) << reply;
  ASSERT_EQ(reply["result"]["resultType"], "complete") << reply;
  EXPECT_EQ(reply["result"]["structuredContent"]["stdout"], "ran: 1");
  EXPECT_FALSE(reply["result"].contains("_meta") &&
               reply["result"]["_meta"].contains("io.modelcontextprotocol/related-task"));
}

TEST_F(McpServerTest, ALongCallOfATasksClientBecomesATaskItCanPollAndCancel) {
  initialize(*endpoint);  // a 2025 call makes the session; the endpoint owns it in both eras
  const std::string sid = newSession(*endpoint);
  const json created = exchange(*endpoint, "tools/call",
                                {{"_meta", withTasks()},
                                 {"name", "run_code"},
                                 {"arguments", {{"code", "wait-for-cancel"}, {"session_id", sid}}}})
                           .reply;
  ASSERT_TRUE(created.contains("result")) << created;
  const json& task = created["result"];
  EXPECT_EQ(task["resultType"], "task");
  EXPECT_EQ(task["status"], "working");
  EXPECT_GE(task["ttlMs"].get<std::int64_t>(), 1);
  EXPECT_GE(task["pollIntervalMs"].get<std::int64_t>(), 1);
  EXPECT_TRUE(task["createdAt"].is_string());
  const json id = task["taskId"];

  const json polled =
      exchange(*endpoint, "tasks/get", {{"_meta", withTasks()}, {"taskId", id}}).reply;
  EXPECT_EQ(polled["result"]["resultType"], "complete") << polled;
  EXPECT_EQ(polled["result"]["status"], "working");
  EXPECT_EQ(exchange(*endpoint, "tasks/update",
                     {{"_meta", withTasks()}, {"taskId", id}, {"inputResponses", json::object()}})
                .reply["result"],
            json({{"resultType", "complete"}}));
  const json cancelled =
      exchange(*endpoint, "tasks/cancel", {{"_meta", withTasks()}, {"taskId", id}}).reply;
  EXPECT_EQ(cancelled["result"], json({{"resultType", "complete"}})) << cancelled;
  EXPECT_EQ(exchange(*endpoint, "tasks/get", {{"_meta", withTasks()}, {"taskId", id}})
                .reply["result"]["status"],
            "cancelled");
  // Cancelling a finished task is acknowledged too; an unknown one is -32602.
  EXPECT_EQ(exchange(*endpoint, "tasks/cancel", {{"_meta", withTasks()}, {"taskId", id}})
                .reply["result"]["resultType"],
            "complete");
  const json unknown =
      exchange(*endpoint, "tasks/get", {{"_meta", withTasks()}, {"taskId", "nope"}}).reply;
  EXPECT_EQ(unknown["error"]["code"], jsonrpc::kInvalidParams) << unknown;
}

TEST_F(McpServerTest, WithoutTheExtensionNoTaskAndNoTasksMethods) {
  const json denied =
      exchange(*endpoint, "tasks/get", {{"_meta", modernMeta()}, {"taskId", "x"}}).reply;
  EXPECT_EQ(denied["error"]["code"], -32021) << denied;
  EXPECT_TRUE(denied["error"]["data"]["requiredCapabilities"]["extensions"].contains(
      "io.modelcontextprotocol/tasks"))
      << denied;
  // A 2025 client has no tasks/update.
  initialize(*endpoint);
  EXPECT_EQ(request(*endpoint, "tasks/update", {{"taskId", "x"}})["error"]["code"],
            jsonrpc::kMethodNotFound);
}

}  // namespace
