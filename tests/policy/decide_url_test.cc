// Table test for decideUrl over URL text: every canonicalization trick from the sidecar issue,
// each row asserting the verdict and the reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/policy.h"

namespace {

using namespace std::string_literals;
using policy::Verdict;

struct Row {
  std::string name;
  std::string url;
  Verdict verdict;
  std::string reason;  // substring the reason must contain
};

std::ostream& operator<<(std::ostream& out, const Row& row) { return out << row.name; }

const policy::Policy& testPolicy() {
  static const auto loaded = policy::loadPolicy(nlohmann::json::parse(R"([
    "http://localhost:8265/mcp",
    "https://mcp.example.com/mcp",
    "http://127.0.0.1:9000/api/",
    "http://[::1]:7000/",
    {"url": "https://tools.example.org/v1/mcp", "id": "search-only",
     "methods": ["tools/list", "tools/call"], "tools": ["search"]}
  ])"));
  return *loaded;
}

constexpr Verdict kAllow = Verdict::kAllow;
constexpr Verdict kDeny = Verdict::kDeny;

const std::vector<Row> kRows = {
    // Plain matches and prefixes on segment boundaries.
    {"ExactPrefix", "http://localhost:8265/mcp", kAllow, "allowed by allowlist[0]"},
    {"PrefixWithSlash", "http://localhost:8265/mcp/", kAllow, "allowed by allowlist[0]"},
    {"PrefixSubPath", "http://localhost:8265/mcp/session/1", kAllow, "allowlist[0]"},
    {"PrefixWithQuery", "http://localhost:8265/mcp?session=1", kAllow, "allowlist[0]"},
    {"PrefixNotOnSegmentBoundary", "http://localhost:8265/mcpx", kDeny,
     "path '/mcpx' is outside the allowed prefixes"},
    {"PathIsCaseSensitive", "http://localhost:8265/MCP", kDeny, "outside the allowed prefixes"},
    {"DoubleSlashIsNotThePrefix", "http://localhost:8265//mcp", kDeny, "path '//mcp'"},
    {"RootOfAllowedHost", "http://localhost:8265/", kDeny, "path '/' is outside"},
    {"TrailingSlashPrefixNeedsSlash", "http://127.0.0.1:9000/api", kDeny, "path '/api' is outside"},
    {"TrailingSlashPrefixSubPath", "http://127.0.0.1:9000/api/tools", kAllow, "allowlist[2]"},
    {"UnknownHost", "http://evil.com/mcp", kDeny, "no allowlist entry covers http://evil.com"},
    {"SuffixOfAllowedHostIsAnotherHost", "https://mcp.example.com.evil.com/mcp", kDeny,
     "no allowlist entry covers https://mcp.example.com.evil.com"},
    {"PrefixOfAllowedHostIsAnotherHost", "https://evilmcp.example.com/mcp", kDeny,
     "no allowlist entry"},
    {"NamedRuleId", "https://tools.example.org/v1/mcp", kAllow, "allowed by search-only"},
    // Userinfo: "allowed@evil" and friends.
    {"UserinfoBeforeEvilHost", "http://localhost:8265@evil.com/mcp", kDeny,
     "userinfo ('user@host') not allowed"},
    {"UserinfoBeforeAllowedHost", "http://evil.com@localhost:8265/mcp", kDeny, "userinfo"},
    {"UserPasswordBeforeAllowedHost", "http://user:pass@localhost:8265/mcp", kDeny, "userinfo"},
    {"EmptyUserinfo", "http://@localhost:8265/mcp", kDeny, "userinfo"},
    {"EncodedAtInHost", "http://localhost%40evil.com:8265/mcp", kDeny,
     "percent-encoded host not allowed"},
    // Case and trailing-dot tricks.
    {"UppercaseScheme", "HTTP://localhost:8265/mcp", kAllow, "allowlist[0]"},
    {"UppercaseHost", "http://LocalHost:8265/mcp", kAllow, "allowlist[0]"},
    {"MixedCaseDomain", "https://MCP.Example.COM/mcp", kAllow, "allowlist[1]"},
    {"TrailingDotHost", "http://localhost.:8265/mcp", kAllow, "allowlist[0]"},
    {"TrailingDotDomain", "https://mcp.example.com./mcp", kAllow, "allowlist[1]"},
    {"TwoTrailingDots", "https://mcp.example.com../mcp", kDeny, "empty label in host"},
    {"EmptyLabel", "https://mcp..example.com/mcp", kDeny, "empty label in host"},
    // Percent-encoded and non-ASCII hosts.
    {"PercentEncodedHost", "http://%6c%6fcalhost:8265/mcp", kDeny, "percent-encoded host"},
    {"EncodedDotInHost", "https://mcp%2eexample.com/mcp", kDeny, "percent-encoded host"},
    {"CyrillicHomoglyphHost",
     "http://l\xd0\xbe"
     "calhost:8265/mcp",
     kDeny, "non-ASCII host; write its punycode (xn--) form"},
    {"FullwidthHost",
     "http://\xef\xbd\x8c"
     "ocalhost:8265/mcp",
     kDeny, "non-ASCII host"},
    {"PunycodeHostIsJustAnotherHost", "http://xn--lcalhost-2ng:8265/mcp", kDeny,
     "no allowlist entry"},
    {"ForbiddenHostCharacter", "http://local*host:8265/mcp", kDeny, "invalid character '*'"},
    // IPv4 in decimal, octal, hex and short forms.
    {"Ipv4DottedQuad", "http://127.0.0.1:9000/api/x", kAllow, "allowlist[2]"},
    {"Ipv4Decimal", "http://2130706433:9000/api/x", kAllow, "allowlist[2]"},
    {"Ipv4HexWhole", "http://0x7f000001:9000/api/x", kAllow, "allowlist[2]"},
    {"Ipv4Octal", "http://0177.0.0.1:9000/api/x", kAllow, "allowlist[2]"},
    {"Ipv4HexShort", "http://0x7f.1:9000/api/x", kAllow, "allowlist[2]"},
    {"Ipv4Short", "http://127.1:9000/api/x", kAllow, "allowlist[2]"},
    {"Ipv4ThreeParts", "http://127.0.1:9000/api/x", kAllow, "allowlist[2]"},
    {"Ipv4TrailingDot", "http://127.0.0.1.:9000/api/x", kAllow, "allowlist[2]"},
    {"Ipv4OtherAddress", "http://127.0.0.2:9000/api/x", kDeny,
     "no allowlist entry covers http://127.0.0.2:9000"},
    {"Ipv4DecimalOfMetadata", "http://2852039166/latest", kDeny,
     "no allowlist entry covers http://169.254.169.254"},
    {"Ipv4PartTooLarge", "http://256.0.0.1:9000/api/x", kDeny, "looks numeric but is not IPv4"},
    {"Ipv4FiveParts", "http://127.0.0.0.1:9000/api/x", kDeny, "not IPv4"},
    {"Ipv4Overflow", "http://4294967296:9000/api/x", kDeny, "not IPv4"},
    {"Ipv4BadOctalDigit", "http://09.0.0.1:9000/api/x", kDeny, "not IPv4"},
    {"DomainEndingInNumber", "http://example.123/mcp", kDeny, "not IPv4"},
    // IPv6 literal variants and IPv4-mapped IPv6.
    {"Ipv6Loopback", "http://[::1]:7000/x", kAllow, "allowlist[3]"},
    {"Ipv6FullForm", "http://[0:0:0:0:0:0:0:1]:7000/x", kAllow, "allowlist[3]"},
    {"Ipv6LeadingZeros", "http://[0000::0001]:7000/x", kAllow, "allowlist[3]"},
    {"Ipv6ZeroGroup", "http://[::0:1]:7000/", kAllow, "allowlist[3]"},
    {"Ipv6NoPath", "http://[::1]:7000", kAllow, "allowlist[3]"},
    {"Ipv6MappedDotted", "http://[::ffff:127.0.0.1]:9000/api/x", kAllow, "allowlist[2]"},
    {"Ipv6MappedHex", "http://[::FFFF:7f00:1]:9000/api/x", kAllow, "allowlist[2]"},
    {"Ipv6MappedIsIpv4NotIpv6", "http://[::ffff:0:1]:7000/", kDeny,
     "no allowlist entry covers http://0.0.0.1:7000"},
    {"Ipv6ZoneId", "http://[::1%25lo]:7000/", kDeny, "zone id"},
    {"Ipv6WithoutBrackets", "http://::1:7000/", kDeny, "must be in brackets"},
    {"Ipv6Unterminated", "http://[::1:7000/", kDeny, "unterminated '['"},
    {"Ipv6TextAfterBracket", "http://[::1]x:7000/", kDeny, "unexpected text after ']'"},
    {"Ipv6BadGroup", "http://[::g]:7000/", kDeny, "invalid IPv6 address"},
    {"Ipv6TooManyGroups", "http://[1:2:3:4:5:6:7:8:9]:7000/", kDeny, "invalid IPv6 address"},
    {"Ipv6TwoGaps", "http://[1::2::3]:7000/", kDeny, "invalid IPv6 address"},
    // Default-port equivalence and port syntax.
    {"HttpsDefaultPortExplicit", "https://mcp.example.com:443/mcp", kAllow, "allowlist[1]"},
    {"PortWithLeadingZeros", "https://mcp.example.com:0443/mcp", kAllow, "allowlist[1]"},
    {"OtherPort", "https://mcp.example.com:8443/mcp", kDeny,
     "no allowlist entry covers https://mcp.example.com:8443"},
    {"SchemeMismatch", "http://mcp.example.com/mcp", kDeny,
     "no allowlist entry covers http://mcp.example.com"},
    {"HttpPortOnHttps", "https://mcp.example.com:80/mcp", kDeny, "no allowlist entry"},
    {"PortZero", "http://localhost:0/mcp", kDeny, "out of range 1-65535"},
    {"PortTooLarge", "http://localhost:65536/mcp", kDeny, "out of range 1-65535"},
    {"PortHuge", "http://localhost:99999999999999999999/mcp", kDeny, "out of range"},
    {"PortEmpty", "http://localhost:/mcp", kDeny, "empty port"},
    {"PortNotNumber", "http://localhost:82a5/mcp", kDeny, "is not a number"},
    // Dot segments, encoded dots and encoded slashes in the path.
    {"DotSegmentsIntoPrefix", "http://localhost:8265/x/../mcp", kAllow, "allowlist[0]"},
    {"SingleDotSegments", "http://localhost:8265/./mcp/./x", kAllow, "allowlist[0]"},
    {"DotDotOutOfPrefix", "http://localhost:8265/mcp/../admin", kDeny, "path '/admin' is outside"},
    {"DotDotAboveRoot", "http://localhost:8265/../../mcp", kAllow, "allowlist[0]"},
    {"EncodedDotDotLower", "http://localhost:8265/mcp/%2e%2e/admin", kDeny, "path '/admin'"},
    {"EncodedDotDotUpper", "http://localhost:8265/mcp/%2E%2E/admin", kDeny, "path '/admin'"},
    {"HalfEncodedDotDot", "http://localhost:8265/mcp/.%2e/admin", kDeny, "path '/admin'"},
    {"TrailingDotDot", "http://localhost:8265/mcp/x/..", kAllow, "allowlist[0]"},
    {"DotDotWithParameters", "http://localhost:8265/mcp/..;/admin", kDeny,
     "dot segment with parameters"},
    {"EncodedUnreservedDecoded", "http://localhost:8265/%6Dcp", kAllow, "allowlist[0]"},
    {"EncodedSlashLower", "http://localhost:8265/mcp%2f..%2fadmin", kDeny, "encoded slash (%2F)"},
    {"EncodedSlashUpper", "http://localhost:8265/mcp/%2F", kDeny, "encoded slash"},
    {"EncodedBackslash", "http://localhost:8265/mcp%5c..%5cadmin", kDeny, "encoded slash (%5C)"},
    {"MalformedPercent", "http://localhost:8265/mcp/%zz", kDeny, "malformed percent-encoding"},
    {"TruncatedPercent", "http://localhost:8265/mcp/%2", kDeny, "malformed percent-encoding"},
    {"NonAsciiPath", "http://localhost:8265/mcp/caf\xc3\xa9", kDeny, "non-ASCII byte in path"},
    {"NonAsciiQuery", "http://localhost:8265/mcp?q=\xc3\xa9", kDeny, "non-ASCII byte in query"},
    // Backslashes.
    {"BackslashInPath", "http://localhost:8265/mcp\\..\\admin", kDeny, "backslash at offset"},
    {"BackslashBeforeAt", "http://localhost:8265\\@evil.com/mcp", kDeny, "backslash"},
    {"BackslashAsSlashes", "http:\\\\localhost:8265/mcp", kDeny, "backslash"},
    // Whitespace and control characters anywhere.
    {"SpaceInAuthority", "http://localhost:8265 /mcp", kDeny,
     "whitespace or control character %20"},
    {"TabInHost", "http://local\thost:8265/mcp", kDeny, "control character %09"},
    {"NewlineAtEnd", "http://localhost:8265/mcp\n", kDeny, "control character %0A"},
    {"LeadingSpace", " http://localhost:8265/mcp", kDeny, "at offset 0"},
    {"NulInPath", "http://localhost:8265/mc\0p"s, kDeny, "control character %00"},
    {"DeleteCharacter", "http://localhost:8265/mcp\x7f", kDeny, "control character %7F"},
    {"EncodedNul", "http://localhost:8265/mcp%00", kDeny, "encoded control character %00"},
    {"EncodedNewline", "http://localhost:8265/mcp%0a/x", kDeny, "encoded control character %0A"},
    // Schemes and shapes that are not absolute http(s) URLs.
    {"FtpScheme", "ftp://localhost:8265/mcp", kDeny, "unsupported scheme 'ftp'"},
    {"FileScheme", "file:///etc/passwd", kDeny, "unsupported scheme 'file'"},
    {"SchemeRelative", "//localhost:8265/mcp", kDeny, "missing scheme"},
    {"NoScheme", "localhost:8265/mcp", kDeny, "unsupported scheme 'localhost'"},
    {"SingleSlash", "http:/localhost:8265/mcp", kDeny, "expected '//'"},
    {"EmptyHost", "http:///mcp", kDeny, "empty host"},
    {"EmptyUrl", "", kDeny, "empty URL"},
    {"Fragment", "http://localhost:8265/mcp#x", kDeny, "fragment ('#') not allowed"},
};

class DecideUrlTable : public testing::TestWithParam<Row> {};

TEST_P(DecideUrlTable, VerdictAndReason) {
  const Row& row = GetParam();
  const policy::Decision decision = policy::decideUrl(testPolicy(), row.url);
  EXPECT_EQ(decision.verdict, row.verdict) << "reason: " << decision.reason;
  EXPECT_NE(decision.reason.find(row.reason), std::string::npos)
      << "reason '" << decision.reason << "' lacks '" << row.reason << "'";
  if (decision.allowed()) {
    EXPECT_FALSE(decision.rule_id.empty());
  } else {
    EXPECT_TRUE(decision.rule_id.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Unit, DecideUrlTable, testing::ValuesIn(kRows),
                         [](const testing::TestParamInfo<Row>& row_info) {
                           return row_info.param.name;
                         });

TEST(Unit, DecideUrlTableHasAtLeastSixtyRows) { EXPECT_GE(kRows.size(), 60U); }

TEST(Unit, EmptyPolicyDeniesEverything) {
  const policy::Policy empty;
  const policy::Decision decision = policy::decideUrl(empty, "http://localhost:8265/mcp");
  EXPECT_FALSE(decision.allowed());
  EXPECT_NE(decision.reason.find("no allowlist entry"), std::string::npos);
}

TEST(Unit, FirstMatchingRuleWins) {
  const auto loaded = policy::loadPolicy(nlohmann::json::parse(R"([
    {"url": "http://localhost:1/a/b", "id": "narrow"},
    {"url": "http://localhost:1/a", "id": "broad"}
  ])"));
  EXPECT_EQ(policy::decideUrl(*loaded, "http://localhost:1/a/b/c").rule_id, "narrow");
  EXPECT_EQ(policy::decideUrl(*loaded, "http://localhost:1/a/x").rule_id, "broad");
}

}  // namespace
