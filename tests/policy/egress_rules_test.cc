// Table tests for the egress gateway's rules (policy/egress.h): entries and their errors, host
// patterns, CONNECT targets, the decision before DNS (every spelling of an address folds to the
// one a rule names; metadata and the server's own endpoints never pass), after DNS, and how a
// call's profiles and entries combine with the operator's lists without widening them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/egress.h"

namespace {

using nlohmann::json;
using policy::Verdict;

policy::EgressPolicy load(const char* text) {
  return policy::loadEgressRules(json::parse(text), "egress.allow");
}

const policy::EgressPolicy& operatorList() {
  static const auto rules = load(R"([
    "pypi.org",
    "*.pythonhosted.org",
    "registry.npmjs.org:443",
    {"host": "git.example.com", "ports": [443, 9418], "id": "git"},
    "127.0.0.1:8443",
    "localhost:3128",
    "169.254.169.254:80"
  ])");
  return rules;
}

std::vector<policy::Endpoint> serverEndpoints() {
  return {*policy::parseEndpoint("127.0.0.1:8765")};
}

struct Row {
  std::string target;  // a CONNECT target
  Verdict verdict;
  std::string reason;  // a substring of the reason
};

TEST(EgressRules, DecidesConnectTargetsBeforeDns) {
  const std::vector<Row> rows = {
      {"pypi.org:443", Verdict::kAllow, "allowed by egress.allow[0]"},
      {"PyPI.org.:443", Verdict::kAllow, "allowed by egress.allow[0]"},
      {"pypi.org:80", Verdict::kDeny, "no entry of this session's egress list covers it"},
      {"files.pythonhosted.org:443", Verdict::kAllow, "egress.allow[1]"},
      {"a.b.pythonhosted.org:443", Verdict::kAllow, "egress.allow[1]"},
      {"pythonhosted.org:443", Verdict::kDeny, "not allowed"},
      {"evilpythonhosted.org:443", Verdict::kDeny, "not allowed"},
      {"pythonhosted.org.evil.com:443", Verdict::kDeny, "not allowed"},
      {"git.example.com:9418", Verdict::kAllow, "allowed by git"},
      {"git.example.com:22", Verdict::kDeny, "git.example.com:22"},
      {"127.0.0.1:8443", Verdict::kAllow, "egress.allow[4]"},
      {"0x7f.0.0.1:8443", Verdict::kAllow, "egress.allow[4]"},
      {"2130706433:8443", Verdict::kAllow, "egress.allow[4]"},
      {"0177.0.0.1:8443", Verdict::kAllow, "egress.allow[4]"},
      {"[::ffff:127.0.0.1]:8443", Verdict::kAllow, "egress.allow[4]"},
      {"127.0.0.2:8443", Verdict::kDeny, "not allowed"},
      {"169.254.169.254:80", Verdict::kDeny, "metadata"},
      {"0xa9fea9fe:80", Verdict::kDeny, "metadata"},
      {"example.org:443", Verdict::kDeny, "egress.allow or a profile"},
  };
  for (const auto& row : rows) {
    const auto target = policy::parseConnectTarget(row.target);
    ASSERT_TRUE(target.url) << row.target << ": " << target.error;
    const auto decision = policy::decideEgress(operatorList(), *target.url, serverEndpoints());
    EXPECT_EQ(decision.verdict, row.verdict) << row.target << ": " << decision.reason;
    EXPECT_NE(decision.reason.find(row.reason), std::string::npos)
        << row.target << ": " << decision.reason;
  }
}

TEST(EgressRules, NeverOpensTheServersOwnEndpoint) {
  const auto rules = load(R"(["127.0.0.1:8765", "localhost:8765"])");
  for (const char* text : {"127.0.0.1:8765", "localhost:8765"}) {
    const auto target = policy::parseConnectTarget(text);
    ASSERT_TRUE(target.url) << text;
    const auto decision = policy::decideEgress(rules, *target.url, serverEndpoints());
    EXPECT_FALSE(decision.allowed()) << text << ": " << decision.reason;
  }
}

TEST(EgressRules, ConnectTargetsAreHostAndPortOnly) {
  for (const char* good : {"pypi.org:443", "[::1]:443", "10.0.0.1:8080"}) {
    EXPECT_TRUE(policy::parseConnectTarget(good).url) << good;
  }
  for (const char* bad :
       {"pypi.org", "[::1]", "user@pypi.org:443", "pypi.org:443/x", "pypi.org:0", "pypi.org:65536",
        "pypi.org:443?x", "pypi .org:443", "", ":443", "pypi.org:https"}) {
    const auto parsed = policy::parseConnectTarget(bad);
    EXPECT_FALSE(parsed.url) << bad;
    EXPECT_FALSE(parsed.error.empty()) << bad;
  }
}

TEST(EgressRules, ChecksEachResolvedAddress) {
  struct AddressRow {
    std::string target;
    std::string resolved;
    Verdict verdict;
  };
  const std::vector<AddressRow> rows = {
      {"pypi.org:443", "151.101.0.223", Verdict::kAllow},
      {"pypi.org:443", "10.0.0.5", Verdict::kDeny},         // a public name, a private address
      {"pypi.org:443", "127.0.0.1", Verdict::kDeny},        // DNS rebinding to loopback
      {"pypi.org:443", "169.254.169.254", Verdict::kDeny},  // metadata
      {"files.pythonhosted.org:443", "192.168.1.1", Verdict::kDeny},  // a wildcard is no consent
      {"127.0.0.1:8443", "127.0.0.1", Verdict::kAllow},               // the rule names the address
      {"localhost:3128", "::1", Verdict::kAllow},                     // localhost names loopback
      {"localhost:3128", "10.1.1.1", Verdict::kDeny},
  };
  for (const auto& row : rows) {
    const auto target = policy::parseConnectTarget(row.target);
    ASSERT_TRUE(target.url) << row.target;
    const auto* rule = policy::findEgressRule(operatorList(), *target.url);
    ASSERT_NE(rule, nullptr) << row.target;
    const auto decision = policy::decideEgressAddress(
        *rule, *target.url, *policy::parseIpAddress(row.resolved), serverEndpoints());
    EXPECT_EQ(decision.verdict, row.verdict)
        << row.target << " -> " << row.resolved << ": " << decision.reason;
  }
}

TEST(EgressRules, RefusesEntriesThatAreNotHosts) {
  struct Bad {
    std::string entries;
    std::string error;
  };
  const std::vector<Bad> rows = {
      {R"(["*"])", "every host"},
      {R"(["*.com"])", "top-level domain"},
      {R"(["*.10.0.0.1"])", "not addresses"},
      {R"(["https://pypi.org"])", "not a host name"},
      {R"(["pypi.org/simple"])", "not a host name"},
      {R"(["user@pypi.org"])", "not a host name"},
      {R"(["pypi.org:0"])", "no valid port"},
      {R"(["pypi.org:99999"])", "no valid port"},
      {R"([""])", "empty host"},
      {R"([42])", "an entry is a host"},
      {R"([{"host": "pypi.org", "port": 443}])", "not a known setting"},
      {R"([{"host": "pypi.org", "ports": []}])", "non-empty list"},
      {R"([{"host": "pypi.org", "ports": [0]}])", "1 to 65535"},
      {R"([{"ports": [443]}])", "\"host\" (a string) is required"},
      {R"("pypi.org")", "must be a list"},
  };
  for (const auto& row : rows) {
    try {
      (void)load(row.entries.c_str());
      ADD_FAILURE() << row.entries << " was accepted";
    } catch (const policy::PolicyError& e) {
      EXPECT_NE(std::string(e.what()).find(row.error), std::string::npos)
          << row.entries << ": " << e.what();
    }
  }
}

TEST(EgressRules, HostPatternsCoverWhatTheyMatch) {
  const auto rules =
      load(R"(["*.example.com", "example.com", "a.example.com", "*.a.example.com"])");
  const auto& wildcard = rules.rules[0].host;
  const auto& exact = rules.rules[1].host;
  const auto& sub = rules.rules[2].host;
  const auto& deeper = rules.rules[3].host;
  EXPECT_TRUE(wildcard.covers(sub));
  EXPECT_TRUE(wildcard.covers(deeper));
  EXPECT_TRUE(wildcard.covers(wildcard));
  EXPECT_FALSE(wildcard.covers(exact)) << "*.example.com does not match example.com itself";
  EXPECT_FALSE(exact.covers(sub));
  EXPECT_FALSE(sub.covers(deeper));
  EXPECT_FALSE(deeper.covers(wildcard));
  EXPECT_EQ(wildcard.toString(), "*.example.com");
}

TEST(EgressRules, ACallPicksProfilesAndNarrowsButNeverWidens) {
  policy::EgressCatalog catalog;
  catalog.allow = load(R"(["pypi.org"])");
  catalog.profiles["npm-packages"] =
      policy::loadEgressRules(json::parse(R"(["registry.npmjs.org"])"), "egress.profiles.npm");
  catalog.profiles["git-hosting"] = policy::loadEgressRules(
      json::parse(R"([{"host": "*.example.com", "ports": [443, 9418]}])"), "egress.profiles.git");

  const auto base = policy::effectiveEgress(catalog, {}, {});
  EXPECT_EQ(base.rules.size(), 1U) << "the operator's allow list alone";
  const auto with_npm = policy::effectiveEgress(catalog, {"npm-packages"}, {});
  EXPECT_EQ(with_npm.rules.size(), 2U);

  const auto narrowed = policy::effectiveEgress(
      catalog, {"git-hosting"},
      policy::loadEgressRules(json::parse(R"(["code.example.com:9418"])"), "egress"));
  ASSERT_EQ(narrowed.rules.size(), 1U);
  const auto inside = policy::parseConnectTarget("code.example.com:9418");
  EXPECT_TRUE(policy::decideEgress(narrowed, *inside.url, {}).allowed());
  const auto outside = policy::parseConnectTarget("pypi.org:443");
  EXPECT_FALSE(policy::decideEgress(narrowed, *outside.url, {}).allowed())
      << "entries narrow: what they do not name is gone";

  for (const char* wider : {R"(["evil.com"])", R"(["pypi.org:80"])", R"(["*.org"])",
                            R"(["*.pypi.org"])", R"(["registry.npmjs.org"])"}) {
    EXPECT_THROW((void)policy::effectiveEgress(
                     catalog, {}, policy::loadEgressRules(json::parse(wider), "egress")),
                 policy::PolicyError)
        << wider;
  }
  try {
    (void)policy::effectiveEgress(catalog, {"everything"}, {});
    ADD_FAILURE() << "an unknown profile was accepted";
  } catch (const policy::PolicyError& e) {
    EXPECT_NE(std::string(e.what()).find("git-hosting, npm-packages"), std::string::npos)
        << e.what();
  }
}

}  // namespace
