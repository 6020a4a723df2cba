// The egress forwarder's relay, run in-process on a thread against a real Unix-socket "gateway"
// in a temporary directory and real TCP clients on 127.0.0.1.
#include "agent/egress_relay.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "egress_test_support.h"

namespace {

using namespace egress_test;

constexpr std::size_t kMiB = std::size_t{1} << 20;

// The relay on a thread, listening on a free port; stopped and joined on destruction.
class RelayRunner {
 public:
  explicit RelayRunner(const std::string& socket_path,
                       std::size_t max_connections = agent::kMaxEgressConnections) {
    UniqueFd listener = agent::listenOnLoopback(0);
    port_ = agent::boundPort(listener.get());
    auto upstream = agent::makeEgressUpstream(socket_path);
    if (!upstream) throw std::runtime_error("socket path too long: " + socket_path);
    relay_ = std::make_unique<agent::EgressRelay>(std::move(listener), std::move(*upstream),
                                                  max_connections);
    int fds[2];
    check(::pipe2(fds, O_CLOEXEC) == 0, "pipe2");
    stop_read_.reset(fds[0]);
    stop_write_.reset(fds[1]);
    thread_ = std::thread([this] { relay_->run(stop_read_.get()); });
  }
  ~RelayRunner() {
    stop_write_.reset();  // the read end hangs up: run() returns
    thread_.join();
  }
  RelayRunner(const RelayRunner&) = delete;
  RelayRunner& operator=(const RelayRunner&) = delete;

  [[nodiscard]] std::uint16_t port() const { return port_; }

 private:
  std::unique_ptr<agent::EgressRelay> relay_;
  std::uint16_t port_ = 0;
  UniqueFd stop_read_;
  UniqueFd stop_write_;
  std::thread thread_;
};

TEST(EgressRelay, RelaysBytesBothWaysIntact) {
  TempDir dir;
  const UniqueFd gateway = unixListener(dir.file("egress.sock"));
  RelayRunner relay(dir.file("egress.sock"));
  const UniqueFd client = connectTcp(relay.port());
  const UniqueFd upstream = acceptOne(gateway.get());
  const std::string up = randomBytes(8 * kMiB, 1);
  const std::string down = randomBytes(8 * kMiB, 2);

  const auto [at_upstream, at_client] =
      egress_test::exchange(client.get(), up, upstream.get(), down);

  ASSERT_EQ(at_upstream.size(), up.size());
  EXPECT_TRUE(at_upstream == up) << "bytes changed on the way to the gateway";
  ASSERT_EQ(at_client.size(), down.size());
  EXPECT_TRUE(at_client == down) << "bytes changed on the way to the client";
}

TEST(EgressRelay, PassesTheClientsHalfCloseOn) {
  TempDir dir;
  const UniqueFd gateway = unixListener(dir.file("egress.sock"));
  RelayRunner relay(dir.file("egress.sock"));
  const UniqueFd client = connectTcp(relay.port());
  UniqueFd upstream = acceptOne(gateway.get());

  sendAll(client.get(), "GET http://example.com/ HTTP/1.0\r\n\r\n");
  ::shutdown(client.get(), SHUT_WR);
  EXPECT_EQ(readToEof(upstream.get()), "GET http://example.com/ HTTP/1.0\r\n\r\n");
  sendAll(upstream.get(), "HTTP/1.0 200 OK\r\n\r\nstill answered after the client's EOF");
  upstream.reset();
  EXPECT_EQ(readToEof(client.get()),
            "HTTP/1.0 200 OK\r\n\r\nstill answered after the client's EOF");
}

TEST(EgressRelay, PassesTheGatewaysHalfCloseOn) {
  TempDir dir;
  const UniqueFd gateway = unixListener(dir.file("egress.sock"));
  RelayRunner relay(dir.file("egress.sock"));
  const UniqueFd client = connectTcp(relay.port());
  const UniqueFd upstream = acceptOne(gateway.get());

  sendAll(upstream.get(), "banner");
  ::shutdown(upstream.get(), SHUT_WR);
  EXPECT_EQ(readToEof(client.get()), "banner");
  sendAll(client.get(), "words after the gateway's EOF");
  ::shutdown(client.get(), SHUT_WR);
  EXPECT_EQ(readToEof(upstream.get()), "words after the gateway's EOF");
}

TEST(EgressRelay, ServesManyConnectionsAtOnce) {
  constexpr int kConnections = 150;
  TempDir dir;
  const UniqueFd gateway = unixListener(dir.file("egress.sock"));
  RelayRunner relay(dir.file("egress.sock"));
  std::vector<UniqueFd> clients;
  std::vector<UniqueFd> upstreams;
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back(connectTcp(relay.port()));
    upstreams.push_back(acceptOne(gateway.get()));
  }
  auto message = [](int i) {
    std::string text = "client-0000";
    const std::string number = std::to_string(i);
    text.replace(text.size() - number.size(), number.size(), number);
    return text;
  };
  for (int i = 0; i < kConnections; ++i) sendAll(clients[i].get(), message(i));
  for (auto& upstream : upstreams) {  // which client is behind which connection is unknown
    sendAll(upstream.get(), "echo:" + readExactly(upstream.get(), message(0).size()));
    upstream.reset();
  }
  for (int i = 0; i < kConnections; ++i) {
    EXPECT_EQ(readToEof(clients[i].get()), "echo:" + message(i));
  }
}

// The answer a refused client gets: status line, headers, and a body of the announced length.
void expectBadGateway(const std::string& answer, const std::string& reason) {
  ASSERT_TRUE(answer.starts_with("HTTP/1.1 502 Bad Gateway\r\n")) << answer;
  const auto body_at = answer.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos) << answer;
  const std::string body = answer.substr(body_at + 4);
  EXPECT_NE(answer.find("Content-Length: " + std::to_string(body.size()) + "\r\n"),
            std::string::npos)
      << answer;
  EXPECT_NE(body.find("egress gateway is not reachable"), std::string::npos) << body;
  EXPECT_NE(body.find(reason), std::string::npos) << body;
  EXPECT_NE(body.find("start a new session"), std::string::npos) << body;
}

TEST(EgressRelay, AnswersBadGatewayWhenTheSocketIsMissing) {
  TempDir dir;
  RelayRunner relay(dir.file("missing.sock"));
  const UniqueFd client = connectTcp(relay.port());
  sendAll(client.get(), "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n");
  expectBadGateway(readToEof(client.get()), "No such file or directory");
}

TEST(EgressRelay, AnswersBadGatewayWhenNobodyListens) {
  TempDir dir;
  const UniqueFd not_listening = unixListener(dir.file("egress.sock"), /*listen=*/false);
  RelayRunner relay(dir.file("egress.sock"));
  const UniqueFd client = connectTcp(relay.port());
  expectBadGateway(readToEof(client.get()), "Connection refused");
}

TEST(EgressRelay, ClosesBothSidesWhenAClientVanishesMidTransfer) {
  TempDir dir;
  const UniqueFd gateway = unixListener(dir.file("egress.sock"));
  RelayRunner relay(dir.file("egress.sock"));
  const int baseline = openFdCount();
  {
    UniqueFd client = connectTcp(relay.port());
    UniqueFd upstream = acceptOne(gateway.get());
    // The gateway sends more than every buffer on the way holds, until the relay hangs up.
    std::thread streamer([&] {
      const std::string chunk(kMiB, 'x');
      while (::send(upstream.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL) > 0 ||
             errno == EINTR) {
      }
    });
    (void)readExactly(client.get(), 64 * std::size_t{1024});
    const linger reset{1, 0};  // close with a reset, as a killed process's socket may
    ::setsockopt(client.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    client.reset();
    streamer.join();  // send failed: the relay closed its side
  }
  EXPECT_TRUE(eventually([&] { return openFdCount() == baseline; }))
      << "open fds: " << openFdCount() << ", before the connection: " << baseline;
}

TEST(EgressRelay, ClosesConnectionsPastTheLimitAtOnce) {
  TempDir dir;
  const UniqueFd gateway = unixListener(dir.file("egress.sock"));
  RelayRunner relay(dir.file("egress.sock"), /*max_connections=*/2);
  const UniqueFd first = connectTcp(relay.port());
  const UniqueFd first_upstream = acceptOne(gateway.get());
  const UniqueFd second = connectTcp(relay.port());
  const UniqueFd second_upstream = acceptOne(gateway.get());

  const UniqueFd third = connectTcp(relay.port());
  EXPECT_EQ(readToEof(third.get()), "");
  sendAll(first.get(), "still served");
  EXPECT_EQ(readExactly(first_upstream.get(), 12), "still served");
}

TEST(EgressRelay, ListenOnLoopbackSaysWhyAPortIsTaken) {
  const UniqueFd taken = agent::listenOnLoopback(0);
  try {
    (void)agent::listenOnLoopback(agent::boundPort(taken.get()));
    FAIL() << "a second listener on the same port";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("pick another port"), std::string::npos) << e.what();
  }
}

}  // namespace
