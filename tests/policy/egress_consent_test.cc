// requirePublicHosts: a call's own mcp_allowlist (the model's choice) may name public hosts
// only; every special address spelling and every local name needs the operator.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/policy.h"

namespace {

using nlohmann::json;

struct ConsentRow {
  std::string name;
  std::string url;
  std::string refusal;  // empty: allowed; else a substring of the PolicyError
};

std::ostream& operator<<(std::ostream& out, const ConsentRow& row) { return out << row.name; }

const std::vector<ConsentRow> kRows = {
    {"PublicName", "https://mcp.example.com/mcp", ""},
    {"PublicAddress", "http://93.184.216.34/mcp", ""},
    {"PublicIpv6", "http://[2606:4700::1111]/mcp", ""},
    {"Loopback", "http://127.0.0.1:9000/mcp", "127.0.0.1 is a loopback address"},
    {"LoopbackShort", "http://127.1:9000/mcp", "127.0.0.1 is a loopback address"},
    {"LoopbackDecimal", "http://2130706433:9000/", "127.0.0.1 is a loopback address"},
    {"LoopbackMapped", "http://[::ffff:127.0.0.1]:9000/", "127.0.0.1 is a loopback address"},
    {"Ipv6Loopback", "http://[::1]:9000/", "::1 is a loopback address"},
    {"Unspecified", "http://0.0.0.0:9000/", "0.0.0.0 is an unspecified address"},
    {"Private10", "http://10.1.2.3/", "a private address"},
    {"Private172", "http://172.16.0.1/", "a private address"},
    {"Private192", "http://192.168.1.1/", "a private address"},
    {"PrivateMapped", "http://[::ffff:10.0.0.1]/", "a private address"},
    {"UniqueLocalIpv6", "http://[fd12::1]/", "a private address"},
    {"LinkLocal", "http://169.254.1.1/", "a link-local address"},
    {"Ipv6LinkLocal", "http://[fe80::1]/", "a link-local address"},
    {"Cgnat", "http://100.64.0.1/", "a shared (CGNAT) address"},
    {"Metadata", "http://169.254.169.254/", "a cloud metadata address"},
    {"Multicast", "http://224.0.0.1/", "a multicast address"},
    {"Documentation", "http://[2001:db8::1]/", "a reserved address"},
    {"Localhost", "http://localhost:8765/mcp", "localhost is a local name"},
    {"SubLocalhost", "http://mcp.localhost/", "a local name"},
    {"SingleLabel", "http://intranet/mcp", "intranet is a local name"},
    {"MdnsName", "http://printer.local/", "a local name"},
    {"InternalName", "http://db.internal/", "a local name"},
    {"HomeArpa", "http://nas.home.arpa/", "a local name"},
};

class RequirePublicHostsTable : public testing::TestWithParam<ConsentRow> {};

TEST_P(RequirePublicHostsTable, AllowsOnlyPublicHosts) {
  const ConsentRow& row = GetParam();
  const auto requested = policy::loadPolicy(json::array({row.url}));
  if (row.refusal.empty()) {
    EXPECT_NO_THROW(policy::requirePublicHosts(*requested));
    EXPECT_FALSE(policy::needsOperatorConsent(requested->rules.front().base));
    return;
  }
  EXPECT_TRUE(policy::needsOperatorConsent(requested->rules.front().base));
  try {
    policy::requirePublicHosts(*requested);
    FAIL() << "expected a refusal containing '" << row.refusal << "'";
  } catch (const policy::PolicyError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find(row.refusal), std::string::npos) << what;
    // The refusal says what the operator must configure.
    EXPECT_NE(what.find("the operator must add " + requested->rules.front().base.toString() +
                        " to mcp.allowlist"),
              std::string::npos)
        << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Unit, RequirePublicHostsTable, testing::ValuesIn(kRows),
                         [](const testing::TestParamInfo<ConsentRow>& row_info) {
                           return row_info.param.name;
                         });

TEST(RequirePublicHosts, NamesTheFirstSpecialEntry) {
  const auto requested =
      policy::loadPolicy(json::array({"https://mcp.example.com/", "http://127.0.0.1:8765/mcp"}));
  try {
    policy::requirePublicHosts(*requested);
    FAIL() << "expected a refusal";
  } catch (const policy::PolicyError& error) {
    EXPECT_NE(std::string(error.what()).find("allowlist[1]: 127.0.0.1"), std::string::npos)
        << error.what();
  }
}

TEST(RequirePublicHosts, OperatorRuleNamingLoopbackStillNarrows) {
  // With an operator list the special host is allowed when the operator names it (narrow).
  const auto operator_policy = policy::loadPolicy(json::array({"http://127.0.0.1:9000/"}));
  const auto requested = policy::loadPolicy(json::array({"http://127.0.0.1:9000/mcp"}));
  EXPECT_EQ(policy::narrow(*operator_policy, *requested)->rules.size(), 1u);
}

}  // namespace
