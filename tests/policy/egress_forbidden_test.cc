// decideForbiddenUrl / decideForbiddenAddress: cloud metadata and the server's own listener are
// never reachable, in any spelling, before or after DNS, whatever the allowlists say.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace {

struct ForbiddenRow {
  std::string name;
  std::string url;
  bool allowed;
  std::string reason;  // substring of the decision's reason
};

std::ostream& operator<<(std::ostream& out, const ForbiddenRow& row) { return out << row.name; }

// The server listens on 127.0.0.1:8765 (scripts/run.sh's default).
std::vector<policy::Endpoint> loopbackServer() {
  return {*policy::parseEndpoint("127.0.0.1:8765")};
}

constexpr const char* kSelf = "reaches this MCP server's own listener 127.0.0.1:8765";
constexpr const char* kMetadata = "never allowed, not even by the operator's mcp.allowlist";

const std::vector<ForbiddenRow> kUrlRows = {
    {"SelfDottedQuad", "http://127.0.0.1:8765/mcp", false, kSelf},
    {"SelfShortForm", "http://127.1:8765/mcp", false, kSelf},
    {"SelfDecimal", "http://2130706433:8765/mcp", false, kSelf},
    {"SelfHex", "http://0x7f.1:8765/mcp", false, kSelf},
    {"SelfOctal", "http://0177.0.0.1:8765/mcp", false, kSelf},
    {"SelfMappedIpv6", "http://[::ffff:127.0.0.1]:8765/mcp", false, kSelf},
    {"SelfMappedIpv6Hex", "http://[::ffff:7f00:1]:8765/mcp", false, kSelf},
    {"SelfIpv4Compatible", "http://[::127.0.0.1]:8765/mcp", false, kSelf},
    {"SelfNat64", "http://[64:ff9b::7f00:1]:8765/mcp", false, kSelf},
    {"SelfIpv6Loopback", "http://[::1]:8765/mcp", false, kSelf},
    {"SelfOtherLoopback", "http://127.0.0.2:8765/mcp", false, kSelf},
    {"SelfUnspecified", "http://0.0.0.0:8765/mcp", false, kSelf},
    {"SelfIpv6Unspecified", "http://[::]:8765/mcp", false, kSelf},
    {"SelfLocalhost", "http://localhost:8765/mcp", false, kSelf},
    {"SelfLocalhostUppercaseDot", "http://LOCALHOST.:8765/mcp", false, kSelf},
    {"SelfSubLocalhost", "http://x.localhost:8765/mcp", false, kSelf},
    {"SelfOtherPath", "http://127.0.0.1:8765/other", false, kSelf},
    {"LoopbackOtherPortIsNotSelf", "http://127.0.0.1:8766/mcp", true, "not a forbidden"},
    {"LocalhostOtherPortIsNotSelf", "http://localhost:9000/mcp", true, "not a forbidden"},
    {"AwsMetadata", "http://169.254.169.254/latest/meta-data/", false, kMetadata},
    {"AwsMetadataDecimal", "http://2852039166/latest/", false, kMetadata},
    {"AwsMetadataHex", "http://0xa9fea9fe/latest/", false, kMetadata},
    {"AwsMetadataMapped", "http://[::ffff:169.254.169.254]/latest/", false, kMetadata},
    {"AwsMetadataIpv6", "http://[fd00:ec2::254]/latest/", false, kMetadata},
    {"EcsMetadata", "http://169.254.170.2/v2/credentials", false, kMetadata},
    {"AlibabaMetadata", "http://100.100.100.200/latest/", false, kMetadata},
    {"GcpMetadataName", "http://metadata.google.internal/computeMetadata/v1/", false, kMetadata},
    {"GcpMetadataNameUppercaseDot", "http://METADATA.GOOGLE.INTERNAL./", false, kMetadata},
    {"GcpMetadataShortName", "http://metadata/computeMetadata/v1/", false, kMetadata},
    {"GcpMetadataGoog", "http://metadata.goog/", false, kMetadata},
    {"AwsInstanceDataName", "http://instance-data/latest/", false, kMetadata},
    {"PublicHost", "https://mcp.example.com/mcp", true, "not a forbidden host"},
    {"PublicAddress", "http://93.184.216.34:8765/mcp", true, "not a forbidden address"},
};

class ForbiddenUrlTable : public testing::TestWithParam<ForbiddenRow> {};

TEST_P(ForbiddenUrlTable, VerdictAndReason) {
  const ForbiddenRow& row = GetParam();
  const policy::ParseResult parsed = policy::parseUrl(row.url);
  ASSERT_TRUE(parsed.url.has_value()) << parsed.error;
  const policy::Decision decision = policy::decideForbiddenUrl(*parsed.url, loopbackServer());
  EXPECT_EQ(decision.allowed(), row.allowed) << decision.reason;
  EXPECT_NE(decision.reason.find(row.reason), std::string::npos)
      << "reason '" << decision.reason << "' lacks '" << row.reason << "'";
}

INSTANTIATE_TEST_SUITE_P(Unit, ForbiddenUrlTable, testing::ValuesIn(kUrlRows),
                         [](const testing::TestParamInfo<ForbiddenRow>& row_info) {
                           return row_info.param.name;
                         });

struct ResolvedRow {
  std::string name;
  std::string url;
  std::string resolved;
  bool allowed;
  std::string reason;
};

std::ostream& operator<<(std::ostream& out, const ResolvedRow& row) { return out << row.name; }

// A public-looking name that DNS (or /etc/hosts) points at the server or at metadata.
const std::vector<ResolvedRow> kResolvedRows = {
    {"NameToSelf", "http://rebind.example.com:8765/mcp", "127.0.0.1", false, kSelf},
    {"NameToSelfMapped", "http://rebind.example.com:8765/mcp", "::ffff:127.0.0.1", false, kSelf},
    {"NameToSelfIpv6Loopback", "http://rebind.example.com:8765/mcp", "::1", false, kSelf},
    {"NameToSelfUnspecified", "http://rebind.example.com:8765/mcp", "0.0.0.0", false, kSelf},
    {"NameToOtherLoopback", "http://rebind.example.com:8765/mcp", "127.3.2.1", false, kSelf},
    {"NameToLoopbackOtherPort", "http://rebind.example.com:9000/mcp", "127.0.0.1", true,
     "not a forbidden address"},
    {"NameToMetadata", "http://rebind.example.com/latest", "169.254.169.254", false, kMetadata},
    {"NameToMappedMetadata", "http://rebind.example.com/", "::ffff:169.254.169.254", false,
     kMetadata},
    {"NameToIpv6Metadata", "http://rebind.example.com/", "fd00:ec2::254", false, kMetadata},
    {"NameToPublic", "http://mcp.example.com:8765/mcp", "93.184.216.34", true,
     "not a forbidden address"},
};

class ForbiddenAddressTable : public testing::TestWithParam<ResolvedRow> {};

TEST_P(ForbiddenAddressTable, VerdictAndReason) {
  const ResolvedRow& row = GetParam();
  const policy::ParseResult parsed = policy::parseUrl(row.url);
  ASSERT_TRUE(parsed.url.has_value()) << parsed.error;
  const std::optional<policy::IpAddress> resolved = policy::parseIpAddress(row.resolved);
  ASSERT_TRUE(resolved.has_value());
  const policy::Decision decision =
      policy::decideForbiddenAddress(*parsed.url, *resolved, loopbackServer());
  EXPECT_EQ(decision.allowed(), row.allowed) << decision.reason;
  EXPECT_NE(decision.reason.find(row.reason), std::string::npos)
      << "reason '" << decision.reason << "' lacks '" << row.reason << "'";
}

INSTANTIATE_TEST_SUITE_P(Unit, ForbiddenAddressTable, testing::ValuesIn(kResolvedRows),
                         [](const testing::TestParamInfo<ResolvedRow>& row_info) {
                           return row_info.param.name;
                         });

TEST(ForbiddenUrl, NonLoopbackBindIsMatchedExactly) {
  const std::vector<policy::Endpoint> server = {*policy::parseEndpoint("10.0.0.5:8765")};
  const auto self = policy::parseUrl("http://10.0.0.5:8765/mcp");
  EXPECT_FALSE(policy::decideForbiddenUrl(*self.url, server).allowed());
  const auto mapped = policy::parseUrl("http://[::ffff:10.0.0.5]:8765/mcp");
  EXPECT_FALSE(policy::decideForbiddenUrl(*mapped.url, server).allowed());
  const auto other = policy::parseUrl("http://10.0.0.6:8765/mcp");
  EXPECT_TRUE(policy::decideForbiddenUrl(*other.url, server).allowed());
}

TEST(ForbiddenUrl, NoServerEndpointsStillForbidsMetadata) {
  const auto url = policy::parseUrl("http://169.254.169.254/");
  EXPECT_FALSE(policy::decideForbiddenUrl(*url.url, {}).allowed());
  const auto loopback = policy::parseUrl("http://127.0.0.1:8765/");
  EXPECT_TRUE(policy::decideForbiddenUrl(*loopback.url, {}).allowed());
}

TEST(Endpoint, ParsesAndPrints) {
  EXPECT_EQ(policy::parseEndpoint("127.0.0.1:8765")->toString(), "127.0.0.1:8765");
  EXPECT_EQ(policy::parseEndpoint("[::1]:8765")->toString(), "[::1]:8765");
  EXPECT_FALSE(policy::parseEndpoint("::1:8765").has_value());
  EXPECT_FALSE(policy::parseEndpoint("127.0.0.1:0").has_value());
  EXPECT_FALSE(policy::parseEndpoint("127.0.0.1:65536").has_value());
  EXPECT_FALSE(policy::parseEndpoint("localhost:80").has_value());
  EXPECT_FALSE(policy::parseEndpoint("127.0.0.1").has_value());
}

}  // namespace
