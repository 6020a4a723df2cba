// An McpServer with more than tools (mcp/server_features.h): capabilities that declare exactly
// what it has, prompts with input-required rounds, tools that need a client capability (-32021),
// requestState integrity, and 2026-07-28 listen streams (ack first, subscriptionId, filter, end).
#include <gtest/gtest.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fake_backend.h"
#include "mcp/mcp_server.h"

namespace {

using jsonrpc::json;

json modernMeta(json capabilities = json::object()) {
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
          {"io.modelcontextprotocol/clientCapabilities", std::move(capabilities)}};
}

class McpFeaturesTest : public ::testing::Test {
 protected:
  McpFeaturesTest() {
    cfg.pool.size = 0;
    tools::Tool needs_sampling;
    needs_sampling.spec.name = "needs_sampling";
    needs_sampling.spec.input_schema = {{"type", "object"}};
    needs_sampling.spec.required_client_capabilities = {{"sampling", json::object()}};
    needs_sampling.handler = [](const json&, tools::ToolContext&) {
      tools::ToolResult result;
      result.text = "ran";
      return result;
    };
    registry.add(needs_sampling);
    tools::Tool asks;
    asks.spec.name = "asks_name";
    asks.spec.input_schema = {{"type", "object"}};
    asks.handler = [](const json&, tools::ToolContext& ctx) {
      if (ctx.inputs != nullptr && ctx.inputs->state == json{{"round", 1}} &&
          ctx.inputs->responses.contains("name")) {
        tools::ToolResult result;
        result.text =
            "hello " + ctx.inputs->responses["name"]["content"]["name"].get<std::string>();
        return result;
      }
      return tools::ToolResult::inputRequired(
          {{"name", {{"method", "elicitation/create"}, {"params", {{"message", "name?"}}}}}},
          {{"round", 1}});
    };
    registry.add(asks);
    prompts.add(
        {{"greet", "", "greets", {{"who", "", true}}},
         [](const json& arguments, const tools::ToolInputs&) {
           mcp::PromptResult result;
           result.messages = json::array(
               {{{"role", "user"},
                 {"content",
                  {{"type", "text"}, {"text", "hi " + arguments["who"].get<std::string>()}}}}});
           return result;
         }});
    features.prompts = &prompts;
    features.subscriptions = &hub;
    features.session_resources = false;
    sessions = std::make_unique<server::SessionRegistry>(
        cfg, std::make_unique<server::SessionFactory>(cfg, backend));
    server = std::make_unique<mcp::McpServer>(cfg, *sessions, registry, nullptr,
                                              std::vector<config::Principal>{}, features);
    endpoint = server->open("principal");
  }

  json request(const std::string& method, json params) {
    jsonrpc::RequestContext ctx;
    return endpoint
        ->handle({{"jsonrpc", "2.0"}, {"id", ++next_id}, {"method", method}, {"params", params}},
                 ctx)
        .value_or(json());
  }

  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  tools::ToolRegistry registry;
  mcp::PromptCatalog prompts;
  mcp::Subscriptions hub{mcp::Announceable{true, false, false, false}};
  mcp::ServerFeatures features;
  std::unique_ptr<server::SessionRegistry> sessions;
  std::unique_ptr<mcp::McpServer> server;
  std::shared_ptr<jsonrpc::Endpoint> endpoint;
  int next_id = 0;
};

TEST_F(McpFeaturesTest, CapabilitiesDeclareWhatTheServerHas) {
  const json caps = request("server/discover", {{"_meta", modernMeta()}})["result"]["capabilities"];
  EXPECT_TRUE(caps.contains("prompts")) << caps;
  EXPECT_FALSE(caps.contains("completions")) << caps;
  EXPECT_EQ(caps["tools"]["listChanged"], true);
  const json listed = request("prompts/list", {{"_meta", modernMeta()}})["result"];
  EXPECT_EQ(listed["prompts"][0]["name"], "greet");
  EXPECT_EQ(listed["cacheScope"], "public");
  const json got = request(
      "prompts/get", {{"_meta", modernMeta()}, {"name", "greet"}, {"arguments", {{"who", "Ada"}}}});
  EXPECT_EQ(got["result"]["messages"][0]["content"]["text"], "hi Ada") << got;
  EXPECT_EQ(got["result"]["resultType"], "complete");
  EXPECT_EQ(request("prompts/get", {{"_meta", modernMeta()}, {"name", "greet"}})["error"]["code"],
            -32602);
  EXPECT_EQ(request("completion/complete", {{"_meta", modernMeta()}})["error"]["code"], -32601);
}

TEST_F(McpFeaturesTest, AToolThatNeedsACapabilityTheRequestLacksIsRefused) {
  const json refused = request("tools/call", {{"_meta", modernMeta()}, {"name", "needs_sampling"}});
  EXPECT_EQ(refused["error"]["code"], -32021) << refused;
  EXPECT_EQ(refused["error"]["data"]["requiredCapabilities"], (json{{"sampling", json::object()}}));
  const json ran = request("tools/call", {{"_meta", modernMeta({{"sampling", json::object()}})},
                                          {"name", "needs_sampling"}});
  EXPECT_EQ(ran["result"]["content"][0]["text"], "ran") << ran;
}

TEST_F(McpFeaturesTest, InputRequiredRoundsCarryASealedState) {
  const json caps{{"elicitation", json::object()}};
  const json first = request("tools/call", {{"_meta", modernMeta(caps)}, {"name", "asks_name"}});
  ASSERT_EQ(first["result"]["resultType"], "input_required") << first;
  const std::string state = first["result"]["requestState"];
  EXPECT_EQ(state.find("round"), std::string::npos) << "the state is not readable as sent";
  const json answer{{"name", {{"action", "accept"}, {"content", {{"name", "Ada"}}}}}};
  const json second = request("tools/call", {{"_meta", modernMeta(caps)},
                                             {"name", "asks_name"},
                                             {"inputResponses", answer},
                                             {"requestState", state}});
  EXPECT_EQ(second["result"]["content"][0]["text"], "hello Ada") << second;
  const json tampered = request("tools/call", {{"_meta", modernMeta(caps)},
                                               {"name", "asks_name"},
                                               {"inputResponses", answer},
                                               {"requestState", state + "x"}});
  EXPECT_EQ(tampered["error"]["code"], -32602) << tampered;
  // Without the elicitation capability the request cannot be asked for: -32021.
  EXPECT_EQ(
      request("tools/call", {{"_meta", modernMeta()}, {"name", "asks_name"}})["error"]["code"],
      -32021);
}

TEST_F(McpFeaturesTest, ListenAcksFirstTagsEveryNotificationAndEndsGracefully) {
  std::mutex mutex;
  std::vector<json> sent;
  std::optional<json> answer;
  const json message{
      {"jsonrpc", "2.0"},
      {"id", 41},
      {"method", "subscriptions/listen"},
      {"params",
       {{"_meta", modernMeta()},
        {"notifications", {{"toolsListChanged", true}, {"promptsListChanged", true}}}}}};
  jsonrpc::RequestContext ctx;
  ctx.cancel = endpoint->admit(message);
  ctx.notify = [&](const json& n) {
    std::lock_guard lock(mutex);
    sent.push_back(n);
  };
  ctx.answer_later = [&](std::optional<json> response) {
    std::lock_guard lock(mutex);
    answer = std::move(response);
  };
  EXPECT_FALSE(endpoint->handle(message, ctx));
  hub.toolsChanged();
  hub.promptsChanged();  // not offered: filtered out
  endpoint->close();
  std::lock_guard lock(mutex);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0]["method"], "notifications/subscriptions/acknowledged");
  EXPECT_EQ(sent[0]["params"]["notifications"], (json{{"toolsListChanged", true}}));
  EXPECT_EQ(sent[1]["method"], "notifications/tools/list_changed");
  for (const json& n : sent) {
    EXPECT_EQ(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41);
  }
  ASSERT_TRUE(answer);
  EXPECT_EQ((*answer)["result"]["resultType"], "complete") << *answer;
  EXPECT_EQ(hub.size(), 0u);
}

}  // namespace
