// The MCP relay sets the operator's secret headers (--secrets) on requests to the hosts they name,
// replacing whatever the sandbox sent, names them (never the values) in the audit log, and refuses
// to send them in clear text to anything but a loopback address.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "sidecar/secret_headers.h"
#include "sidecar_relay_support.h"

namespace {

using relay_test::Call;
using relay_test::json;

constexpr const char* kToken = "Bearer relay-secret-7f3a9c";
constexpr const char* kFarHost = "10.255.255.1";  // only named in a rule, never connected to

class SidecarRelaySecrets : public relay_test::SidecarRelay {
 protected:
  void SetUp() override {
    SidecarRelay::SetUp();
    if (HasFatalFailure()) return;
    server_.reset();  // the same socket and upstream, with secrets this time
    const json rules = json::array({origin() + "/ok",
                                    "http://localhost:" + std::to_string(upstream_.port()) + "/ok",
                                    std::string("http://") + kFarHost + ":9/x"});
    const json secrets =
        json::array({{{"host", "127.0.0.1"},
                      {"port", upstream_.port()},
                      {"headers", {{"Authorization", kToken}, {"X-Api-Key", "k-1"}}}},
                     {{"host", kFarHost}, {"port", 9}, {"headers", {{"Authorization", kToken}}}}});
    server_ = std::make_unique<sidecar::SidecarServer>(
        config_, policy::loadPolicy(rules), sidecar::AuditLog::open(config_.audit_log_path),
        std::make_shared<const sidecar::SecretHeaders>(sidecar::SecretHeaders::fromJson(secrets)));
    server_->start();
  }
};

TEST_F(SidecarRelaySecrets, TheSecretReplacesTheSandboxsHeaderAndOnlyItsNameIsAudited) {
  Call call;
  call.url = origin() + "/ok/echo";
  call.method = "POST";
  call.body = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  call.headers = {"Content-Type: application/json", "authorization: Bearer from-the-sandbox",
                  "AUTHORIZATION: second"};
  const auto reply = perform(call);
  ASSERT_EQ(reply.code, CURLE_OK);
  ASSERT_EQ(reply.status, 200) << reply.body;
  const auto echo = reply.bodyJson();
  EXPECT_EQ(echo["headers"]["authorization"], kToken);
  EXPECT_EQ(echo["headers"]["x-api-key"], "k-1");
  EXPECT_EQ(echo["body"], call.body);

  const auto lines = auditLines(1);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["decision"], "allow");
  const auto reason = lines[0]["reason"].get<std::string>();
  EXPECT_NE(reason.find("secret headers set: Authorization, X-Api-Key"), std::string::npos)
      << reason;
  EXPECT_EQ(lines[0].dump().find("relay-secret"), std::string::npos);
  EXPECT_EQ(lines[0].dump().find("k-1"), std::string::npos);
}

TEST_F(SidecarRelaySecrets, NoSecretGoesInClearTextToAnAddressBeyondLoopback) {
  Call call;
  call.url = std::string("http://") + kFarHost + ":9/x/mcp";
  call.method = "POST";
  call.body = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  const auto reply = perform(call);
  ASSERT_EQ(reply.code, CURLE_OK);
  EXPECT_EQ(reply.status, 403) << reply.body;
  const auto error = reply.bodyJson()["error"].get<std::string>();
  EXPECT_NE(error.find("go over https only"), std::string::npos) << error;
  EXPECT_NE(error.find("https://10.255.255.1:9"), std::string::npos) << error;
  const auto lines = auditLines(1);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["decision"], "deny");
  EXPECT_EQ(lines[0].dump().find("relay-secret"), std::string::npos);
}

TEST_F(SidecarRelaySecrets, TraceToASecretHostIsRefusedItWouldEchoTheSecret) {
  Call call;
  call.url = origin() + "/ok/echo";
  call.method = "TRACE";
  const auto reply = perform(call);
  ASSERT_EQ(reply.code, CURLE_OK);
  EXPECT_EQ(reply.status, 403) << reply.body;
  EXPECT_NE(reply.body.find("would echo"), std::string::npos) << reply.body;
  EXPECT_EQ(reply.body.find("relay-secret"), std::string::npos);
  EXPECT_TRUE(upstream_.targetsSeen().empty());
}

TEST_F(SidecarRelaySecrets, SecretsFollowTheHostNameNotTheAddressItResolvesTo) {
  // localhost reaches the same upstream as 127.0.0.1, but the secrets name 127.0.0.1 only.
  Call call;
  call.url = "http://localhost:" + std::to_string(upstream_.port()) + "/ok/echo";
  call.headers = {"Authorization: Bearer from-the-sandbox"};
  const auto reply = perform(call);
  ASSERT_EQ(reply.code, CURLE_OK);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.bodyJson()["headers"]["authorization"], "Bearer from-the-sandbox");
  EXPECT_FALSE(reply.bodyJson()["headers"].contains("x-api-key"));

  Call named;
  named.url = origin() + "/ok/echo";
  named.headers = {"X-Other: 1"};
  const auto echo = perform(named).bodyJson();
  EXPECT_EQ(echo["headers"]["authorization"], kToken);  // set also when the sandbox sent none
  EXPECT_EQ(echo["headers"]["x-other"], "1");
}

}  // namespace
