// The pure parts of a session's MCP access: counting audit decisions, the effective allowlist
// (operator narrowing) and the mcp config section.
#include "server/mcp_gateway.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config.h"
#include "sandbox/backend.h"
#include "server/audit_tally.h"

namespace {

using nlohmann::json;

TEST(AuditTally, CountsDecisionsAcrossSplitLines) {
  server::AuditTally tally;
  const std::string log = R"({"decision":"allow","status":200})"
                          "\n"
                          R"({"decision":"deny","status":403})"
                          "\n"
                          R"({"decision":"error","status":502})"
                          "\n"
                          R"({"decision":"allow","status":200})"
                          "\n";
  // Fed in awkward pieces, as a growing file is read.
  tally.consume(log.substr(0, 10));
  tally.consume(log.substr(10, 40));
  tally.consume(log.substr(50));
  EXPECT_EQ(tally.allowed(), 2U);
  EXPECT_EQ(tally.denied(), 1U);
  EXPECT_EQ(tally.errors(), 1U);
}

TEST(AuditTally, WaitsForTheEndOfALineAndIgnoresGarbage) {
  server::AuditTally tally;
  tally.consume(R"({"decision":"allow")");
  EXPECT_EQ(tally.allowed(), 0U);
  tally.consume("}\nnot json\n{\"other\":1}\n");
  EXPECT_EQ(tally.allowed(), 1U);
  EXPECT_EQ(tally.denied(), 0U);
}

TEST(EffectivePolicy, WithoutAnOperatorListTheCallsPublicHostsAreTakenAsGiven) {
  const auto policy =
      server::effectivePolicy(json{"http://mcp.example.com:8265/mcp"}, json::array());
  ASSERT_EQ(policy->rules.size(), 1U);
  EXPECT_EQ(policy->rules[0].base.host, "mcp.example.com");
  EXPECT_EQ(policy->rules[0].base.port, 8265);
}

TEST(EffectivePolicy, TheOperatorListNarrowsAndNeverWidens) {
  const json operator_list = json::array(
      {{{"url", "http://search.internal:80/"}, {"methods", {"tools/list", "tools/call"}}}});
  const auto narrowed = server::effectivePolicy(
      json::array({{{"url", "http://search.internal/mcp"}, {"methods", {"tools/call"}}}}),
      operator_list);
  ASSERT_EQ(narrowed->rules.size(), 1U);
  EXPECT_EQ(narrowed->rules[0].methods, std::vector<std::string>{"tools/call"});
  // Inherits the operator's restriction when the call names none.
  const auto inherited = server::effectivePolicy(json{"http://search.internal/mcp"}, operator_list);
  EXPECT_EQ(inherited->rules[0].methods.size(), 2U);

  try {
    (void)server::effectivePolicy(json{"http://evil.example/mcp"}, operator_list);
    FAIL() << "widening was accepted";
  } catch (const sandbox::SandboxError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("mcp_allowlist"), std::string::npos) << what;
    EXPECT_NE(what.find("not covered by the operator's allowlist"), std::string::npos) << what;
    EXPECT_NE(what.find("http://search.internal/"), std::string::npos) << what;  // what is allowed
  }
}

TEST(EffectivePolicy, BadEntriesAreRefusedWithTheirIndex) {
  try {
    (void)server::effectivePolicy(json{"http://ok/mcp", "ftp://x/"}, json::array());
    FAIL();
  } catch (const sandbox::SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("allowlist[1]"), std::string::npos) << e.what();
  }
}

TEST(PolicyJson, RoundTripsThroughLoadPolicy) {
  const auto policy = server::effectivePolicy(
      json::array(
          {"http://a.example/mcp",
           {{"url", "https://b.example/x"}, {"methods", {"tools/call"}}, {"tools", {"search"}}}}),
      json::array());
  const json text = policy::toJson(*policy);
  const auto again = policy::loadPolicy(text);
  ASSERT_EQ(again->rules.size(), 2U);
  EXPECT_EQ(again->rules[1].tools, std::vector<std::string>{"search"});
  EXPECT_EQ(again->rules[0].id, policy->rules[0].id);
  EXPECT_EQ(policy::toJson(*again), text);
}

// A launcher whose relays are flags the test flips (the real ones are tested in tests/sandbox and
// end to end).
class FakeLauncher final : public sandbox::SidecarLauncher {
 public:
  struct Relay final : sandbox::Sidecar {
    Relay(std::shared_ptr<bool> up, int n) : up_(std::move(up)), n_(n) {}
    bool running() override { return *up_; }
    [[nodiscard]] std::string describe() const override { return "fake " + std::to_string(n_); }
    std::shared_ptr<bool> up_;
    int n_;
  };
  std::unique_ptr<sandbox::Sidecar> launch(const sandbox::SidecarSpec& spec) override {
    last_spec = spec;
    if (fail) throw sandbox::SandboxError("no relay today");
    up = std::make_shared<bool>(true);
    return std::make_unique<Relay>(up, ++launches);
  }
  [[nodiscard]] std::string mode() const override { return "fake"; }

  sandbox::SidecarSpec last_spec;
  std::shared_ptr<bool> up;
  int launches = 0;
  bool fail = false;
};

std::string tempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "gateway-XXXXXX").string();
  return mkdtemp(pattern.data());
}

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(McpGateway, WritesThePolicyStartsTheRelayCountsAndKeepsTheAuditLog) {
  const std::string root = tempDir();
  const std::string dir = root + "/s-1";
  std::filesystem::create_directories(dir + "/sock");
  FakeLauncher launcher;
  auto policy = server::effectivePolicy(json{"http://mcp.example.com:8265/mcp"}, json::array());
  const std::string allow = "{\"decision\":\"allow\"}\n";
  const std::string deny = "{\"decision\":\"deny\"}\n";
  {
    server::McpGateway gateway(launcher, std::make_unique<sandbox::ScopedDirectory>(dir), "s1",
                               policy, {"--max-body-bytes", "2048"}, root + "/kept.jsonl");
    EXPECT_EQ(launcher.launches, 0);
    gateway.start();
    EXPECT_EQ(launcher.launches, 1);
    EXPECT_EQ(gateway.socketDir(), dir + "/sock");
    EXPECT_EQ(launcher.last_spec.limit_flags,
              (std::vector<std::string>{"--max-body-bytes", "2048"}));
    EXPECT_EQ(json::parse(readAll(dir + "/policy.json")), policy::toJson(*policy));

    std::ofstream(dir + "/audit.jsonl") << allow << deny;
    auto stats = gateway.stats();
    EXPECT_EQ(stats["sidecar"]["allowed"], 1);
    EXPECT_EQ(stats["sidecar"]["denied"], 1);
    EXPECT_EQ(stats["sidecar"]["running"], true);
    EXPECT_EQ(stats["allowlist"], policy::toJson(*policy));
    std::ofstream(dir + "/audit.jsonl", std::ios::app) << allow;
    EXPECT_EQ(gateway.stats()["sidecar"]["allowed"], 2);  // reads only what was appended
  }
  EXPECT_FALSE(std::filesystem::exists(dir)) << "the session directory outlived the session";
  EXPECT_EQ(readAll(root + "/kept.jsonl"), allow + deny + allow);  // mcp.audit_log keeps it
  std::filesystem::remove_all(root);
}

TEST(McpGateway, RestartsADeadRelayAndSaysSo) {
  const std::string dir = tempDir();
  FakeLauncher launcher;
  server::McpGateway gateway(launcher, std::make_unique<sandbox::ScopedDirectory>(dir), "s1",
                             server::effectivePolicy(json{"http://a.example/mcp"}, json::array()),
                             {});
  gateway.start();
  EXPECT_EQ(gateway.ensureRunning(), std::nullopt);
  *launcher.up = false;  // the relay was killed
  const auto notice = gateway.ensureRunning();
  ASSERT_TRUE(notice.has_value());
  EXPECT_NE(notice->find("restarted as fake 2"), std::string::npos) << *notice;
  EXPECT_EQ(gateway.stats()["sidecar"]["restarts"], 1);

  *launcher.up = false;
  launcher.fail = true;
  try {
    (void)gateway.ensureRunning();
    FAIL() << "a failed restart went unreported";
  } catch (const sandbox::SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("could not be restarted"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("no relay today"), std::string::npos);
  }
  EXPECT_EQ(gateway.stats()["sidecar"]["running"], false);
}

TEST(McpConfig, DefaultsAreContainerModeOnTheHostNetwork) {
  const auto cfg = config::fromJson(json::object());
  EXPECT_EQ(cfg.mcp.sidecar.mode, "container");
  EXPECT_EQ(cfg.mcp.sidecar.network, "host");
  EXPECT_TRUE(cfg.mcp.allowlist.empty());
  EXPECT_EQ(config::fromJson(config::toJson(cfg)).mcp.sidecar.image, cfg.mcp.sidecar.image);
}

TEST(McpConfig, RejectsBadSettingsNamingTheField) {
  const auto error = [](const json& mcp) {
    try {
      (void)config::fromJson(json{{"mcp", mcp}});
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error({{"sidecar", {{"mode", "thread"}}}}).find("mcp.sidecar.mode"), std::string::npos);
  EXPECT_NE(error({{"sidecar", {{"network", "none"}}}}).find("mcp.sidecar.network"),
            std::string::npos);
  EXPECT_NE(error({{"allowlist", {"gopher://x/"}}}).find("mcp.allowlist"), std::string::npos);
  EXPECT_NE(error({{"runtime_dir", "relative"}}).find("mcp.runtime_dir"), std::string::npos);
  EXPECT_NE(error({{"audit_log", "audit.jsonl"}}).find("mcp.audit_log"), std::string::npos);
  EXPECT_NE(error({{"sidecar", {{"colour", 1}}}}).find("mcp.sidecar.colour"), std::string::npos);
}

}  // namespace
