// Tables for classifyAddress and decideAddress (the check after DNS resolution).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/policy.h"

namespace {

using policy::AddressClass;

struct ClassRow {
  std::string name;
  std::string address;
  AddressClass expected;
};

std::ostream& operator<<(std::ostream& out, const ClassRow& row) { return out << row.name; }

const std::vector<ClassRow> kClassRows = {
    {"PublicIpv4", "8.8.8.8", AddressClass::kPublic},
    {"ThisNetwork", "0.0.0.0", AddressClass::kUnspecified},
    {"ThisNetworkRange", "0.1.2.3", AddressClass::kUnspecified},
    {"Private10", "10.1.2.3", AddressClass::kPrivate},
    {"Private172Low", "172.16.0.1", AddressClass::kPrivate},
    {"Private172High", "172.31.255.255", AddressClass::kPrivate},
    {"Public172Above", "172.32.0.1", AddressClass::kPublic},
    {"Private192", "192.168.1.1", AddressClass::kPrivate},
    {"Cgnat", "100.64.0.1", AddressClass::kSharedCgnat},
    {"Loopback", "127.0.0.1", AddressClass::kLoopback},
    {"LoopbackRange", "127.255.0.9", AddressClass::kLoopback},
    {"LinkLocal", "169.254.1.1", AddressClass::kLinkLocal},
    {"AwsMetadata", "169.254.169.254", AddressClass::kMetadata},
    {"EcsMetadata", "169.254.170.2", AddressClass::kMetadata},
    {"AlibabaMetadata", "100.100.100.200", AddressClass::kMetadata},
    {"IetfProtocol", "192.0.0.8", AddressClass::kReserved},
    {"Documentation", "203.0.113.5", AddressClass::kReserved},
    {"Benchmark", "198.19.1.1", AddressClass::kReserved},
    {"Multicast", "224.0.0.1", AddressClass::kMulticast},
    {"Broadcast", "255.255.255.255", AddressClass::kReserved},
    {"ClassE", "240.0.0.1", AddressClass::kReserved},
    {"Ipv6Public", "2606:4700::1111", AddressClass::kPublic},
    {"Ipv6Unspecified", "::", AddressClass::kUnspecified},
    {"Ipv6Loopback", "::1", AddressClass::kLoopback},
    {"Ipv6MappedLoopback", "::ffff:127.0.0.1", AddressClass::kLoopback},
    {"Ipv6MappedMetadata", "::ffff:a9fe:a9fe", AddressClass::kMetadata},
    {"Ipv6MappedPublic", "::ffff:8.8.8.8", AddressClass::kPublic},
    {"Ipv6CompatiblePrivate", "::10.0.0.1", AddressClass::kPrivate},
    {"Ipv6Nat64Loopback", "64:ff9b::7f00:1", AddressClass::kLoopback},
    {"Ipv6LinkLocal", "fe80::1", AddressClass::kLinkLocal},
    {"Ipv6UniqueLocal", "fd12:3456::1", AddressClass::kPrivate},
    {"Ipv6SiteLocal", "fec0::1", AddressClass::kPrivate},
    {"Ipv6AwsMetadata", "fd00:ec2::254", AddressClass::kMetadata},
    {"Ipv6Multicast", "ff02::1", AddressClass::kMulticast},
    {"Ipv6Documentation", "2001:db8::1", AddressClass::kReserved},
    {"Ipv6Teredo", "2001::1", AddressClass::kReserved},
    {"Ipv6SixToFour", "2002:7f00:1::1", AddressClass::kReserved},
    {"Ipv6Unallocated", "4000::1", AddressClass::kReserved},
};

class ClassifyAddressTable : public testing::TestWithParam<ClassRow> {};

TEST_P(ClassifyAddressTable, Class) {
  const ClassRow& row = GetParam();
  const std::optional<policy::IpAddress> address = policy::parseIpAddress(row.address);
  ASSERT_TRUE(address.has_value()) << row.address;
  EXPECT_EQ(policy::classifyAddress(*address), row.expected)
      << "got " << policy::toString(policy::classifyAddress(*address));
}

INSTANTIATE_TEST_SUITE_P(Unit, ClassifyAddressTable, testing::ValuesIn(kClassRows),
                         [](const testing::TestParamInfo<ClassRow>& row_info) {
                           return row_info.param.name;
                         });

TEST(Unit, ParseIpAddressIsStrict) {
  for (const char* text : {"127.1", "0x7f.0.0.1", "0177.0.0.1", "2130706433", "1.2.3.4.",
                           "256.1.1.1", "[::1]", "::1%lo", "1::2::3", "", "::ffff:1.2.3"}) {
    EXPECT_FALSE(policy::parseIpAddress(text).has_value()) << text;
  }
}

TEST(Unit, IpAddressRoundTripsThroughText) {
  for (const char* text :
       {"1.2.3.4", "::", "::1", "2001:db8::1", "::ffff:1.2.3.4", "fe80::1:2", "1:2:3:4:5:6:7:8"}) {
    const std::optional<policy::IpAddress> address = policy::parseIpAddress(text);
    ASSERT_TRUE(address.has_value()) << text;
    EXPECT_EQ(address->toString(), text);
  }
}

struct AddressRow {
  std::string name;
  std::string rule_url;
  std::string resolved;
  bool allowed;
  std::string reason;
};

std::ostream& operator<<(std::ostream& out, const AddressRow& row) { return out << row.name; }

const std::vector<AddressRow> kAddressRows = {
    {"PublicNameToPublicAddress", "https://mcp.example.com/mcp", "93.184.216.34", true,
     "resolved to public address 93.184.216.34"},
    {"PublicNameToMetadata", "https://mcp.example.com/mcp", "169.254.169.254", false,
     "resolved to cloud metadata address 169.254.169.254; never allowed"},
    {"PublicNameToLoopback", "https://mcp.example.com/mcp", "127.0.0.1", false,
     "loopback address 127.0.0.1"},
    {"PublicNameToMappedLoopback", "https://mcp.example.com/mcp", "::ffff:127.0.0.1", false,
     "loopback address ::ffff:127.0.0.1"},
    {"PublicNameToPrivate", "https://mcp.example.com/mcp", "10.0.0.5", false,
     "private address 10.0.0.5"},
    {"PublicNameToIpv6LinkLocal", "https://mcp.example.com/mcp", "fe80::1", false,
     "link-local address fe80::1"},
    {"LiteralLoopbackNamed", "http://127.0.0.1:9000/", "127.0.0.1", true, "names it explicitly"},
    {"LiteralLoopbackMappedResolution", "http://127.0.0.1:9000/", "::ffff:127.0.0.1", true,
     "names it explicitly"},
    {"LiteralOtherLoopbackAddress", "http://127.0.0.1:9000/", "127.0.0.2", false,
     "loopback address 127.0.0.2"},
    {"LiteralMetadataNamedIsStillDenied", "http://169.254.169.254/latest/", "169.254.169.254",
     false, "never allowed, not even by the operator"},
    {"LiteralIpv6MetadataNamedIsStillDenied", "http://[fd00:ec2::254]/", "fd00:ec2::254", false,
     "never allowed"},
    {"LiteralIpv6LoopbackNamed", "http://[::1]:7000/", "::1", true, "names it explicitly"},
    {"LocalhostToLoopback", "http://localhost:8265/mcp", "127.0.0.1", true,
     "loopback and allowlist[0] names localhost"},
    {"LocalhostToIpv6Loopback", "http://localhost:8265/mcp", "::1", true, "names localhost"},
    {"SubLocalhostToLoopback", "http://mcp.localhost:8265/mcp", "127.0.0.1", true,
     "names mcp.localhost"},
    {"LocalhostToPrivateIsNotConsent", "http://localhost:8265/mcp", "10.0.0.1", false,
     "private address 10.0.0.1"},
    {"LocalhostLookalikeNotConsent", "http://evillocalhost:8265/mcp", "127.0.0.1", false,
     "loopback address"},
};

class DecideAddressTable : public testing::TestWithParam<AddressRow> {};

TEST_P(DecideAddressTable, VerdictAndReason) {
  const AddressRow& row = GetParam();
  const auto loaded = policy::loadPolicy(nlohmann::json::array({row.rule_url}));
  const policy::Rule& rule = loaded->rules.front();
  const std::optional<policy::IpAddress> resolved = policy::parseIpAddress(row.resolved);
  ASSERT_TRUE(resolved.has_value());
  const policy::Decision decision = policy::decideAddress(rule, rule.base, *resolved);
  EXPECT_EQ(decision.allowed(), row.allowed) << decision.reason;
  EXPECT_NE(decision.reason.find(row.reason), std::string::npos)
      << "reason '" << decision.reason << "' lacks '" << row.reason << "'";
  EXPECT_EQ(decision.rule_id, "allowlist[0]");
}

INSTANTIATE_TEST_SUITE_P(Unit, DecideAddressTable, testing::ValuesIn(kAddressRows),
                         [](const testing::TestParamInfo<AddressRow>& row_info) {
                           return row_info.param.name;
                         });

}  // namespace
