// The warm pool seen from the MCP layer: a run_code without session options claims the pooled
// sandbox; one with its own environment starts cold. (tests/server/warm_pool_test.cc: the pool.)
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "fake_backend.h"
#include "mcp/mcp_server.h"
#include "server/session_registry.h"
#include "tools/builtin_tools.h"

namespace {

using namespace std::chrono_literals;
using jsonrpc::json;

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return condition();
}

TEST(WarmPool, SessionsOfTheDefaultProfileStartWarm) {
  config::ServerConfig cfg;
  cfg.pool.size = 1;
  testing_support::FakeBackend backend;
  tools::ToolRegistry registry;
  tools::registerBuiltinTools(registry, cfg);
  server::SessionRegistry sessions(cfg, std::make_unique<server::SessionFactory>(cfg, backend));
  mcp::McpServer mcp(cfg, sessions, registry);
  auto endpoint = mcp.open("owner");
  int next_id = 0;
  auto call = [&](const std::string& tool, json arguments) {
    jsonrpc::RequestContext ctx;
    return endpoint
        ->handle({{"jsonrpc", "2.0"},
                  {"id", ++next_id},
                  {"method", "tools/call"},
                  {"params", {{"name", tool}, {"arguments", arguments}}}},
                 ctx)
        .value_or(json())["result"];
  };
  jsonrpc::RequestContext ctx;
  endpoint->handle({{"jsonrpc", "2.0"},
                    {"id", 0},
                    {"method", "initialize"},
                    {"params", {{"protocolVersion", "2025-11-25"}}}},
                   ctx);
  ASSERT_TRUE(eventually([&] { return sessions.factory().poolStats().ready == 1; }));

  auto warm = call("run_code", {{"code", "1"}});
  const auto warm_id = warm["structuredContent"]["session_id"].get<std::string>();
  EXPECT_TRUE(
      call("get_session_stats", {{"session_id", warm_id}})["structuredContent"]["warm_start"]);
  EXPECT_EQ(sessions.factory().poolStats().claimed, 1U);

  ASSERT_TRUE(eventually([&] { return sessions.factory().poolStats().ready == 1; }));
  auto cold = call("run_code", {{"code", "1"}, {"environment", {{"A", "1"}}}});
  const auto cold_id = cold["structuredContent"]["session_id"].get<std::string>();
  EXPECT_FALSE(
      call("get_session_stats", {{"session_id", cold_id}})["structuredContent"]["warm_start"])
      << "a session with its own environment is created cold";
  EXPECT_EQ(sessions.factory().poolStats().ready, 1U) << "the pooled sandbox is still there";

  endpoint->close();
  sessions.shutdown();
  EXPECT_EQ(backend.live, 0) << "shutdown removes the sessions and the pool";
}

}  // namespace
