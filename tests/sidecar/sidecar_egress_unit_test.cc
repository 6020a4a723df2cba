// The relay's own egress guards: --deny-endpoint (the MCP server's listeners) and cloud metadata
// after DNS, and the size-capped audit log that drops and counts past its cap.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sidecar/audit_log.h"
#include "sidecar/dns_pinning.h"
#include "sidecar/sidecar_config.h"

namespace {

policy::IpAddress ip(const char* text) { return *policy::parseIpAddress(text); }
policy::Url url(const char* text) { return *policy::parseUrl(text).url; }

TEST(SidecarDenyEndpoint, ParsesRepeatedFlagsAndRefusesBadOnes) {
  const auto parsed = sidecar::parseCommandLine(
      {"--listen", "/tmp/x.sock", "--policy", "/tmp/p.json", "--deny-endpoint", "127.0.0.1:8765",
       "--deny-endpoint", "[::1]:8765", "--audit-log-max-bytes", "4096"});
  ASSERT_TRUE(parsed.config.has_value()) << parsed.error;
  ASSERT_EQ(parsed.config->denied_endpoints.size(), 2U);
  EXPECT_EQ(parsed.config->denied_endpoints[1].toString(), "[::1]:8765");
  EXPECT_EQ(parsed.config->audit_log_max_bytes, 4096U);
  const auto bad = sidecar::parseCommandLine(
      {"--listen", "/tmp/x.sock", "--policy", "/tmp/p.json", "--deny-endpoint", "localhost:1"});
  EXPECT_FALSE(bad.config.has_value());
  EXPECT_NE(bad.error.find("--deny-endpoint expects ADDR:PORT"), std::string::npos) << bad.error;
}

TEST(SidecarDenyEndpoint, EvenARuleNamingTheServerCannotPinIt) {
  // The operator named the loopback address; the server itself listens there.
  const auto loaded = policy::loadPolicy(nlohmann::json::array({"http://localhost:8765/"}));
  const std::vector<policy::Endpoint> server = {*policy::parseEndpoint("127.0.0.1:8765")};
  for (const char* resolved : {"127.0.0.1", "::ffff:127.0.0.1", "::1", "127.0.1.1"}) {
    const auto pin = sidecar::pinFirstAllowed(loaded->rules[0], url("http://localhost:8765/mcp"),
                                              {ip(resolved)}, server);
    EXPECT_FALSE(pin.decision.allowed()) << resolved;
    EXPECT_NE(pin.decision.reason.find("own listener"), std::string::npos) << pin.decision.reason;
  }
  // Without the server there, the operator's loopback rule works as before.
  const auto other = sidecar::pinFirstAllowed(loaded->rules[0], url("http://localhost:8765/mcp"),
                                              {ip("127.0.0.1")}, {});
  EXPECT_TRUE(other.decision.allowed()) << other.decision.reason;
}

TEST(SidecarDenyEndpoint, MetadataIsNeverPinnedEvenWhenNamed) {
  const auto loaded = policy::loadPolicy(nlohmann::json::array({"http://169.254.169.254/"}));
  const auto pin = sidecar::pinFirstAllowed(
      loaded->rules[0], url("http://169.254.169.254/latest/meta-data/"), {ip("169.254.169.254")});
  EXPECT_FALSE(pin.decision.allowed());
  EXPECT_NE(pin.decision.reason.find("cloud metadata"), std::string::npos) << pin.decision.reason;
}

sidecar::AuditRecord record(int i) {
  sidecar::AuditRecord r;
  r.time = std::chrono::system_clock::now();
  r.session = "flood";
  r.method = "GET";
  r.url = "http://x.example/" + std::to_string(i);
  r.decision = "deny";
  r.reason = std::string(100, 'r');
  r.status = 403;
  return r;
}

TEST(SidecarAuditCap, StopsAtTheCapAndCountsWhatItDropped) {
  std::string pattern = (std::filesystem::temp_directory_path() / "audit-cap-XXXXXX").string();
  const std::string dir = mkdtemp(pattern.data());
  const std::string path = dir + "/audit.jsonl";
  constexpr std::uint64_t kCap = 4096;
  {
    auto log = sidecar::AuditLog::open(path, kCap);
    for (int i = 0; i < 1000; ++i) log->write(record(i));
    EXPECT_LE(std::filesystem::file_size(path), kCap);
    const auto dropped = log->dropped();
    std::ifstream in(path);
    std::uint64_t lines = 0;
    for (std::string line; std::getline(in, line);) {
      EXPECT_FALSE(nlohmann::json::parse(line, nullptr, false).is_discarded()) << "cut: " << line;
      ++lines;
    }
    EXPECT_GT(lines, 0U);
    EXPECT_EQ(lines + dropped, 1000U);
    EXPECT_EQ(sidecar::AuditLog::readDroppedCount(path), dropped);
  }
  {
    // A restarted relay appends to the same file: the cap holds across both, the count goes on.
    auto again = sidecar::AuditLog::open(path, kCap);
    const auto before = again->dropped();
    again->write(record(1));
    EXPECT_EQ(again->dropped(), before + 1);
    EXPECT_LE(std::filesystem::file_size(path), kCap);
    EXPECT_EQ(sidecar::AuditLog::readDroppedCount(path), before + 1);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
