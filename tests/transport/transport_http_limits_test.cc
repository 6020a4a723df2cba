// The HTTP transport against peers that hold connections or send hostile bodies, over raw
// sockets on 127.0.0.1: connection limits (idle connections make room, oldest first; busy ones
// get a newcomer a 503), the header timeout, and bodies large enough to be parsed off the I/O
// thread (still answered; too deep still refused).
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

// Connected and closed by the server (EOF or reset) within `limit`, without sending anything.
bool closedByServer(int fd, std::chrono::milliseconds limit) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0) return false;
  char byte = 0;
  return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
}

// A request under way: its header has begun and never ends (within the test).
void beginRequest(int fd) { sendAll(fd, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"); }

// GET /healthz on a keep-alive connection; returns once the answer is in, leaving it idle.
void healthzKeepingAlive(int fd) {
  sendAll(fd, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  std::string text;
  while (text.find("\r\n\r\nok") == std::string::npos) {
    char buffer[1024];
    const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
    ASSERT_GT(got, 0) << text;
    text.append(buffer, static_cast<std::size_t>(got));
  }
  ASSERT_EQ(text.rfind("HTTP/1.1 200 ", 0), 0U) << text;
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
  static transport::HttpTransportOptions withHealthz() {
    transport::HttpTransportOptions options;
    options.get_endpoints["/healthz"] = [] {
      return transport::PlainResponse{200, "text/plain", "ok", {}};
    };
    return options;
  }

  std::shared_ptr<FakeFactory> factory_ = std::make_shared<FakeFactory>();
  std::unique_ptr<transport::HttpTransport> server_;
};

TEST_F(HttpLimits, PerAddressLimitOfBusyConnectionsAnswers503AndLeavesOtherAddressesIn) {
  transport::HttpTransportOptions options;
  options.max_connections_per_address = 2;
  start(options);
  std::vector<common::UniqueFd> held;
  for (int i = 0; i < 2; ++i) {
    held.emplace_back(connectFrom(port(), "127.0.0.7"));
    beginRequest(held.back().get());
  }
  std::this_thread::sleep_for(200ms);  // the server has seen their requests begin
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
    ids.push_back(answer.substr(header + 16, answer.find("\r\n", header) - header - 16));
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
  for (const int fd : {a.get(), b.get(), c.get()}) beginRequest(fd);
  std::this_thread::sleep_for(200ms);
  const common::UniqueFd d(connectFrom(port(), "127.0.0.14"));
  const std::string refused = readUntilClosed(d.get(), 5s);
  EXPECT_NE(refused.find("http.max_connections"), std::string::npos) << refused;
}

// Every local process shares 127.0.0.1: idle keep-alive connections, and new ones that sent
// nothing yet, must not lock a new client out. The longest idle makes room; busy ones stay.
TEST_F(HttpLimits, IdleConnectionsMakeRoomOldestFirstBusyOnesStay) {
  auto options = withHealthz();
  options.max_connections_per_address = 4;
  start(options);
  const common::UniqueFd busy(connectFrom(port()));
  beginRequest(busy.get());
  const common::UniqueFd oldest(connectFrom(port()));
  healthzKeepingAlive(oldest.get());
  std::this_thread::sleep_for(50ms);
  const common::UniqueFd older(connectFrom(port()));
  healthzKeepingAlive(older.get());
  std::this_thread::sleep_for(50ms);
  const common::UniqueFd silent(connectFrom(port()));  // sent nothing: holds no request either
  std::this_thread::sleep_for(200ms);

  const common::UniqueFd newcomer(connectFrom(port()));
  EXPECT_TRUE(closedByServer(oldest.get(), 5s)) << "the longest idle connection was kept";
  healthzKeepingAlive(newcomer.get());
  const common::UniqueFd next(connectFrom(port()));
  EXPECT_TRUE(closedByServer(older.get(), 5s));
  healthzKeepingAlive(next.get());
  const common::UniqueFd third(connectFrom(port()));
  EXPECT_TRUE(closedByServer(silent.get(), 5s));
  healthzKeepingAlive(third.get());
  EXPECT_FALSE(closedByServer(busy.get(), 200ms)) << "a request under way was cut off";
}

TEST_F(HttpLimits, ARequestInFlightIsNeverReclaimed) {
  auto options = withHealthz();
  options.max_connections_per_address = 1;
  start(options);
  std::string session;
  {
    const common::UniqueFd fd(connectFrom(port(), "127.0.0.21"));
    sendAll(fd.get(), postText(initializeBody()));
    const std::string answer = readUntilClosed(fd.get(), 10s);
    const auto header = answer.find("Mcp-Session-Id: ");
    ASSERT_NE(header, std::string::npos) << answer;
    session = answer.substr(header + 16, answer.find("\r\n", header) - header - 16);
  }
  const common::UniqueFd slow(connectFrom(port(), "127.0.0.22"));
  sendAll(slow.get(), postText(R"({"jsonrpc":"2.0","id":2,"method":"slow"})",
                               "Mcp-Session-Id: " + session + "\r\n"));
  const auto deadline = Clock::now() + 5s;
  while (factory_->last()->slow_started == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(factory_->last()->slow_started, 1);
  const common::UniqueFd refused(connectFrom(port(), "127.0.0.22"));
  const std::string text = readUntilClosed(refused.get(), 5s);
  EXPECT_EQ(text.rfind("HTTP/1.1 503 ", 0), 0U) << text;
  EXPECT_NE(text.find("all with a request under way"), std::string::npos) << text;
  factory_->last()->gate.open();
  const std::string answer = readUntilClosed(slow.get(), 10s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 ", 0), 0U) << answer;
  EXPECT_NE(answer.find(R"("released":true)"), std::string::npos) << answer;
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
