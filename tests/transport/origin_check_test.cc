#include "transport/origin_check.h"

#include <gtest/gtest.h>

#include <optional>
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

// What a preview host puts before preview.domain: hosts and origins, any port, a trailing dot,
// lower-cased; nothing for the domain itself, a look-alike domain, or what does not parse.
TEST(Unit, SubdomainLabel) {
  struct Row {
    const char* name;
    const char* host_or_origin;
    const char* domain;
    std::optional<std::string> label;
  };
  const std::string hex = "0123456789abcdef0123456789abcdef";
  const std::vector<Row> rows = {
      {"host", "abc.localhost", "localhost", "abc"},
      {"host with port", "abc.localhost:8766", "localhost", "abc"},
      {"origin", "http://abc.localhost", "localhost", "abc"},
      {"origin with port", "http://abc.localhost:8766", "localhost", "abc"},
      {"https origin", "https://abc.localhost:443", "localhost", "abc"},
      {"origin with a trailing slash", "http://abc.localhost:8766/", "localhost", "abc"},
      {"trailing dot", "abc.localhost.", "localhost", "abc"},
      {"trailing dot with port", "abc.localhost.:8766", "localhost", "abc"},
      {"trailing dot in an origin", "http://abc.localhost.:8766", "localhost", "abc"},
      {"upper case is lower-cased", "ABC.LocalHost:8766", "localhost", "abc"},
      {"upper case origin", "HTTP://ABC.LOCALHOST", "localhost", "abc"},
      {"nested labels", "x.abc.localhost:8766", "localhost", "x.abc"},
      {"a longer domain", "abc.preview.example.com", "preview.example.com", "abc"},
      {"the domain itself", "localhost", "localhost", std::nullopt},
      {"the domain itself with port", "localhost:8766", "localhost", std::nullopt},
      {"the domain itself as an origin", "http://localhost:8766", "localhost", std::nullopt},
      {"the domain itself with a trailing dot", "localhost.", "localhost", std::nullopt},
      {"an empty label", ".localhost", "localhost", std::nullopt},
      {"a look-alike domain", "xlocalhost", "localhost", std::nullopt},
      {"a label under a look-alike domain", "abc.xlocalhost:8766", "localhost", std::nullopt},
      {"the domain as a prefix", "abc.localhost.evil.com", "localhost", std::nullopt},
      {"a sibling of a longer domain", "abc.example.com", "preview.example.com", std::nullopt},
      {"ipv4", "127.0.0.1:8766", "localhost", std::nullopt},
      {"ipv6", "[::1]:8766", "localhost", std::nullopt},
      {"ipv6 origin", "http://[::1]:8766", "localhost", std::nullopt},
      {"ipv6 followed by the domain", "[::1].localhost", "localhost", std::nullopt},
      {"userinfo", "user@abc.localhost", "localhost", std::nullopt},
      {"userinfo in an origin", "http://localhost@abc.localhost", "localhost", std::nullopt},
      {"a path", "abc.localhost/x", "localhost", std::nullopt},
      {"a bad port", "abc.localhost:99999", "localhost", std::nullopt},
      {"opaque origin", "null", "localhost", std::nullopt},
      {"empty", "", "localhost", std::nullopt},
      {"no domain configured", "abc.localhost", "", std::nullopt},
      // The domain is compared as given: config requires it lower-case (preview.domain).
      {"an upper-case domain matches nothing", "abc.localhost", "LOCALHOST", std::nullopt},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(transport::subdomainLabel(row.host_or_origin, row.domain), row.label) << row.name;
  }
  EXPECT_EQ(transport::subdomainLabel("http://" + hex + ".localhost:8766", "localhost"), hex);
}

}  // namespace
