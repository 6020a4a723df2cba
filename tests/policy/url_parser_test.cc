// Table test for parseUrl's canonical form: what each accepted spelling becomes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/policy.h"

namespace {

struct Row {
  std::string name;
  std::string input;
  std::string canonical;
  policy::HostKind kind;
};

std::ostream& operator<<(std::ostream& out, const Row& row) { return out << row.name; }

using policy::HostKind;

const std::vector<Row> kRows = {
    {"NoPathBecomesSlash", "http://example.com", "http://example.com/", HostKind::kDomain},
    {"QueryWithoutPath", "http://example.com?a=1", "http://example.com/?a=1", HostKind::kDomain},
    {"DefaultHttpPortDropped", "http://example.com:80/x", "http://example.com/x",
     HostKind::kDomain},
    {"DefaultHttpsPortDropped", "https://example.com:443/x", "https://example.com/x",
     HostKind::kDomain},
    {"HttpsPortOnHttpKept", "http://example.com:443/x", "http://example.com:443/x",
     HostKind::kDomain},
    {"CaseAndTrailingDot", "HTTPS://Example.COM.:8443/A", "https://example.com:8443/A",
     HostKind::kDomain},
    {"Ipv4Decimal", "http://2130706433/", "http://127.0.0.1/", HostKind::kIpv4},
    {"Ipv4Octal", "http://0177.0.0.01/", "http://127.0.0.1/", HostKind::kIpv4},
    {"Ipv4Hex", "http://0x7F.0X0.0.0x1/", "http://127.0.0.1/", HostKind::kIpv4},
    {"Ipv4EmptyHex", "http://0x.0x.0x.0x/", "http://0.0.0.0/", HostKind::kIpv4},
    {"Ipv4TwoParts", "http://10.65535/", "http://10.0.255.255/", HostKind::kIpv4},
    {"Ipv6Compressed", "http://[2001:DB8:0:0:0:0:0:1]/", "http://[2001:db8::1]/", HostKind::kIpv6},
    {"Ipv6LongestZeroRun", "http://[1:0:0:2:0:0:0:3]/", "http://[1:0:0:2::3]/", HostKind::kIpv6},
    {"Ipv6FirstOfEqualRuns", "http://[1:0:0:2:0:0:3:4]/", "http://[1::2:0:0:3:4]/",
     HostKind::kIpv6},
    {"Ipv6SingleZeroNotCompressed", "http://[1:0:2:3:4:5:6:7]/", "http://[1:0:2:3:4:5:6:7]/",
     HostKind::kIpv6},
    {"Ipv6EmbeddedIpv4", "http://[64:ff9b::1.2.3.4]/", "http://[64:ff9b::102:304]/",
     HostKind::kIpv6},
    {"Ipv6MappedToIpv4", "http://[::ffff:10.0.0.1]:8080/", "http://10.0.0.1:8080/",
     HostKind::kIpv4},
    {"Ipv6Unspecified", "http://[::]/", "http://[::]/", HostKind::kIpv6},
    {"DotSegments", "http://h/a/./b/../c/", "http://h/a/c/", HostKind::kDomain},
    {"TrailingDot", "http://h/a/.", "http://h/a/", HostKind::kDomain},
    {"EncodedUnreservedDecoded", "http://h/%7Euser/%41%2D", "http://h/~user/A-", HostKind::kDomain},
    {"EncodedReservedUppercased", "http://h/a%3ab%3F", "http://h/a%3Ab%3F", HostKind::kDomain},
    {"StrayCharactersEncoded", "http://h/{x}|\"y\"", "http://h/%7Bx%7D%7C%22y%22",
     HostKind::kDomain},
    {"SubDelimsKept", "http://h/a;b=c,d!$&'()*+:@", "http://h/a;b=c,d!$&'()*+:@",
     HostKind::kDomain},
    {"QueryKeptVerbatim", "http://h/p?a=%2f&b=..%5c", "http://h/p?a=%2f&b=..%5c",
     HostKind::kDomain},
    {"UnderscoreInHost", "http://my_host.local/", "http://my_host.local/", HostKind::kDomain},
};

class ParseUrlTable : public testing::TestWithParam<Row> {};

TEST_P(ParseUrlTable, CanonicalForm) {
  const Row& row = GetParam();
  const policy::ParseResult parsed = policy::parseUrl(row.input);
  ASSERT_TRUE(parsed.url.has_value()) << parsed.error;
  EXPECT_EQ(parsed.url->toString(), row.canonical);
  EXPECT_EQ(parsed.url->host_kind, row.kind);
  // The canonical form is a fixed point.
  const policy::ParseResult again = policy::parseUrl(parsed.url->toString());
  ASSERT_TRUE(again.url.has_value()) << again.error;
  EXPECT_EQ(*again.url, *parsed.url);
}

INSTANTIATE_TEST_SUITE_P(Unit, ParseUrlTable, testing::ValuesIn(kRows),
                         [](const testing::TestParamInfo<Row>& row_info) {
                           return row_info.param.name;
                         });

TEST(Unit, ParseUrlFillsEveryField) {
  const policy::ParseResult parsed = policy::parseUrl("https://Host.example:8443/a/../b?x=1");
  ASSERT_TRUE(parsed.url.has_value()) << parsed.error;
  EXPECT_EQ(parsed.url->scheme, "https");
  EXPECT_EQ(parsed.url->host, "host.example");
  EXPECT_EQ(parsed.url->port, 8443);
  EXPECT_EQ(parsed.url->path, "/b");
  EXPECT_EQ(parsed.url->query, "x=1");
  EXPECT_EQ(parsed.url->origin(), "https://host.example:8443");
  EXPECT_TRUE(parsed.error.empty());
}

TEST(Unit, ParseUrlDefaultPortIsStored) {
  EXPECT_EQ(policy::parseUrl("http://h/").url->port, 80);
  EXPECT_EQ(policy::parseUrl("https://h/").url->port, 443);
}

TEST(Unit, ParseUrlRejectsOverlongInput) {
  const std::string long_path(9000, 'a');
  const policy::ParseResult parsed = policy::parseUrl("http://h/" + long_path);
  EXPECT_FALSE(parsed.url.has_value());
  EXPECT_NE(parsed.error.find("longer than 8192"), std::string::npos);
}

TEST(Unit, ParseUrlRejectsOverlongHostLabel) {
  const policy::ParseResult parsed = policy::parseUrl("http://" + std::string(64, 'a') + "/");
  EXPECT_FALSE(parsed.url.has_value());
  EXPECT_NE(parsed.error.find("label longer than 63"), std::string::npos);
}

}  // namespace
