// The secrets file (sidecar/secret_headers.h): what it accepts, the lookup by host and port,
// each refusal naming the field without quoting a value, and toString() printing names only.
#include "sidecar/secret_headers.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "policy/egress.h"

namespace {

using json = nlohmann::json;
using sidecar::SecretHeaders;
using sidecar::SecretsError;

constexpr const char* kSecret = "s3cr3t-value-never-printed";

// The message fromJson throws for `entries`, or "" when it accepts them.
std::string errorOf(const json& entries) {
  try {
    (void)SecretHeaders::fromJson(entries);
  } catch (const SecretsError& error) {
    return error.what();
  }
  return "";
}

json entry(const json& headers, const json& host = "api.example.com") {
  return json::array({{{"host", host}, {"headers", headers}}});
}

TEST(SecretHeaders, LoadsEntriesAndFindsThemByHostAndPort) {
  const auto secrets = SecretHeaders::fromJson(json::parse(R"([
    {"host": "api.example.com", "headers": {"Authorization": "Bearer abc", "X-Api-Key": "k"}},
    {"host": "api.example.com", "port": 8443, "headers": {"Authorization": "Bearer other"}},
    {"host": "2001:db8::1", "port": 443, "headers": {"X-Token": "t"}}
  ])"));
  ASSERT_EQ(secrets.hosts.size(), 3U);
  const auto* found = secrets.find("api.example.com", 443);
  ASSERT_NE(found, nullptr);
  ASSERT_EQ(found->headers.size(), 2U);
  EXPECT_EQ(found->headers[0].name, "Authorization");
  EXPECT_EQ(found->headers[0].value, "Bearer abc");
  EXPECT_EQ(secrets.find("api.example.com", 8443)->headers[0].value, "Bearer other");
  EXPECT_NE(secrets.find("2001:db8::1", 443), nullptr);
  EXPECT_EQ(secrets.find("api.example.com", 80), nullptr);
  EXPECT_EQ(secrets.find("API.example.com", 443), nullptr);  // lookups take canonical hosts
  EXPECT_EQ(secrets.find("other.example.com", 443), nullptr);
  EXPECT_EQ(secrets.hostNames(), (std::vector<std::string>{"api.example.com", "2001:db8::1"}));
  EXPECT_TRUE(SecretHeaders::fromJson(json::array()).hosts.empty());
}

TEST(SecretHeaders, ToStringListsNamesNeverValues) {
  const auto secrets = SecretHeaders::fromJson(json::array(
      {{{"host", "api.example.com"}, {"headers", {{"Authorization", kSecret}, {"X-Key", kSecret}}}},
       {{"host", "::1"}, {"port", 8443}, {"headers", {{"X-Token", kSecret}}}}}));
  EXPECT_EQ(secrets.toString(), "api.example.com:443 [Authorization, X-Key]; [::1]:8443 [X-Token]");
}

TEST(SecretHeaders, TheProxyInterceptsOnlyTheHostsItsRulesReach) {
  const auto secrets = SecretHeaders::fromJson(json::parse(R"([
    {"host": "api.example.com", "headers": {"A": "1"}},
    {"host": "api.example.com", "port": 8443, "headers": {"A": "2"}},
    {"host": "mcp.example.com", "headers": {"A": "3"}},
    {"host": "2001:db8::1", "headers": {"A": "4"}}
  ])"));
  const auto rules =
      policy::loadEgressRules(json::array({"api.example.com", "[2001:db8::1]:443"}), "test");
  const auto reachable = secrets.reachableThrough(rules);
  EXPECT_EQ(reachable.toString(), "api.example.com:443 [A]; [2001:db8::1]:443 [A]");
  EXPECT_TRUE(secrets.reachableThrough(policy::EgressPolicy{}).hosts.empty());
}

// The server marks the entries both MCP allowlists name; the relay sets only those.
TEST(SecretHeaders, TheRelaySetsOnlyTheEntriesMarkedForIt) {
  const auto secrets = SecretHeaders::fromJson(json::parse(R"([
    {"host": "api.example.com", "headers": {"A": "1"}},
    {"host": "mcp.example.com", "relay": true, "headers": {"A": "2"}},
    {"host": "both.example.com", "relay": false, "headers": {"A": "3"}}
  ])"));
  EXPECT_EQ(secrets.forRelay().toString(), "mcp.example.com:443 [A]");
  EXPECT_FALSE(secrets.hosts[0].relay);
}

TEST(SecretHeaders, MethodsThatEchoTheRequestAreNamed) {
  for (const char* method : {"TRACE", "TRACK", "trace"}) {
    EXPECT_TRUE(sidecar::echoesRequestHeaders(method)) << method;
  }
  for (const char* method : {"GET", "POST", "OPTIONS", "TRACES", ""}) {
    EXPECT_FALSE(sidecar::echoesRequestHeaders(method)) << method;
  }
}

TEST(SecretHeaders, RefusesBadHostsPortsAndShapes) {
  const json ok = {{"Authorization", "x"}};
  const struct {
    const char* name;
    json entries;
    const char* expected;
  } rows[] = {
      {"not an array", json::object(), "secrets: must be a JSON array"},
      {"entry not an object", json::array({"api.example.com"}), "secrets[0]: must be an object"},
      {"no host", json::array({{{"headers", ok}}}), "secrets[0].host: required"},
      {"uppercase host", entry(ok, "API.example.com"), "write \"api.example.com\""},
      {"trailing dot", entry(ok, "api.example.com."), "is not canonical"},
      {"bracketed v6", entry(ok, "[::1]"), "is not canonical"},
      {"host with a path", entry(ok, "api.example.com/x"), "is not canonical"},
      {"port 0", json::array({{{"host", "a.example"}, {"port", 0}, {"headers", ok}}}),
       "secrets[0].port: a number from 1 to 65535"},
      {"port text", json::array({{{"host", "a.example"}, {"port", "443"}, {"headers", ok}}}),
       "secrets[0].port"},
      {"unknown key", json::array({{{"host", "a.example"}, {"headers", ok}, {"value", 1}}}),
       "unknown key \"value\""},
      {"relay text", json::array({{{"host", "a.example"}, {"relay", "yes"}, {"headers", ok}}}),
       "secrets[0].relay: must be true or false"},
      {"no headers", json::array({{{"host", "a.example"}}}), "secrets[0].headers: required"},
      {"empty headers", entry(json::object()), "secrets[0].headers: required"},
      {"duplicate host", json::array({entry(ok)[0], entry(ok)[0]}),
       "secrets[1]: api.example.com:443 has an earlier entry"},
  };
  for (const auto& row : rows) {
    EXPECT_NE(errorOf(row.entries).find(row.expected), std::string::npos)
        << row.name << ": " << errorOf(row.entries);
  }
}

TEST(SecretHeaders, RefusesBadHeaderNamesAndValuesWithoutQuotingThem) {
  const struct {
    const char* name;
    json headers;
    const char* expected;
  } rows[] = {
      {"space in name", {{"X Key", kSecret}}, "is not an HTTP token"},
      {"colon in name", {{"X-Key:", kSecret}}, "is not an HTTP token"},
      {"empty name", {{"", kSecret}}, "is not an HTTP token"},
      {"CR in value", {{"X-Key", std::string(kSecret) + "\r\nX-Evil: 1"}}, "line break"},
      {"LF in value", {{"X-Key", std::string(kSecret) + "\n"}}, "line break"},
      {"NUL in value", {{"X-Key", std::string(kSecret) + std::string(1, '\0')}}, "NUL byte"},
      {"number value", {{"X-Key", 5}}, "the value must be a string"},
      {"Host", {{"Host", kSecret}}, "writes this header itself"},
      {"Content-Length", {{"content-length", "5"}}, "writes this header itself"},
      {"Transfer-Encoding", {{"Transfer-Encoding", "chunked"}}, "writes this header itself"},
      {"Proxy-Authorization", {{"Proxy-Authorization", kSecret}}, "writes this header itself"},
      {"Connection", {{"Connection", "close"}}, "writes this header itself"},
      {"twice", {{"X-Key", kSecret}, {"x-key", kSecret}}, "named twice"},
  };
  for (const auto& row : rows) {
    const std::string error = errorOf(entry(row.headers));
    EXPECT_NE(error.find(row.expected), std::string::npos) << row.name << ": " << error;
    EXPECT_EQ(error.find(kSecret), std::string::npos) << row.name << ": " << error;
  }
}

class SecretHeadersFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("secrets-test-" + std::to_string(::getpid()) + ".json"))
                .string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  void write(const std::string& text, mode_t mode) const {
    std::ofstream(path_) << text;
    ::chmod(path_.c_str(), mode);
  }
  std::string errorOfLoad() const {
    try {
      (void)SecretHeaders::load(path_);
    } catch (const SecretsError& error) {
      return error.what();
    }
    return "";
  }
  std::string path_;
};

TEST_F(SecretHeadersFile, LoadsAnOwnerOnlyFile) {
  write(entry({{"Authorization", kSecret}}).dump(), 0600);
  const auto secrets = SecretHeaders::load(path_);
  ASSERT_NE(secrets.find("api.example.com", 443), nullptr);
  EXPECT_EQ(secrets.find("api.example.com", 443)->headers[0].value, kSecret);
}

TEST_F(SecretHeadersFile, RefusesAFileOthersMayRead) {
  write(entry({{"Authorization", kSecret}}).dump(), 0644);
  EXPECT_NE(errorOfLoad().find("must be mode 0600"), std::string::npos) << errorOfLoad();
}

TEST_F(SecretHeadersFile, RefusesMissingFilesAndBadJsonWithoutQuotingIt) {
  EXPECT_NE(errorOfLoad().find("cannot read the secrets file " + path_), std::string::npos);
  write(std::string(R"([{"host": "api.example.com", "headers": {"A": ")") + kSecret + "\n", 0600);
  const std::string error = errorOfLoad();
  EXPECT_NE(error.find("is not valid JSON (at byte"), std::string::npos) << error;
  EXPECT_EQ(error.find(kSecret), std::string::npos) << error;
}

}  // namespace
