// The egress proxy's reading of a request head (sidecar/proxy_request.h): tunnels and absolute-
// form requests the rules allow go through; a malformed head, a Host that disagrees with the
// target, https in absolute form, an origin-form request and anything the rules do not allow
// are refused with the status to answer and a reason.
#include "sidecar/proxy_request.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using Kind = sidecar::ProxyRequest::Kind;

struct Row {
  std::string method;
  std::string target;
  std::string host;
  bool body;
  Kind kind;
  int status;          // for refusals
  std::string reason;  // a substring of the reason
};

TEST(ProxyRequest, ClassifiesAndDecidesRequestHeads) {
  const auto rules = policy::loadEgressRules(
      nlohmann::json::parse(R"(["pypi.org", "example.com:80", "127.0.0.1:8080"])"), "egress.allow");
  const std::vector<Row> rows = {
      {"CONNECT", "pypi.org:443", "pypi.org:443", false, Kind::kConnect, 0, "allowed by"},
      {"CONNECT", "PYPI.org:443", "", false, Kind::kConnect, 0, "allowed by"},
      {"CONNECT", "pypi.org:443", "pypi.org", false, Kind::kConnect, 0, "allowed by"},
      {"CONNECT", "pypi.org:443", "evil.com:443", false, Kind::kRefused, 400, "another authority"},
      {"CONNECT", "pypi.org:443", "", true, Kind::kRefused, 400, "no body"},
      {"CONNECT", "pypi.org", "", false, Kind::kRefused, 400, "needs a port"},
      {"CONNECT", "evil.com:443", "", false, Kind::kRefused, 403, "not allowed"},
      {"CONNECT", "169.254.169.254:443", "", false, Kind::kRefused, 403, "not allowed"},
      {"GET", "http://example.com/simple/", "example.com", false, Kind::kAbsolute, 0, "allowed"},
      {"GET", "http://example.com:80/x", "", false, Kind::kAbsolute, 0, "allowed"},
      {"POST", "http://example.com/x", "example.com:80", true, Kind::kAbsolute, 0, "allowed"},
      {"GET", "http://example.com/x", "evil.com", false, Kind::kRefused, 400, "another authority"},
      {"GET", "http://0x7f.0.0.1:8080/", "127.0.0.1:8080", false, Kind::kAbsolute, 0, "allowed"},
      {"GET", "https://pypi.org/simple/", "pypi.org", false, Kind::kRefused, 400, "CONNECT"},
      {"GET", "/simple/", "pypi.org", false, Kind::kRefused, 400, "egress proxy"},
      {"GET", "http://evil.com/", "evil.com", false, Kind::kRefused, 403, "not allowed"},
      {"GET", "http://example.com:8080/", "", false, Kind::kRefused, 403, "example.com:8080"},
      {"GET", "ftp://example.com/", "", false, Kind::kRefused, 400, ""},
  };
  const std::vector<policy::Endpoint> server = {*policy::parseEndpoint("127.0.0.1:8765")};
  for (const auto& row : rows) {
    const auto request =
        sidecar::classifyProxyRequest(rules, row.method, row.target, row.host, row.body, server);
    const std::string name = row.method + " " + row.target + " (Host " + row.host + ")";
    EXPECT_EQ(request.kind, row.kind) << name << ": " << request.reason;
    if (row.kind == Kind::kRefused) {
      EXPECT_EQ(request.status, row.status) << name << ": " << request.reason;
      EXPECT_EQ(request.rule, nullptr) << name;
    } else {
      EXPECT_NE(request.rule, nullptr) << name;
    }
    EXPECT_NE(request.reason.find(row.reason), std::string::npos) << name << ": " << request.reason;
  }
}

}  // namespace
