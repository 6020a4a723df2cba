#include "transport/origin_check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

struct OriginRow {
  const char* name;
  const char* origin;
  bool allowed;
};

TEST(Unit, OriginMatchesDefaultAllowlist) {
  const auto allowlist = transport::defaultAllowedOrigins();
  const std::vector<OriginRow> rows = {
      {"localhost without port", "http://localhost", true},
      {"localhost with port", "http://localhost:6274", true},
      {"ipv4 loopback with port", "http://127.0.0.1:3000", true},
      {"ipv6 loopback with port", "http://[::1]:8080", true},
      {"host is case-insensitive", "HTTP://LocalHost:1", true},
      {"https is another origin", "https://localhost", false},
      {"other host", "http://evil.example", false},
      {"suffix attack", "http://localhost.evil.example", false},
      {"prefix attack", "http://evillocalhost", false},
      {"userinfo trick", "http://localhost@evil.example", false},
      {"opaque origin", "null", false},
      {"empty", "", false},
      {"bad port", "http://localhost:99999", false},
      {"junk after port", "http://localhost:80/x", false},
      {"other loopback address not listed", "http://127.0.0.2", false},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(transport::isOriginAllowed(row.origin, allowlist), row.allowed) << row.name;
  }
}

TEST(Unit, OriginEntryWithPortAllowsOnlyThatPort) {
  const std::vector<std::string> allowlist = {"https://app.example.com:8443", "http://tool.local/"};
  EXPECT_TRUE(transport::isOriginAllowed("https://app.example.com:8443", allowlist));
  EXPECT_FALSE(transport::isOriginAllowed("https://app.example.com", allowlist));
  EXPECT_FALSE(transport::isOriginAllowed("https://app.example.com:9443", allowlist));
  EXPECT_TRUE(transport::isOriginAllowed("http://tool.local:1234", allowlist));
  EXPECT_FALSE(transport::isOriginAllowed("http://localhost", allowlist));
}

TEST(Unit, LoopbackHostHeader) {
  for (const char* host : {"localhost", "localhost:8080", "127.0.0.1", "127.0.0.1:1", "127.9.8.7",
                           "[::1]", "[::1]:8080", "LOCALHOST"}) {
    EXPECT_TRUE(transport::isLoopbackHostHeader(host)) << host;
  }
  for (const char* host :
       {"evil.example", "evil.example:8080", "128.0.0.1", "127.0.0", "127.0.0.1.", "127.0.0.256",
        "[::2]", "localhost.evil", "", "10.0.0.1:80"}) {
    EXPECT_FALSE(transport::isLoopbackHostHeader(host)) << host;
  }
}

}  // namespace
