// The MCP relay sets the operator's secret headers (--secrets) on requests to the hosts they name,
// replacing whatever the sandbox sent, names them (never the values) in the audit log, and refuses
// to send them in clear text to anything but a loopback address, or with TRACE. Over https, the
// relay trusts an operator's internal CA only when named (--upstream-ca).
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/text.h"
#include "https_echo.h"
#include "sidecar/extra_ca.h"
#include "sidecar/secret_headers.h"
#include "sidecar/session_ca.h"
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
    // The last entry is the egress proxy's only (not marked `relay`): the relay never sets it.
    const json secrets =
        json::array({{{"host", "127.0.0.1"},
                      {"port", upstream_.port()},
                      {"relay", true},
                      {"headers", {{"Authorization", kToken}, {"X-Api-Key", "k-1"}}}},
                     {{"host", kFarHost},
                      {"port", 9},
                      {"relay", true},
                      {"headers", {{"Authorization", kToken}}}},
                     {{"host", "localhost"},
                      {"port", upstream_.port()},
                      {"headers", {{"X-Egress-Only", "proxy-secret"}}}}});
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
  EXPECT_FALSE(reply.bodyJson()["headers"].contains("x-egress-only"));  // not marked `relay`

  Call named;
  named.url = origin() + "/ok/echo";
  named.headers = {"X-Other: 1"};
  const auto echo = perform(named).bodyJson();
  EXPECT_EQ(echo["headers"]["authorization"], kToken);  // set also when the sandbox sent none
  EXPECT_EQ(echo["headers"]["x-other"], "1");
}

}  // namespace

namespace {

// An https MCP server on 127.0.0.1 ("localhost") whose certificate comes from a CA the system
// does not know: the relay reaches it only with --upstream-ca, and sets the secret there too.
class SidecarRelayHttps : public relay_test::SidecarRelay {
 protected:
  void SetUp() override {
    SidecarRelay::SetUp();
    if (HasFatalFailure()) return;
    const auto pem = sidecar::SessionCa::generateCa("relay upstream test CA");
    ca_ = sidecar::SessionCa::fromPem(pem.cert_pem, pem.key_pem);
    ca_file_ = config_.listen_path + ".ca.pem";
    std::ofstream(ca_file_) << pem.cert_pem;
    echo_ = std::make_unique<sidecar_test::HttpsEcho>(*ca_, "localhost");
  }
  void TearDown() override {
    server_.reset();
    echo_.reset();
    std::remove(ca_file_.c_str());
    SidecarRelay::TearDown();
  }

  void restartRelay(bool trust_the_ca) {
    server_.reset();
    auto config = config_;
    config.upstream_ca_file = trust_the_ca ? ca_file_ : "";
    const json secrets = json::array({{{"host", "localhost"},
                                       {"port", echo_->port()},
                                       {"relay", true},
                                       {"headers", {{"Authorization", kToken}}}}});
    server_ = std::make_unique<sidecar::SidecarServer>(
        config, policy::loadPolicy(json::array({httpsOrigin() + "/mcp"})),
        sidecar::AuditLog::open(config.audit_log_path),
        std::make_shared<const sidecar::SecretHeaders>(sidecar::SecretHeaders::fromJson(secrets)));
    server_->start();
  }

  [[nodiscard]] std::string httpsOrigin() const {
    return "https://localhost:" + std::to_string(echo_->port());
  }

  relay_test::Reply post() {
    Call call;
    call.url = "http://ignored.invalid/mcp";  // the relay goes by the absolute target
    call.request_target = httpsOrigin() + "/mcp";
    call.method = "POST";
    call.body = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
    call.headers = {"Content-Type: application/json", "Authorization: Bearer from-the-sandbox"};
    return perform(call);
  }

  std::unique_ptr<sidecar::SessionCa> ca_;
  std::string ca_file_;
  std::unique_ptr<sidecar_test::HttpsEcho> echo_;
};

TEST_F(SidecarRelayHttps, AnInternalCaTheOperatorNamesIsTrustedAndTheSecretSet) {
  restartRelay(true);
  const auto reply = post();
  ASSERT_EQ(reply.code, CURLE_OK);
  ASSERT_EQ(reply.status, 200) << reply.body;
  const auto seen = echo_->requests();
  ASSERT_EQ(seen.size(), 1U);
  std::vector<std::string> authorizations;
  for (const auto& field : seen[0]["headers"]) {
    if (common::iequals(field[0].get<std::string>(), "authorization")) {
      authorizations.push_back(field[1]);
    }
  }
  EXPECT_EQ(authorizations, std::vector<std::string>{kToken});
  EXPECT_EQ(seen[0]["body"], R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
}

TEST_F(SidecarRelayHttps, WithoutTheCaTheServerIsRefusedAndGetsNoRequest) {
  restartRelay(false);
  const auto reply = post();
  ASSERT_EQ(reply.code, CURLE_OK);
  EXPECT_EQ(reply.status, 502) << reply.body;
  EXPECT_NE(reply.body.find("certificate"), std::string::npos) << reply.body;
  EXPECT_TRUE(echo_->requests().empty());
}

TEST(ExtraCaCertificates, AFileWithoutACertificateIsRefusedByName) {
  const std::string path = "/tmp/extra-ca-test-" + std::to_string(::getpid()) + ".pem";
  std::ofstream(path) << "not a certificate\n";
  try {
    (void)sidecar::ExtraCaCertificates::load(path);
    ADD_FAILURE() << "accepted a file without a certificate";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
  std::remove(path.c_str());
  EXPECT_THROW((void)sidecar::ExtraCaCertificates::load(path), std::runtime_error);
}

}  // namespace
