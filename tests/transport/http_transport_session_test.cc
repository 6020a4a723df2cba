// The HTTP transport's sessions and their guards over 127.0.0.1: initialize opens a session with a
// random id, unknown or missing ids, Origin, Host and bearer checks, DELETE, idle expiry, stop(),
// and the refusal of a public bind without a token.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "http_test_support.h"
#include "transport/http_transport.h"

namespace {

using http_test::Call;
using http_test::initializeRequest;
using http_test::Reply;
using http_test::request;
using transport_test::FakeFactory;
using transport_test::json;
using namespace std::chrono_literals;

using Http = http_test::HttpFixture;

TEST_F(Http, InitializeOpensSessionWithRandomId) {
  startServer();
  const Reply reply = post(initializeRequest());
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.header("content-type"), "application/json");
  const std::string session = reply.header("mcp-session-id");
  ASSERT_EQ(session.size(), 32u);
  EXPECT_EQ(session.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(reply.bodyJson()["result"]["protocolVersion"], "2025-11-25");
  EXPECT_EQ(factory_->owners(), std::vector<std::string>{session});
  EXPECT_EQ(server_->sessionCount(), 1u);

  const Reply ping =
      post(request(2, "ping"), {"Mcp-Session-Id: " + session, "MCP-Protocol-Version: 2025-11-25"});
  EXPECT_EQ(ping.status, 200);
  EXPECT_EQ(ping.bodyJson()["id"], 2);
  EXPECT_TRUE(ping.header("mcp-session-id").empty());
  const Reply second = post(initializeRequest());
  EXPECT_NE(second.header("mcp-session-id"), session);  // every initialize: a new session
}

// A fleet's front routes each request by the replica named at the end of its session id, so it
// keeps no table a client could churn (deploy/haproxy.cfg).
TEST_F(Http, SessionIdsEndWithTheRouteTagAfterTheirRandomPart) {
  transport::HttpTransportOptions options;
  options.session_route_tag = "replica-a.prod";
  startServer(options);
  const std::string session = openSession();
  const std::string suffix = "~replica-a.prod";
  ASSERT_EQ(session.size(), 32 + suffix.size()) << session;
  EXPECT_EQ(session.substr(32), suffix);
  EXPECT_EQ(session.substr(0, 32).find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(factory_->owners(), std::vector<std::string>{session});
  EXPECT_EQ(post(request(2, "ping"), {"Mcp-Session-Id: " + session}).status, 200);
  EXPECT_NE(openSession().substr(0, 32), session.substr(0, 32));
}

TEST_F(Http, FailedInitializeOpensNoSession) {
  startServer();
  const Reply reply = post(initializeRequest(true));
  EXPECT_EQ(reply.status, 200);
  EXPECT_TRUE(reply.header("mcp-session-id").empty());
  EXPECT_EQ(reply.bodyJson()["error"]["code"], -32602);
  EXPECT_EQ(server_->sessionCount(), 0u);
  EXPECT_EQ(factory_->last()->closeCount(), 1);
}

TEST_F(Http, MissingSessionHeaderIs400) {
  startServer();
  const Reply reply = post(request(2, "ping"));
  EXPECT_EQ(reply.status, 400);
  const std::string message = reply.bodyJson()["error"]["message"];
  EXPECT_NE(message.find("Mcp-Session-Id"), std::string::npos) << message;
}

TEST_F(Http, UnknownSessionIs404) {
  startServer();
  const Reply reply =
      post(request(2, "ping"), {"Mcp-Session-Id: 0123456789abcdef0123456789abcdef"});
  EXPECT_EQ(reply.status, 404);
  EXPECT_TRUE(reply.bodyJson().contains("error"));
}

TEST_F(Http, OriginIsChecked) {
  startServer();
  const Reply evil = post(initializeRequest(), {"Origin: http://evil.example"});
  EXPECT_EQ(evil.status, 403);
  EXPECT_EQ(server_->sessionCount(), 0u);
  const Reply local = post(initializeRequest(), {"Origin: http://localhost:6274"});
  EXPECT_EQ(local.status, 200);
}

TEST_F(Http, DnsRebindingHostIsRefused) {
  startServer();
  const Reply reply = post(initializeRequest(), {"Host: attacker.example:8080"});
  EXPECT_EQ(reply.status, 403);
  EXPECT_EQ(server_->sessionCount(), 0u);
}

TEST_F(Http, BearerTokenIsRequiredWhenConfigured) {
  transport::HttpTransportOptions options;
  options.token = "t0ken-abc";
  startServer(options);
  const Reply missing = post(initializeRequest());
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.header("www-authenticate"), "Bearer");
  const Reply wrong = post(initializeRequest(), {"Authorization: Bearer t0ken-abd"});
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(server_->sessionCount(), 0u);
  const Reply right = post(initializeRequest(), {"Authorization: Bearer t0ken-abc"});
  EXPECT_EQ(right.status, 200);
  EXPECT_EQ(server_->sessionCount(), 1u);
}

// The tokens file: each token is a principal. A session answers only the principal that opened
// it (to another it does not exist: 404, and DELETE cannot end it), and each principal's
// stateless (2026-07-28) requests go to an endpoint of its own.
TEST_F(Http, EachTokenIsAPrincipalThatAloneReachesItsSessions) {
  transport::HttpTransportOptions options;
  options.principal_tokens = {{"alice", std::string(32, 'a')}, {"bob", std::string(32, 'b')}};
  options.token = std::string(32, 'd');
  startServer(options);
  const std::string alice = "Authorization: Bearer " + std::string(32, 'a');
  const std::string bob = "Authorization: Bearer " + std::string(32, 'b');
  EXPECT_EQ(post(initializeRequest()).status, 401);
  EXPECT_EQ(post(initializeRequest(), {"Authorization: Bearer " + std::string(32, 'c')}).status,
            401);

  const Reply opened = post(initializeRequest(), {alice});
  ASSERT_EQ(opened.status, 200) << opened.body;
  const std::string session = opened.header("mcp-session-id");
  EXPECT_EQ(post(request(2, "ping"), {bob, "Mcp-Session-Id: " + session}).status, 404);
  Call del;
  del.method = "DELETE";
  del.headers = {bob, "Mcp-Session-Id: " + session};
  EXPECT_EQ(call(del).status, 404);
  EXPECT_EQ(server_->sessionCount(), 1u);
  EXPECT_EQ(post(request(3, "ping"), {alice, "Mcp-Session-Id: " + session}).status, 200);

  // A method the fake endpoint answers: its -32601 would be a 404 (modernAnswerStatus).
  const json modern = {{"jsonrpc", "2.0"},
                       {"id", 4},
                       {"method", "echo"},
                       {"params",
                        {{"_meta",
                          {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                           {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}};
  const std::vector<std::string> modern_headers = {"MCP-Protocol-Version: 2026-07-28",
                                                   "Mcp-Method: echo"};
  for (const auto& who : {alice, bob, alice, "Authorization: Bearer " + std::string(32, 'd')}) {
    auto headers = modern_headers;
    headers.push_back(who);
    EXPECT_EQ(post(modern, headers).status, 200);
  }
  const auto owners = factory_->owners();
  const auto principals = factory_->principals();
  ASSERT_EQ(owners.size(), 4u) << "one session, then one endpoint per principal";
  EXPECT_EQ(server_->sessionCount(), 1u) << "a principal's endpoint is no MCP session";
  EXPECT_EQ(principals[0], "alice");
  EXPECT_EQ(owners[1], "principal:alice");
  EXPECT_EQ(owners[2], "principal:bob");
  EXPECT_EQ(principals[2], "bob");
  EXPECT_EQ(owners[3], "principal:default");
}

TEST_F(Http, DeleteEndsSession) {
  startServer();
  const std::string session = openSession();
  auto endpoint = factory_->last();
  Call del;
  del.method = "DELETE";
  del.headers = {"Mcp-Session-Id: " + session};
  EXPECT_EQ(call(del).status, 204);
  EXPECT_EQ(endpoint->closeCount(), 1);
  EXPECT_EQ(server_->sessionCount(), 0u);
  EXPECT_EQ(call(del).status, 404);
  EXPECT_EQ(post(request(2, "ping"), {"Mcp-Session-Id: " + session}).status, 404);
  Call no_id;
  no_id.method = "DELETE";
  EXPECT_EQ(call(no_id).status, 400);
}

TEST_F(Http, IdleSessionsExpire) {
  transport::HttpTransportOptions options;
  options.session_idle_timeout = 200ms;
  startServer(options);
  const std::string session = openSession();
  auto endpoint = factory_->last();
  EXPECT_TRUE(endpoint->waitClosed(3s));
  EXPECT_EQ(server_->sessionCount(), 0u);
  EXPECT_EQ(post(request(2, "ping"), {"Mcp-Session-Id: " + session}).status, 404);
}

TEST_F(Http, StopClosesEndpoints) {
  startServer();
  openSession();
  openSession();
  server_->stop();
  EXPECT_EQ(factory_->endpoint(0)->closeCount(), 1);
  EXPECT_EQ(factory_->endpoint(1)->closeCount(), 1);
  server_->stop();  // idempotent
}

TEST_F(Http, StopAnswersRunningRequestsThenCloses) {
  startServer();
  const std::string session = openSession();
  auto slow = std::async(std::launch::async,
                         [&] { return post(request(9, "slow"), {"Mcp-Session-Id: " + session}); });
  std::this_thread::sleep_for(100ms);  // the request is running
  const auto started = std::chrono::steady_clock::now();
  server_->stop();  // closes the endpoint, which cancels the request
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  const Reply done = slow.get();
  EXPECT_EQ(done.status, 200);
  EXPECT_EQ(done.bodyJson()["id"], 9);
  EXPECT_EQ(factory_->last()->closeCount(), 1);
  EXPECT_THROW(post(request(10, "ping"), {"Mcp-Session-Id: " + session}), std::runtime_error);
}

TEST(Unit, HttpRefusesNonLoopbackBindWithoutToken) {
  transport::HttpTransportOptions options;
  options.address = "0.0.0.0";
  options.port = 0;
  transport::HttpTransport server(std::make_shared<FakeFactory>(), options);
  try {
    server.start();
    FAIL() << "start() must refuse a public bind without a token";
  } catch (const std::invalid_argument& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("--token-file"), std::string::npos) << text;
    EXPECT_NE(text.find("SANDBOX_MCP_TOKEN"), std::string::npos) << text;
  }
}

TEST(Unit, HttpRejectsUnparsableAddress) {
  transport::HttpTransportOptions options;
  options.address = "not an address";
  transport::HttpTransport server(std::make_shared<FakeFactory>(), options);
  EXPECT_THROW(server.start(), std::invalid_argument);
}

}  // namespace
