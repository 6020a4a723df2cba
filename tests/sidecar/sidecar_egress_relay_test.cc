// The relay in-process against a 127.0.0.1 upstream that plays the MCP server itself: with that
// listener passed as --deny-endpoint, no spelling of it is forwarded, even when the policy names
// it; and a flood of requests leaves an audit log no bigger than its cap.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "sidecar/audit_log.h"
#include "sidecar/sidecar_server.h"
#include "test_upstream.h"

namespace {

using json = nlohmann::json;

// One HTTP/1.1 request over the relay's Unix socket; returns the status code (0 on failure).
int statusOf(const std::string& socket_path, const std::string& target, const std::string& host) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return 0;
  }
  const std::string request =
      "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply;
  char buffer[4096];
  for (ssize_t n = 0; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) reply.append(buffer, n);
  ::close(fd);
  if (reply.rfind("HTTP/1.1 ", 0) != 0) return 0;
  return std::stoi(reply.substr(9, 3));
}

class SidecarEgressRelay : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "egress-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  // The policy names the upstream the way an operator would (loopback needs the operator).
  void start(bool deny_upstream, std::uint64_t audit_cap = std::uint64_t{8} << 20) {
    const std::string port = std::to_string(upstream_.port());
    sidecar::SidecarConfig config;
    config.listen_path = dir_ + "/mcp.sock";
    config.policy_file = "(inline)";
    config.audit_log_path = dir_ + "/audit.jsonl";
    config.session_id = "egress";
    if (deny_upstream) {
      config.denied_endpoints.push_back(*policy::parseEndpoint("127.0.0.1:" + port));
    }
    const json entries =
        json::array({"http://127.0.0.1:" + port + "/ok", "http://localhost:" + port + "/ok",
                     "http://[::ffff:127.0.0.1]:" + port + "/ok/x"});
    server_ = std::make_unique<sidecar::SidecarServer>(
        config, policy::loadPolicy(entries),
        sidecar::AuditLog::open(config.audit_log_path, audit_cap));
    server_->start();
  }
  [[nodiscard]] std::string socket() const { return dir_ + "/mcp.sock"; }
  [[nodiscard]] std::string port() const { return std::to_string(upstream_.port()); }

  sidecar_test::TestUpstream upstream_;
  std::string dir_;
  std::unique_ptr<sidecar::SidecarServer> server_;
};

TEST_F(SidecarEgressRelay, TheServersOwnListenerIsRefusedInEverySpelling) {
  start(/*deny_upstream=*/true);
  const std::string p = port();
  for (const std::string& target :
       {"http://127.0.0.1:" + p + "/ok/echo", "http://localhost:" + p + "/ok/echo",
        "http://127.1:" + p + "/ok/echo", "http://2130706433:" + p + "/ok/echo",
        "http://[::ffff:127.0.0.1]:" + p + "/ok/x/echo", "http://LOCALHOST.:" + p + "/ok/echo"}) {
    EXPECT_EQ(statusOf(socket(), target, "x"), 403) << target;
  }
  // Origin-form with a Host header is the same request.
  EXPECT_EQ(statusOf(socket(), "/ok/echo", "localhost:" + p), 403);
  EXPECT_TRUE(upstream_.targetsSeen().empty()) << "a request reached the server's own listener";
}

TEST_F(SidecarEgressRelay, ControlTheSameRuleWorksForAnotherListener) {
  start(/*deny_upstream=*/false);
  EXPECT_EQ(statusOf(socket(), "http://localhost:" + port() + "/ok/echo", "x"), 200);
  EXPECT_EQ(upstream_.targetsSeen().size(), 1U);
}

TEST_F(SidecarEgressRelay, AFloodOfRequestsLeavesTheAuditLogWithinItsCap) {
  constexpr std::uint64_t kCap = 8192;
  start(/*deny_upstream=*/true, kCap);
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(statusOf(socket(), "http://127.0.0.1:1/flood/" + std::to_string(i), "x"), 403);
  }
  const std::string audit = dir_ + "/audit.jsonl";
  EXPECT_LE(std::filesystem::file_size(audit), kCap);
  EXPECT_GT(sidecar::AuditLog::readDroppedCount(audit), 200U);
}

}  // namespace
