// The sidecar relay's policy end to end on the host (server on a Unix socket, upstream on
// 127.0.0.1, libcurl as the sandboxed client): allowed requests relayed without hop-by-hop or proxy
// headers and audited, denied URLs, methods and tools, redirects passed back, oversized bodies.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sidecar_relay_support.h"

namespace {

using relay_test::Call;
using relay_test::SidecarRelay;

TEST_F(SidecarRelay, AllowedRequestIsRelayedWithoutHopByHopOrProxyHeaders) {
  Call call;
  call.url = origin() + "/ok/echo";
  call.method = "POST";
  call.body = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  call.headers = {"Content-Type: application/json", "Proxy-Authorization: Basic c2VjcmV0",
                  "Connection: X-Drop-Me", "X-Drop-Me: 1", "Mcp-Session-Id: abc"};
  const auto reply = perform(call);
  ASSERT_EQ(reply.code, CURLE_OK);
  ASSERT_EQ(reply.status, 200) << reply.body;
  const auto echo = reply.bodyJson();
  EXPECT_EQ(echo["method"], "POST");
  EXPECT_EQ(echo["body"], call.body);
  EXPECT_EQ(echo["headers"]["mcp-session-id"], "abc");
  EXPECT_EQ(echo["headers"]["content-type"], "application/json");
  EXPECT_EQ(echo["headers"]["host"], "127.0.0.1:" + std::to_string(upstream_.port()));
  EXPECT_FALSE(echo["headers"].contains("proxy-authorization"));
  EXPECT_FALSE(echo["headers"].contains("x-drop-me"));

  const auto lines = auditLines(1);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["decision"], "allow");
  EXPECT_EQ(lines[0]["session"], "test-session");
  EXPECT_EQ(lines[0]["method"], "POST");
  EXPECT_EQ(lines[0]["url"], origin() + "/ok/echo");
  EXPECT_EQ(lines[0]["status"], 200);
  EXPECT_EQ(lines[0]["bytes"], reply.body.size());
  EXPECT_EQ(lines[0]["rule"], "allowlist[0]");
  EXPECT_NE(lines[0]["reason"].get<std::string>().find("connected to 127.0.0.1"),
            std::string::npos);
}

TEST_F(SidecarRelay, AbsoluteFormTargetIsAccepted) {
  Call call;
  call.url = "http://ignored.invalid/x";
  call.request_target = origin() + "/ok/echo";
  const auto reply = perform(call);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.bodyJson()["target"], "/ok/echo");
}

TEST_F(SidecarRelay, UnlistedUrlIsDenied403WithTheReason) {
  Call call;
  call.url = origin() + "/secret";
  const auto reply = perform(call);
  EXPECT_EQ(reply.status, 403);
  EXPECT_EQ(reply.header("content-type"), "application/json");
  const auto body = reply.bodyJson();
  EXPECT_NE(body["error"].get<std::string>().find("outside the allowed prefixes"),
            std::string::npos);
  EXPECT_TRUE(upstream_.targetsSeen().empty());
  const auto lines = auditLines(1);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["decision"], "deny");
  EXPECT_EQ(lines[0]["status"], 403);
  EXPECT_EQ(lines[0]["reason"], body["error"]);
}

TEST_F(SidecarRelay, ToolOutsideTheListIsA403JsonRpcError) {
  Call call;
  call.url = origin() + "/restricted/mcp";
  call.method = "POST";
  call.headers = {"Content-Type: application/json"};
  call.body = R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"shell"}})";
  const auto reply = perform(call);
  EXPECT_EQ(reply.status, 403);
  const auto body = reply.bodyJson();
  EXPECT_EQ(body["jsonrpc"], "2.0");
  EXPECT_EQ(body["id"], 7);
  EXPECT_EQ(body["error"]["code"], -32602);
  EXPECT_TRUE(upstream_.targetsSeen().empty());

  call.body = R"({"jsonrpc":"2.0","id":8,"method":"resources/list"})";
  const auto method_reply = perform(call);
  EXPECT_EQ(method_reply.status, 403);
  EXPECT_EQ(method_reply.bodyJson()["error"]["code"], -32601);

  call.body = R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo"}})";
  const auto allowed = perform(call);
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(allowed.bodyJson()["id"], 9);

  const auto lines = auditLines(3);
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(lines[0]["decision"], "deny");
  EXPECT_EQ(lines[0]["rule"], "restricted");
  EXPECT_EQ(lines[1]["decision"], "deny");
  EXPECT_EQ(lines[2]["decision"], "allow");
}

TEST_F(SidecarRelay, RedirectIsPassedBackNotFollowed) {
  Call call;
  call.url = origin() + "/ok/redirect";
  const auto reply = perform(call);
  EXPECT_EQ(reply.status, 302);
  EXPECT_EQ(reply.header("location"), origin() + "/secret");
  EXPECT_EQ(reply.body, "moved");
  EXPECT_EQ(upstream_.targetsSeen(), std::vector<std::string>{"/ok/redirect"});
  // Following it by hand goes through the policy again.
  Call follow;
  follow.url = reply.header("location");
  EXPECT_EQ(perform(follow).status, 403);
}

TEST_F(SidecarRelay, OversizedBodyIs413) {
  Call call;
  call.url = origin() + "/ok/echo";
  call.method = "POST";
  call.body = std::string(8192, 'x');
  const auto reply = perform(call);
  EXPECT_EQ(reply.status, 413);
  EXPECT_TRUE(upstream_.targetsSeen().empty());
}

}  // namespace
