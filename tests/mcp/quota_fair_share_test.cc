// Fair share: one client (one MCP session) at its session or execution quota gets a "busy:" error
// naming the limit, while another client keeps creating sessions and running code.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "fake_backend.h"
#include "mcp/mcp_server.h"
#include "tools/builtin_tools.h"

namespace {

using jsonrpc::json;

class FairShare : public ::testing::Test {
 protected:
  void start() {
    cfg.pool.size = 0;
    tools::registerBuiltinTools(registry, cfg);
    sessions = std::make_unique<server::SessionRegistry>(
        cfg, std::make_unique<server::SessionFactory>(cfg, backend));
    server = std::make_unique<mcp::McpServer>(cfg, *sessions, registry);
    greedy = server->open("client-greedy");
    polite = server->open("client-polite");
    initialize(*greedy);
    initialize(*polite);
  }
  void TearDown() override {
    if (greedy) greedy->close();
    if (polite) polite->close();
  }
  json request(jsonrpc::Endpoint& ep, const std::string& method, json params) {
    jsonrpc::RequestContext ctx;
    auto reply = ep.handle(
        {{"jsonrpc", "2.0"}, {"id", ++next_id}, {"method", method}, {"params", params}}, ctx);
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
  static std::string text(const json& result) {
    return result["content"][0]["text"].get<std::string>();
  }

  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  tools::ToolRegistry registry;
  std::unique_ptr<server::SessionRegistry> sessions;
  std::unique_ptr<mcp::McpServer> server;
  std::shared_ptr<jsonrpc::Endpoint> greedy;
  std::shared_ptr<jsonrpc::Endpoint> polite;
  std::atomic<int> next_id{0};
};

TEST_F(FairShare, DefaultsLeaveRoomForOthers) {
  const config::ServerConfig defaults;
  EXPECT_EQ(defaults.sessions.max_sessions_per_client, 16);
  EXPECT_EQ(defaults.execution.max_concurrent_per_client, 16);
  EXPECT_LT(defaults.sessions.max_sessions_per_client, defaults.sessions.max_sessions);
  EXPECT_LT(defaults.execution.max_concurrent_per_client, defaults.execution.max_concurrent);
  const auto round_trip = config::fromJson(config::toJson(defaults));
  EXPECT_EQ(round_trip.sessions.max_sessions_per_client, 16);
  EXPECT_THROW((void)config::fromJson({{"sessions", {{"max_sessions_per_client", 0}}}}),
               config::ConfigError);
}

TEST_F(FairShare, OneClientAtItsSessionQuotaDoesNotLockOutAnother) {
  cfg.sessions.max_sessions = 5;
  cfg.sessions.max_sessions_per_client = 3;
  start();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(call(*greedy, "run_code", {{"code", "x"}})["isError"]);
  const auto refused = call(*greedy, "run_code", {{"code", "x"}});
  ASSERT_TRUE(refused["isError"]);
  EXPECT_EQ(text(refused).rfind("busy:", 0), 0U) << text(refused);
  EXPECT_NE(text(refused).find("sessions.max_sessions_per_client"), std::string::npos);
  // The greedy client can still use the sessions it has.
  const auto mine = call(*greedy, "list_sessions", json::object());
  const auto id = mine["structuredContent"]["sessions"][0]["session_id"].get<std::string>();
  EXPECT_FALSE(call(*greedy, "run_code", {{"code", "x"}, {"session_id", id}})["isError"]);

  for (int i = 0; i < 2; ++i) {
    const auto ok = call(*polite, "run_code", {{"code", "x"}});
    EXPECT_FALSE(ok["isError"]) << ok.dump();
  }
  // The global limit still holds.
  const auto full = call(*polite, "run_code", {{"code", "x"}});
  EXPECT_NE(text(full).find("sessions.max_sessions)"), std::string::npos) << text(full);
  // A freed session gives the quota back.
  EXPECT_FALSE(call(*greedy, "cleanup_session", {{"session_id", id}})["isError"]);
  EXPECT_FALSE(call(*greedy, "run_code", {{"code", "x"}})["isError"]);
}

TEST_F(FairShare, OneClientAtItsExecutionQuotaDoesNotBlockAnother) {
  cfg.execution.max_concurrent = 4;
  cfg.execution.max_concurrent_per_client = 2;
  start();
  std::vector<std::future<std::optional<json>>> running;
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    ids.push_back("long-" + std::to_string(i));
    running.push_back(std::async(std::launch::async, [this, id = ids.back()] {
      jsonrpc::RequestContext ctx;
      return greedy->handle(
          {{"jsonrpc", "2.0"},
           {"id", id},
           {"method", "tools/call"},
           {"params", {{"name", "run_code"}, {"arguments", {{"code", "wait-for-cancel"}}}}}},
          ctx);
    }));
  }
  for (int i = 0; i < 1000 && sessions->executionSlots().inUse() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(sessions->executionSlots().inUse(), 2U);
  const auto refused = call(*greedy, "run_code", {{"code", "1"}});
  ASSERT_TRUE(refused["isError"]);
  EXPECT_EQ(text(refused).rfind("busy:", 0), 0U) << text(refused);
  EXPECT_NE(text(refused).find("execution.max_concurrent_per_client"), std::string::npos);

  const auto other = call(*polite, "run_code", {{"code", "1"}});
  EXPECT_FALSE(other["isError"]) << other.dump();
  EXPECT_EQ(other["structuredContent"]["stdout"], "ran: 1");

  for (const auto& id : ids) {
    jsonrpc::RequestContext ctx;
    greedy->handle({{"jsonrpc", "2.0"},
                    {"method", "notifications/cancelled"},
                    {"params", {{"requestId", id}}}},
                   ctx);
  }
  for (auto& call_result : running) {
    EXPECT_EQ((*call_result.get())["result"]["structuredContent"]["status"], "cancelled");
  }
  EXPECT_EQ(sessions->executionSlots().inUse(), 0U);
  EXPECT_FALSE(call(*greedy, "run_code", {{"code", "1"}})["isError"]) << "the quota came back";
}

}  // namespace
