// The HTTP transport against peers that hold connections or send hostile bodies, over raw
// sockets on 127.0.0.1: connection limits (503 and close), the header timeout, and bodies large
// enough to be parsed off the I/O thread (still answered; too deep still refused).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "fake_endpoint.h"
#include "transport/http_transport.h"

namespace {

using transport_test::FakeFactory;
using transport_test::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A TCP connection to 127.0.0.1:port from `local` (any 127/8 address is ours on Linux).
int connectFrom(std::uint16_t port, const char* local = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, local, &from.sin_addr);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from), 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  return fd;
}

// Everything the server sends until it closes, or until `limit` passes.
std::string readUntilClosed(int fd, std::chrono::milliseconds limit, bool* closed = nullptr) {
  std::string text;
  const auto deadline = Clock::now() + limit;
  if (closed) *closed = false;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (::poll(&p, 1, static_cast<int>(left.count()) + 1) <= 0) continue;
    char buffer[4096];
    const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
    if (got <= 0) {
      if (closed) *closed = true;
      break;
    }
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

void sendAll(int fd, const std::string& text) {
  std::size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    sent += static_cast<std::size_t>(n);
  }
}

std::string postText(const std::string& body, const std::string& extra_headers = {}) {
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\nConnection: close\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string initializeBody() {
  return R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";
}

class HttpLimits : public ::testing::Test {
 protected:
  void start(transport::HttpTransportOptions options) {
    options.address = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<transport::HttpTransport>(factory_, options);
    server_->start();
  }
  [[nodiscard]] std::uint16_t port() const { return server_->port(); }

  std::shared_ptr<FakeFactory> factory_ = std::make_shared<FakeFactory>();
  std::unique_ptr<transport::HttpTransport> server_;
};

TEST_F(HttpLimits, PerAddressLimitAnswers503AndLeavesOtherAddressesIn) {
  transport::HttpTransportOptions options;
  options.max_connections_per_address = 2;
  start(options);
  std::vector<common::UniqueFd> held;
  for (int i = 0; i < 2; ++i) held.emplace_back(connectFrom(port(), "127.0.0.7"));
  const common::UniqueFd third(connectFrom(port(), "127.0.0.7"));
  bool closed = false;
  const std::string refused = readUntilClosed(third.get(), 5s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(refused.rfind("HTTP/1.1 503 ", 0), 0U) << refused;
  EXPECT_NE(refused.find("max_connections_per_address"), std::string::npos) << refused;

  const common::UniqueFd other(connectFrom(port(), "127.0.0.8"));
  sendAll(other.get(), postText(initializeBody()));
  const std::string answer = readUntilClosed(other.get(), 10s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 ", 0), 0U) << answer;

  held.clear();  // their places come back once the server sees them close
  const auto deadline = Clock::now() + 5s;
  std::string again;
  while (Clock::now() < deadline) {
    const common::UniqueFd retry(connectFrom(port(), "127.0.0.7"));
    sendAll(retry.get(), postText(initializeBody()));
    again = readUntilClosed(retry.get(), 10s);
    if (again.rfind("HTTP/1.1 200 ", 0) == 0) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(again.rfind("HTTP/1.1 200 ", 0), 0U) << again;
}

// Each MCP session holds an endpoint until DELETE or idle expiry: without a bound, any local
// process could initialize until the server runs out of memory.
TEST_F(HttpLimits, SessionsPastMaxSessionsAreRefusedUntilOneEnds) {
  transport::HttpTransportOptions options;
  options.max_sessions = 3;
  start(options);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    const common::UniqueFd fd(connectFrom(port()));
    sendAll(fd.get(), postText(initializeBody()));
    const std::string answer = readUntilClosed(fd.get(), 10s);
    ASSERT_EQ(answer.rfind("HTTP/1.1 200 ", 0), 0U) << answer;
    const auto header = answer.find("Mcp-Session-Id: ");
    ASSERT_NE(header, std::string::npos) << answer;
    ids.push_back(answer.substr(header + 16, 32));
  }
  const common::UniqueFd fourth(connectFrom(port()));
  sendAll(fourth.get(), postText(initializeBody()));
  const std::string refused = readUntilClosed(fourth.get(), 10s);
  EXPECT_EQ(refused.find("Mcp-Session-Id: "), std::string::npos) << refused;
  EXPECT_NE(refused.find("\"code\":-32000"), std::string::npos) << refused;
  EXPECT_NE(refused.find("http.max_sessions"), std::string::npos) << refused;

  const common::UniqueFd end(connectFrom(port()));
  sendAll(end.get(), "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: " + ids[0] +
                         "\r\nConnection: close\r\n\r\n");
  const std::string deleted = readUntilClosed(end.get(), 10s);
  ASSERT_EQ(deleted.rfind("HTTP/1.1 20", 0), 0U) << deleted;
  const common::UniqueFd again(connectFrom(port()));
  sendAll(again.get(), postText(initializeBody()));
  const std::string answer = readUntilClosed(again.get(), 10s);
  EXPECT_NE(answer.find("Mcp-Session-Id: "), std::string::npos) << answer;
}

TEST_F(HttpLimits, GlobalLimitCountsEveryAddress) {
  transport::HttpTransportOptions options;
  options.max_connections = 3;
  start(options);
  const common::UniqueFd a(connectFrom(port(), "127.0.0.11"));
  const common::UniqueFd b(connectFrom(port(), "127.0.0.12"));
  const common::UniqueFd c(connectFrom(port(), "127.0.0.13"));
  const common::UniqueFd d(connectFrom(port(), "127.0.0.14"));
  const std::string refused = readUntilClosed(d.get(), 5s);
  EXPECT_NE(refused.find("http.max_connections"), std::string::npos) << refused;
}

TEST_F(HttpLimits, HeaderDrippedSlowlyIsCutOffAtTheHeaderTimeout) {
  transport::HttpTransportOptions options;
  options.header_timeout = 600ms;
  start(options);
  const common::UniqueFd slow(connectFrom(port()));
  const std::string request = postText(initializeBody());
  const auto started = Clock::now();
  bool closed = false;
  for (std::size_t i = 0; i < request.size() && !closed; ++i) {
    if (::send(slow.get(), &request[i], 1, MSG_NOSIGNAL) != 1) break;
    pollfd p{slow.get(), POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) closed = true;  // readable: EOF (nothing else is sent)
  }
  const auto lived = Clock::now() - started;
  EXPECT_TRUE(closed) << "the whole header was accepted a byte every 50 ms";
  EXPECT_LT(lived, 5s);

  // A silent connection is closed too; a prompt client is served.
  const common::UniqueFd silent(connectFrom(port()));
  readUntilClosed(silent.get(), 5s, &closed);
  EXPECT_TRUE(closed);
  const common::UniqueFd prompt(connectFrom(port()));
  sendAll(prompt.get(), request);
  EXPECT_EQ(readUntilClosed(prompt.get(), 10s).rfind("HTTP/1.1 200 ", 0), 0U);
}

TEST_F(HttpLimits, LargeBodiesParsedOffTheIoThreadAreAnsweredOrRefused) {
  transport::HttpTransportOptions options;
  options.inline_parse_max_bytes = 16;  // every body takes the parse pool
  start(options);
  const common::UniqueFd ok(connectFrom(port()));
  sendAll(ok.get(), postText(initializeBody()));
  EXPECT_EQ(readUntilClosed(ok.get(), 10s).rfind("HTTP/1.1 200 ", 0), 0U);

  const std::string deep = R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":)" +
                           std::string(100000, '[') + std::string(100000, ']') + "}";
  const common::UniqueFd bad(connectFrom(port()));
  sendAll(bad.get(), postText(deep));
  const std::string answer = readUntilClosed(bad.get(), 10s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 400 ", 0), 0U) << answer.substr(0, 300);
  EXPECT_NE(answer.find("-32700"), std::string::npos);
  EXPECT_NE(answer.find("nested deeper than 64 levels"), std::string::npos);
}

}  // namespace
