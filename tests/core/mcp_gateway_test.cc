// The pure parts of a session's MCP access: counting audit decisions, the effective allowlist
// (operator narrowing) and the mcp config section.
#include "server/mcp_gateway.h"

#include <gtest/gtest.h>

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

TEST(EffectivePolicy, WithoutAnOperatorListTheCallsListIsTakenAsGiven) {
  const auto policy = server::effectivePolicy(json{"http://localhost:8265/mcp"}, json::array());
  ASSERT_EQ(policy->rules.size(), 1U);
  EXPECT_EQ(policy->rules[0].base.host, "localhost");
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
      json::array({"http://a/mcp",
                   {{"url", "https://b/x"}, {"methods", {"tools/call"}}, {"tools", {"search"}}}}),
      json::array());
  const json text = policy::toJson(*policy);
  const auto again = policy::loadPolicy(text);
  ASSERT_EQ(again->rules.size(), 2U);
  EXPECT_EQ(again->rules[1].tools, std::vector<std::string>{"search"});
  EXPECT_EQ(again->rules[0].id, policy->rules[0].id);
  EXPECT_EQ(policy::toJson(*again), text);
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
  EXPECT_NE(error({{"sidecar", {{"colour", 1}}}}).find("mcp.sidecar.colour"), std::string::npos);
}

}  // namespace
