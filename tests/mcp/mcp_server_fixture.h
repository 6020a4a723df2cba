// The fixture shared by the McpServer tests (mcp_server_*_test.cc): an McpServer with the builtin
// tools over in-memory sandboxes (FakeBackend), one endpoint opened for "owner-a", and helpers to
// send requests and tool calls through an endpoint.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fake_backend.h"
#include "mcp/mcp_server.h"
#include "tools/builtin_tools.h"

namespace mcp_test {

using jsonrpc::json;

// A request's reply and the notifications sent for it.
struct RecordedRequest {
  json reply;
  std::vector<json> notifications;
};

// Sends `method` with `params` through `ep` with a RequestContext that records what it notifies.
inline RecordedRequest requestRecording(jsonrpc::Endpoint& ep, const std::string& method,
                                        const json& params) {
  RecordedRequest out;
  std::mutex mutex;
  jsonrpc::RequestContext ctx;
  ctx.notify = [&](const json& notification) {
    std::lock_guard lock(mutex);
    out.notifications.push_back(notification);
  };
  out.reply =
      ep.handle({{"jsonrpc", "2.0"}, {"id", 99}, {"method", method}, {"params", params}}, ctx)
          .value_or(json());
  return out;
}

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
  // A new sandbox session of `ep`'s (run_code without session_id, plus `arguments`): its id.
  std::string newSession(jsonrpc::Endpoint& ep, json arguments = json::object()) {
    arguments["code"] = "1";
    const auto result = call(ep, "run_code", std::move(arguments));
    EXPECT_FALSE(result.value("isError", true)) << result.dump();
    return result["structuredContent"].value("session_id", "");
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

}  // namespace mcp_test
