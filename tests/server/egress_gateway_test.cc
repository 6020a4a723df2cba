// Egress is the operator's to grant: what effectivePolicy and McpGateway let a session reach, the
// server's own listener, metadata in the operator's config, and the audit log caps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config.h"
#include "sandbox/backend.h"
#include "server/mcp_gateway.h"
#include "server/server_endpoints.h"

namespace {

using nlohmann::json;

std::string refusal(const json& requested, const json& operator_list) {
  try {
    (void)server::effectivePolicy(requested, operator_list);
  } catch (const sandbox::SandboxError& e) {
    return e.what();
  }
  return {};
}

TEST(EgressEffectivePolicy, AModelCannotGrantItselfLoopbackPrivateOrLocalNames) {
  for (const char* url :
       {"http://127.0.0.1:8765/mcp", "http://127.1:8765/mcp", "http://[::ffff:127.0.0.1]:8765/mcp",
        "http://localhost:8765/mcp", "http://10.0.0.1/mcp", "http://[fd00::1]/mcp",
        "http://100.64.0.1/", "http://169.254.1.1/", "http://intranet/mcp"}) {
    const std::string error = refusal(json::array({url}), json::array());
    EXPECT_NE(error.find("may name public hosts only"), std::string::npos) << url << ": " << error;
    EXPECT_NE(error.find("to mcp.allowlist"), std::string::npos) << error;
  }
  EXPECT_TRUE(refusal(json::array({"https://mcp.example.com/mcp"}), json::array()).empty());
}

TEST(EgressEffectivePolicy, TheOperatorMayGrantLoopbackButNeverMetadata) {
  const json operator_list = json::array({"http://127.0.0.1:9000/", "http://169.254.169.254/"});
  EXPECT_TRUE(refusal(json::array({"http://127.0.0.1:9000/mcp"}), operator_list).empty());
  const std::string metadata =
      refusal(json::array({"http://169.254.169.254/latest"}), operator_list);
  EXPECT_NE(metadata.find("never allowed"), std::string::npos) << metadata;
  // And the config loader refuses such an operator list outright.
  try {
    (void)config::fromJson({{"mcp", {{"allowlist", {"http://metadata.google.internal/"}}}}});
    FAIL() << "an operator allowlist naming cloud metadata was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("mcp.allowlist"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cloud metadata"), std::string::npos) << e.what();
  }
}

class RecordingLauncher final : public sandbox::SidecarLauncher {
 public:
  struct Relay final : sandbox::Sidecar {
    bool running() override { return true; }
    [[nodiscard]] std::string describe() const override { return "recorded"; }
  };
  std::unique_ptr<sandbox::Sidecar> launch(const sandbox::SidecarSpec& spec) override {
    last_spec = spec;
    return std::make_unique<Relay>();
  }
  [[nodiscard]] std::string mode() const override { return "recorded"; }
  sandbox::SidecarSpec last_spec;
};

std::string tempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "egress-gw-XXXXXX").string();
  return mkdtemp(pattern.data());
}

TEST(EgressGateway, TheServersOwnListenerIsRefusedEvenWhenTheOperatorNamesIt) {
  const auto server_endpoints = server::listenerEndpoints("127.0.0.1", 8765);
  RecordingLauncher launcher;
  for (const char* url : {"http://127.0.0.1:8765/mcp", "http://localhost:8765/mcp",
                          "http://127.1:8765/", "http://[::1]:8765/"}) {
    const std::string dir = tempDir();
    const auto policy = server::effectivePolicy(json::array({url}), json::array({url}));
    try {
      server::McpGateway gateway(launcher, std::make_unique<sandbox::ScopedDirectory>(dir), "s",
                                 policy, {}, {}, server_endpoints);
      ADD_FAILURE() << url << " was accepted";
    } catch (const sandbox::SandboxError& e) {
      EXPECT_NE(std::string(e.what()).find("own listener 127.0.0.1:8765"), std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir)) << "a refused session left its directory";
  }
}

TEST(EgressGateway, TheRelayIsToldTheServersListenersForItsCheckAfterDns) {
  const std::string dir = tempDir();
  RecordingLauncher launcher;
  server::McpGateway gateway(
      launcher, std::make_unique<sandbox::ScopedDirectory>(dir), "s",
      server::effectivePolicy(json::array({"https://mcp.example.com/"}), json::array()),
      {"--max-body-bytes", "2048"}, {}, server::listenerEndpoints("127.0.0.1", 8765));
  gateway.start();
  const auto& flags = launcher.last_spec.limit_flags;
  const auto it = std::find(flags.begin(), flags.end(), "--deny-endpoint");
  ASSERT_NE(it, flags.end());
  EXPECT_EQ(*(it + 1), "127.0.0.1:8765");
}

TEST(EgressGateway, ListenerEndpointsCoverAWildcardBind) {
  const auto any = server::listenerEndpoints("0.0.0.0", 8080);
  const auto has = [&](const std::string& text) {
    return std::any_of(any.begin(), any.end(), [&](const auto& e) { return e.toString() == text; });
  };
  EXPECT_TRUE(has("0.0.0.0:8080"));
  EXPECT_TRUE(has("127.0.0.1:8080"));  // the lo interface
  EXPECT_FALSE(server::listenerEndpoints("localhost", 1).empty());
  EXPECT_EQ(server::listenerEndpoints("[::1]", 9)[0].toString(), "[::1]:9");
}

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(EgressAuditLog, StatsReportDroppedLinesAndTheOperatorCopyRotatesOnce) {
  const std::string root = tempDir();
  const std::string kept = root + "/kept.jsonl";
  std::ofstream(kept) << std::string(3000, 'o') << '\n';
  RecordingLauncher launcher;
  {
    const std::string dir = root + "/s-1";
    std::filesystem::create_directories(dir);
    server::McpGateway gateway(
        launcher, std::make_unique<sandbox::ScopedDirectory>(dir), "s",
        server::effectivePolicy(json::array({"https://mcp.example.com/"}), json::array()), {},
        server::RetainedAuditLog(kept, 4096));
    gateway.start();
    std::ofstream(dir + "/audit.jsonl") << std::string(2000, 'n') << '\n';
    std::ofstream(dir + "/audit.jsonl.dropped") << "7\n";
    EXPECT_EQ(gateway.stats()["sidecar"]["audit_dropped"], 7);
  }
  EXPECT_EQ(readAll(kept + ".1"), std::string(3000, 'o') + "\n");  // the old generation
  EXPECT_EQ(readAll(kept), std::string(2000, 'n') + "\n");
  std::filesystem::remove_all(root);
}

}  // namespace
