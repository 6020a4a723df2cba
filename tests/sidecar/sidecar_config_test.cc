#include "sidecar/sidecar_config.h"

#include <gtest/gtest.h>

namespace {

using sidecar::parseCommandLine;

TEST(SidecarConfig, ParsesRequiredAndOptionalFlags) {
  const auto result =
      parseCommandLine({"--listen", "/run/mcp/mcp.sock", "--policy", "p.json", "--audit-log",
                        "/tmp/a.log", "--session", "s-1", "--max-body-bytes", "2048",
                        "--upstream-idle-timeout-ms", "1500", "--max-concurrent-requests", "3"});
  ASSERT_TRUE(result.config) << result.error;
  EXPECT_EQ(result.config->listen_path, "/run/mcp/mcp.sock");
  EXPECT_EQ(result.config->policy_file, "p.json");
  EXPECT_EQ(result.config->audit_log_path, "/tmp/a.log");
  EXPECT_EQ(result.config->session_id, "s-1");
  EXPECT_EQ(result.config->max_body_bytes, 2048U);
  EXPECT_EQ(result.config->upstream_idle_timeout_ms, 1500);
  EXPECT_EQ(result.config->max_concurrent_requests, 3U);
}

TEST(SidecarConfig, DefaultsAuditToStderrAndOneMebibyteBodies) {
  const auto result = parseCommandLine({"--listen", "/tmp/s.sock", "--policy", "p.json"});
  ASSERT_TRUE(result.config) << result.error;
  EXPECT_EQ(result.config->audit_log_path, "-");
  EXPECT_EQ(result.config->max_body_bytes, 1024U * 1024U);
}

TEST(SidecarConfig, RejectsMissingUnknownAndInvalidFlagsWithAHint) {
  EXPECT_NE(parseCommandLine({"--policy", "p.json"}).error.find("--listen PATH is required"),
            std::string::npos);
  EXPECT_NE(parseCommandLine({"--listen", "/tmp/s"}).error.find("--policy FILE is required"),
            std::string::npos);
  EXPECT_NE(parseCommandLine({"--bogus"}).error.find("unknown argument '--bogus'"),
            std::string::npos);
  EXPECT_NE(parseCommandLine({"--listen"}).error.find("--listen needs a value"), std::string::npos);
  const auto bad_number =
      parseCommandLine({"--listen", "/tmp/s", "--policy", "p", "--max-body-bytes", "12x"});
  EXPECT_FALSE(bad_number.config);
  EXPECT_NE(bad_number.error.find("--max-body-bytes expects a positive integer"),
            std::string::npos);
  const auto zero =
      parseCommandLine({"--listen", "/tmp/s", "--policy", "p", "--idle-timeout-ms", "0"});
  EXPECT_FALSE(zero.config);
  const std::string long_path(200, 'x');
  EXPECT_NE(parseCommandLine({"--listen", long_path, "--policy", "p"}).error.find("shorter"),
            std::string::npos);
}

TEST(SidecarConfig, ParsesTheSecretsAndTheUpstreamCa) {
  const auto result =
      parseCommandLine({"--listen", "/run/mcp/mcp.sock", "--policy", "p.json", "--egress-listen",
                        "/run/mcp/egress.sock", "--egress-rules", "r.json", "--secrets",
                        "/s/secrets.json", "--egress-upstream-ca", "/s/internal-ca.pem"});
  ASSERT_TRUE(result.config) << result.error;
  EXPECT_EQ(result.config->secrets_file, "/s/secrets.json");
  EXPECT_EQ(result.config->egress_upstream_ca_file, "/s/internal-ca.pem");
  const auto defaults = parseCommandLine({"--listen", "/tmp/s.sock", "--policy", "p.json"});
  ASSERT_TRUE(defaults.config) << defaults.error;
  EXPECT_TRUE(defaults.config->secrets_file.empty());
  EXPECT_TRUE(defaults.config->egress_upstream_ca_file.empty());
}

TEST(SidecarConfig, SecretsServeTheMcpRelayAloneButTheUpstreamCaNeedsTheEgressProxy) {
  const auto relay_only =
      parseCommandLine({"--listen", "/tmp/s", "--policy", "p", "--secrets", "/s/secrets.json"});
  ASSERT_TRUE(relay_only.config) << relay_only.error;
  EXPECT_EQ(relay_only.config->secrets_file, "/s/secrets.json");
  const auto ca =
      parseCommandLine({"--listen", "/tmp/s", "--policy", "p", "--egress-upstream-ca", "/f"});
  EXPECT_FALSE(ca.config);
  EXPECT_NE(ca.error.find("give --egress-listen PATH --egress-rules FILE"), std::string::npos)
      << ca.error;
  EXPECT_NE(parseCommandLine({"--listen", "/tmp/s", "--policy", "p", "--secrets"})
                .error.find("--secrets needs a value"),
            std::string::npos);
  EXPECT_NE(sidecar::usageText().find("--secrets FILE"), std::string::npos);
  const auto with_ca =
      parseCommandLine({"--listen", "/tmp/s", "--policy", "p", "--upstream-ca", "/s/ca.pem"});
  ASSERT_TRUE(with_ca.config) << with_ca.error;
  EXPECT_EQ(with_ca.config->upstream_ca_file, "/s/ca.pem");
  EXPECT_NE(sidecar::usageText().find("--upstream-ca FILE"), std::string::npos);
  EXPECT_NE(sidecar::usageText().find("--egress-upstream-ca FILE"), std::string::npos);
}

TEST(SidecarConfig, HelpWins) {
  const auto result = parseCommandLine({"--help"});
  EXPECT_TRUE(result.help);
  EXPECT_FALSE(result.config);
  EXPECT_NE(sidecar::usageText().find("--listen PATH"), std::string::npos);
}

}  // namespace
