// The egress proxy (sidecar/egress_proxy.h) in-process on a temporary Unix socket, in front of
// upstreams on 127.0.0.1: a TCP echo standing for a TLS server (the proxy never opens TLS, so
// echoing the bytes back shows they passed unchanged) and the plain-HTTP test upstream. The client
// is the test, speaking the proxy protocol on the socket as the sandbox's agent forwards it, with a
// real OpenSSL ClientHello. Checked: a tunnel carries the hello and everything after it both
// ways; a hello naming another host, bytes that are not TLS, targets outside the rules, other
// spellings of an address, and the server's own endpoint never reach an upstream; plain HTTP goes
// out in origin form without proxy headers and without what the sandbox pipelines behind it;
// limits on connections and bytes hold; every connection is one audit line.
#include "sidecar/egress_proxy.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "audit_lines.h"
#include "test_upstream.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// A ClientHello as OpenSSL's client writes it, asking for `server_name` (none when empty).
std::string clientHello(const std::string& server_name) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        SSL_CTX_free);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl.get(), in, out);  // ssl owns both
  if (!server_name.empty()) {       // SSL_set_tlsext_host_name, without the macro's C cast
    SSL_ctrl(ssl.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(server_name.c_str()));
  }
  SSL_set_connect_state(ssl.get());
  SSL_do_handshake(ssl.get());  // wants to read the server's answer: the hello is written
  char* data = nullptr;
  const long size = BIO_get_mem_data(out, &data);
  return {data, static_cast<std::size_t>(size)};
}

// Accepts TCP connections on 127.0.0.1 and echoes every byte; counts what it received.
class EchoUpstream {
 public:
  EchoUpstream() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(listener_, 64);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { acceptLoop(); });
  }
  ~EchoUpstream() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
    const std::lock_guard lock(mutex_);
    for (auto& worker : workers_) worker.join();
  }
  EchoUpstream(const EchoUpstream&) = delete;
  EchoUpstream& operator=(const EchoUpstream&) = delete;

  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] std::uint64_t received() const { return received_.load(); }
  [[nodiscard]] int connections() const { return connections_.load(); }

 private:
  void acceptLoop() {
    for (;;) {
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      ++connections_;
      const std::lock_guard lock(mutex_);
      workers_.emplace_back([this, fd] {
        char buffer[65536];
        ssize_t n = 0;
        while ((n = ::read(fd, buffer, sizeof buffer)) > 0) {
          received_ += static_cast<std::uint64_t>(n);
          if (::write(fd, buffer, static_cast<std::size_t>(n)) != n) break;
        }
        ::close(fd);
      });
    }
  }

  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::thread> workers_;
  std::atomic<std::uint64_t> received_{0};
  std::atomic<int> connections_{0};
};

// The sandbox's side of one proxy connection: blocking, with a 5 s receive timeout.
class ProxyClient {
 public:
  explicit ProxyClient(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    timeval timeout{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~ProxyClient() { ::close(fd_); }
  ProxyClient(const ProxyClient&) = delete;
  ProxyClient& operator=(const ProxyClient&) = delete;

  [[nodiscard]] bool connected() const { return connected_; }
  // MSG_NOSIGNAL: a relay that closed the connection fails the write, not the test process.
  void send(const std::string& bytes) const { ASSERT_TRUE(trySend(bytes)); }
  [[nodiscard]] bool trySend(const std::string& bytes) const {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  void finishSending() const { ::shutdown(fd_, SHUT_WR); }
  // Reads until `n` bytes, end of file or the timeout.
  [[nodiscard]] std::string receive(std::size_t n) const {
    std::string out;
    char buffer[65536];
    while (out.size() < n) {
      const ssize_t got = ::read(fd_, buffer, std::min(sizeof buffer, n - out.size()));
      if (got <= 0) break;
      out.append(buffer, static_cast<std::size_t>(got));
    }
    return out;
  }
  // Reads a response head (up to the blank line).
  [[nodiscard]] std::string head() const {
    std::string out;
    char c = 0;
    while (out.find("\r\n\r\n") == std::string::npos && ::read(fd_, &c, 1) == 1) out += c;
    return out;
  }
  [[nodiscard]] std::string rest() const { return receive(std::size_t{1} << 30); }
  // Whether the relay closed the connection (end of file) before the read timeout.
  [[nodiscard]] bool closedByTheRelay() const {
    char c = 0;
    return ::read(fd_, &c, 1) == 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

class EgressProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("egress-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    config_.listen_path = (dir_ / "mcp.sock").string();
    config_.egress_listen_path = (dir_ / "egress.sock").string();
    config_.session_id = "s-egress";
    config_.idle_timeout_ms = 2000;
  }
  void TearDown() override {
    proxy_.reset();
    std::filesystem::remove_all(dir_);
  }

  void start(const json& rules) {
    audit_path_ = (dir_ / "audit.jsonl").string();
    proxy_ = std::make_unique<sidecar::EgressProxy>(
        config_, std::make_shared<const policy::EgressPolicy>(policy::loadEgressRules(rules, "t")),
        sidecar::AuditLog::open(audit_path_));
    proxy_->start();
  }

  // The audit lines so far, waiting briefly for `count`.
  std::vector<json> audit(std::size_t count) {
    return sidecar_test::waitForAuditLines(audit_path_, count);
  }

  [[nodiscard]] std::string socket() const { return config_.egress_listen_path; }

  std::filesystem::path dir_;
  std::string audit_path_;
  sidecar::SidecarConfig config_;
  std::unique_ptr<sidecar::EgressProxy> proxy_;
};

std::string connectHead(const std::string& authority) {
  return "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
}

TEST_F(EgressProxyTest, TunnelCarriesTheHelloAndWhatFollowsBothWays) {
  EchoUpstream echo;
  const std::string authority = "localhost:" + std::to_string(echo.port());
  start(json::array({authority}));
  ProxyClient client(socket());
  ASSERT_TRUE(client.connected());
  client.send(connectHead(authority));
  EXPECT_EQ(client.head(), "HTTP/1.1 200 Connection established\r\n\r\n");
  const std::string hello = clientHello("localhost");
  const std::string after(300000, 'x');
  client.send(hello + after);
  EXPECT_EQ(client.receive(hello.size() + after.size()), hello + after);
  client.finishSending();
  EXPECT_EQ(client.rest(), "");  // the echo saw the end of file and closed: so does the tunnel
  const auto lines = audit(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["kind"], "egress");
  EXPECT_EQ(lines[0]["method"], "CONNECT");
  EXPECT_EQ(lines[0]["url"], authority);
  EXPECT_EQ(lines[0]["decision"], "allow") << lines[0].dump();
  EXPECT_EQ(lines[0]["status"], 200);
  EXPECT_EQ(lines[0]["up"], hello.size() + after.size());
  EXPECT_EQ(lines[0]["bytes"], hello.size() + after.size());
  EXPECT_EQ(lines[0]["rule"], "t[0]");
}

TEST_F(EgressProxyTest, AHelloForAnotherHostOrBytesThatAreNotTlsNeverReachTheUpstream) {
  EchoUpstream echo;
  const std::string authority = "localhost:" + std::to_string(echo.port());
  start(json::array({authority}));
  const std::vector<std::string> firsts = {clientHello("evil.example"), clientHello(""),
                                           "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n",
                                           clientHello("localhost.evil.example")};
  for (const auto& first : firsts) {
    ProxyClient client(socket());
    client.send(connectHead(authority));
    EXPECT_EQ(client.head(), "HTTP/1.1 200 Connection established\r\n\r\n");
    client.send(first);
    EXPECT_EQ(client.rest(), "");  // closed without a byte
  }
  const auto lines = audit(firsts.size());
  ASSERT_EQ(lines.size(), firsts.size());
  for (const auto& line : lines) EXPECT_EQ(line["decision"], "deny") << line.dump();
  EXPECT_NE(lines[0]["reason"].get<std::string>().find("evil.example"), std::string::npos)
      << lines[0].dump();
  EXPECT_NE(lines[2]["reason"].get<std::string>().find("TLS"), std::string::npos);
  // The proxy connected (to answer 200) but sent nothing.
  EXPECT_EQ(echo.received(), 0u);
}

TEST_F(EgressProxyTest, TargetsOutsideTheRulesGetA403WithTheReasonAndTheConnectionCloses) {
  EchoUpstream echo;
  const std::string port = std::to_string(echo.port());
  config_.denied_endpoints.push_back(*policy::parseEndpoint("127.0.0.1:" + port));
  start(json::array({"localhost:" + port, "allowed.example"}));
  const std::vector<std::string> targets = {
      "other.example:443",     // no rule
      "allowed.example:8443",  // the rule's port is 443
      "127.0.0.1:" + port,     // the address behind localhost, spelled as one: no rule
      "2130706433:" + port,    // the same address, another spelling
      "[::ffff:127.0.0.1]:" + port,
      "localhost:" + port,  // allowed by its rule, but the server's own endpoint
  };
  for (const auto& target : targets) {
    ProxyClient client(socket());
    // A second request pipelined behind the first must not be served either.
    client.send(connectHead(target) + connectHead("localhost:" + port));
    const std::string head = client.head();
    EXPECT_TRUE(head.starts_with("HTTP/1.1 403 Forbidden: ")) << target << ": " << head;
    EXPECT_NE(head.find("X-Sandbox-Egress: refused"), std::string::npos);
    EXPECT_NE(client.rest().find('\n'), std::string::npos);  // the body: the reason, then EOF
  }
  EXPECT_EQ(echo.connections(), 0);
  const auto lines = audit(targets.size());
  ASSERT_EQ(lines.size(), targets.size());
  for (const auto& line : lines) {
    EXPECT_EQ(line["decision"], "deny") << line.dump();
    EXPECT_EQ(line["status"], 403);
  }
}

TEST_F(EgressProxyTest, PlainHttpGoesOutInOriginFormWithoutProxyHeadersOrPipelinedRequests) {
  sidecar_test::TestUpstream upstream;
  const std::string authority = "localhost:" + std::to_string(upstream.port());
  start(json::array({authority}));
  ProxyClient client(socket());
  const std::string body = R"({"x":1})";
  client.send("POST http://" + authority + "/ok/echo HTTP/1.1\r\nHost: " + authority +
              "\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n"
              "Content-Type: application/json\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\n\r\n" + body + "GET http://" + authority +
              "/ok/redirect HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
  const std::string head = client.head();
  EXPECT_TRUE(head.starts_with("HTTP/1.1 200")) << head;
  const std::string rest = client.rest();
  const auto start_of_json = rest.find('{');
  ASSERT_NE(start_of_json, std::string::npos) << rest;
  const auto echoed = json::parse(rest.substr(start_of_json, rest.rfind('}') - start_of_json + 1));
  EXPECT_EQ(echoed["method"], "POST");
  EXPECT_EQ(echoed["target"], "/ok/echo");
  EXPECT_EQ(echoed["body"], body);
  const std::string headers = echoed["headers"].dump();
  EXPECT_EQ(headers.find("secret"), std::string::npos) << headers;
  EXPECT_EQ(headers.find("c2VjcmV0"), std::string::npos) << headers;
  EXPECT_EQ(upstream.targetsSeen(), std::vector<std::string>{"/ok/echo"});
  const auto lines = audit(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["method"], "POST");
  EXPECT_EQ(lines[0]["url"], "http://" + authority + "/ok/echo");
  EXPECT_EQ(lines[0]["decision"], "allow") << lines[0].dump();
}

// The head goes up as written: a second Host would reach the pinned upstream unchecked, and
// framing it could read otherwise (request_framing.h) would make the body another request.
TEST_F(EgressProxyTest, PlainHttpWithTwoHostsOrAmbiguousFramingIsRefused) {
  sidecar_test::TestUpstream upstream;
  const std::string authority = "localhost:" + std::to_string(upstream.port());
  start(json::array({authority}));
  const std::string line = "POST http://" + authority + "/ok/echo HTTP/1.1\r\nHost: " + authority;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\r\nHost: other.example\r\nContent-Length: 0", "more than one Host"},
      {"\r\nTransfer-Encoding: gzip\r\nContent-Length: 5", "both"},
      {"\r\nContent-Length: 5, 5", "a list"},
  };
  // Connection naming Content-Length or Host does not drop them: the upstream frames the body by
  // the length the proxy counted, so a request inside the body stays body.
  {
    ProxyClient client(socket());
    const std::string inner = "GET /ok/echo HTTP/1.1\r\nHost: other.example\r\n\r\n";
    client.send(line + "\r\nConnection: content-length, host\r\nContent-Length: " +
                std::to_string(inner.size()) + "\r\n\r\n" + inner);
    const std::string head = client.head();
    EXPECT_TRUE(head.starts_with("HTTP/1.1 200")) << head;
    const std::string body = client.rest();
    EXPECT_NE(body.find("other.example"), std::string::npos) << body;  // echoed as the body
    EXPECT_EQ(upstream.targetsSeen(), std::vector<std::string>{"/ok/echo"});
  }
  for (const auto& [fields, reason] : cases) {
    ProxyClient client(socket());
    client.send(line + fields + "\r\n\r\nhello");
    const std::string head = client.head();
    EXPECT_TRUE(head.starts_with("HTTP/1.1 400")) << head;
    EXPECT_NE(head.find(reason), std::string::npos) << head;
  }
  EXPECT_EQ(upstream.targetsSeen().size(), 1U);  // the allowed one above only
  const auto lines = audit(cases.size() + 1);
  ASSERT_EQ(lines.size(), cases.size() + 1);
  for (const auto& audited : lines) {
    if (audited["decision"] == "allow") continue;
    EXPECT_EQ(audited["decision"], "deny") << audited.dump();
    EXPECT_EQ(audited["status"], 400) << audited.dump();
  }
}

TEST_F(EgressProxyTest, OriginFormAndHttpsInAbsoluteFormAreRefusedWithWhatToDo) {
  start(json::array({"allowed.example"}));
  {
    ProxyClient client(socket());
    client.send("GET / HTTP/1.1\r\nHost: allowed.example\r\n\r\n");
    const std::string head = client.head();
    EXPECT_TRUE(head.starts_with("HTTP/1.1 400")) << head;
    EXPECT_NE(head.find("HTTPS_PROXY"), std::string::npos) << head;
  }
  {
    ProxyClient client(socket());
    client.send("GET https://allowed.example/ HTTP/1.1\r\nHost: allowed.example\r\n\r\n");
    EXPECT_NE(client.head().find("CONNECT"), std::string::npos);
  }
  {
    ProxyClient client(socket());
    client.send("this is not http\r\n\r\n");
    EXPECT_TRUE(client.head().starts_with("HTTP/1.1 400"));
  }
}

TEST_F(EgressProxyTest, ConnectionAndByteLimitsHold) {
  EchoUpstream echo;
  const std::string authority = "localhost:" + std::to_string(echo.port());
  config_.egress_max_connections = 1;
  config_.egress_max_bytes = 100000;
  start(json::array({authority}));
  ProxyClient first(socket());
  first.send(connectHead(authority));
  ASSERT_TRUE(first.head().starts_with("HTTP/1.1 200"));
  {
    ProxyClient second(socket());
    second.send(connectHead(authority));
    const std::string head = second.head();
    EXPECT_TRUE(head.starts_with("HTTP/1.1 503")) << head;
  }
  const std::string hello = clientHello("localhost");
  first.send(hello);
  EXPECT_EQ(first.receive(hello.size()), hello);
  // Past the session's byte budget the tunnel is cut, whichever way the bytes went.
  first.send(std::string(60000, 'y'));
  EXPECT_LT(first.rest().size(), 60000u);  // cut before all of it came back
  ProxyClient third(socket());
  third.send(connectHead(authority));
  const std::string head = third.head();
  EXPECT_TRUE(head.starts_with("HTTP/1.1 403")) << head;
  EXPECT_NE(head.find("budget"), std::string::npos) << head;
}

// Connections that never send a head count too: past the limit and the allowance for those
// (16), a new one is closed unread instead of holding a socket and a head buffer in the relay.
TEST_F(EgressProxyTest, ConnectionsWithoutAHeadAreBoundedToo) {
  EchoUpstream echo;
  const std::string authority = "localhost:" + std::to_string(echo.port());
  config_.egress_max_connections = 1;
  start(json::array({authority}));
  std::vector<std::unique_ptr<ProxyClient>> silent;
  silent.reserve(17);
  for (int i = 0; i < 17; ++i) silent.push_back(std::make_unique<ProxyClient>(socket()));
  {
    const ProxyClient over(socket());  // accepted after the 17 silent ones: closed unread
    EXPECT_TRUE(over.closedByTheRelay());
  }
  silent.clear();
  // Once the relay saw the silent ones go, a connection works again.
  std::string head;
  for (int attempt = 0; attempt < 50 && !head.starts_with("HTTP/1.1 200"); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ProxyClient again(socket());
    if (!again.trySend(connectHead(authority))) continue;  // still over the limit: closed unread
    head = again.head();
  }
  EXPECT_TRUE(head.starts_with("HTTP/1.1 200")) << head;
}

}  // namespace
