#include "sidecar/dns_pinning.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace {

policy::IpAddress ip(const char* text) { return *policy::parseIpAddress(text); }

struct Fixture {
  std::shared_ptr<const policy::Policy> policy = policy::loadPolicy(nlohmann::json::array(
      {"http://localhost:9000/", "https://mcp.example.com/", "http://127.0.0.1:9001/"}));
  policy::Url url(const char* text) const { return *policy::parseUrl(text).url; }
};

TEST(DnsPinning, PicksTheFirstAllowedAddressAndBuildsTheResolveEntry) {
  const Fixture f;
  const auto url = f.url("https://mcp.example.com/mcp");
  const auto& rule = f.policy->rules[1];
  // A private address first (rebinding attempt), then a public one: the public one is pinned.
  const auto pin = sidecar::pinFirstAllowed(rule, url, {ip("10.0.0.5"), ip("93.184.216.34")});
  ASSERT_TRUE(pin.decision.allowed()) << pin.decision.reason;
  EXPECT_EQ(pin.address, "93.184.216.34");
  EXPECT_EQ(pin.curl_resolve, "mcp.example.com:443:93.184.216.34");
}

TEST(DnsPinning, OnlySpecialAddressesAreDeniedWithTheFirstReason) {
  const Fixture f;
  const auto url = f.url("https://mcp.example.com/mcp");
  const auto pin =
      sidecar::pinFirstAllowed(f.policy->rules[1], url, {ip("169.254.169.254"), ip("127.0.0.1")});
  EXPECT_FALSE(pin.decision.allowed());
  EXPECT_FALSE(pin.lookup_failed);
  EXPECT_EQ(pin.address, "169.254.169.254");
  EXPECT_NE(pin.decision.reason.find("169.254.169.254"), std::string::npos);
  EXPECT_TRUE(pin.curl_resolve.empty());
}

TEST(DnsPinning, Ipv6AddressesAreBracketedInTheResolveEntry) {
  const Fixture f;
  EXPECT_EQ(sidecar::curlResolveEntry(f.url("http://localhost:9000/"), ip("::1")),
            "localhost:9000:[::1]");
}

TEST(DnsPinning, LocalhostResolvesToAnAllowedLoopbackAddress) {
  const Fixture f;
  const auto url = f.url("http://localhost:9000/mcp");
  const auto pin = sidecar::resolveAndPin(f.policy->rules[0], url);
  ASSERT_TRUE(pin.decision.allowed()) << pin.decision.reason;
  EXPECT_TRUE(pin.address == "127.0.0.1" || pin.address == "::1") << pin.address;
  EXPECT_EQ(pin.curl_resolve.rfind("localhost:9000:", 0), 0U);
}

TEST(DnsPinning, IpLiteralsAreCheckedWithoutLookupOrResolveEntry) {
  const Fixture f;
  const auto pin = sidecar::resolveAndPin(f.policy->rules[2], f.url("http://127.0.0.1:9001/x"));
  ASSERT_TRUE(pin.decision.allowed()) << pin.decision.reason;
  EXPECT_EQ(pin.address, "127.0.0.1");
  EXPECT_TRUE(pin.curl_resolve.empty());
}

}  // namespace
