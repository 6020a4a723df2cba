// PortRelays in-process, on an EventLoop the test runs: limits and timeouts made small so the
// cases the agent binary would take seconds (or 256 connections) to reach run at once.
#include "agent/port_relay.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "port_test_support.h"

namespace {

using egress_test::acceptOne;
using egress_test::readExactly;
using egress_test::readToEof;
using egress_test::sendAll;
using egress_test::UniqueFd;
using egress_test::unixListener;
using port_test::TcpServer;
using namespace std::chrono_literals;

// Runs `loop` until `done()` holds or `timeout` passes; returns done().
bool runUntil(agent::EventLoop& loop, const std::function<bool()>& done,
              std::chrono::milliseconds timeout = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::function<void()> check = [&] {
    if (done() || std::chrono::steady_clock::now() >= deadline) {
      loop.stop();
      return;
    }
    loop.addTimer(1ms, check);
  };
  loop.addTimer(0ms, check);
  loop.run();
  return done();
}

// What `done` received: unset until it runs; then nullopt (relaying) or the error.
struct Answer {
  bool answered = false;
  std::optional<std::string> error;
  agent::PortRelays::Done callback() {
    return [this](const std::optional<std::string>& result) {
      answered = true;
      error = result;
    };
  }
};

class PortRelaysTest : public ::testing::Test {
 protected:
  protocol::OpenPortRequest request(std::uint16_t port) const {
    return {port, dir_.file("preview.sock"), port_test::kToken};
  }
  // Takes both ends of a connection the relays made (the token read off first).
  std::pair<UniqueFd, UniqueFd> acceptBoth() {
    UniqueFd host = acceptOne(door_.get());
    EXPECT_EQ(readExactly(host.get(), 33), std::string(port_test::kToken) + "\n");
    return {acceptOne(server_.listener.get()), std::move(host)};
  }

  egress_test::TempDir dir_;
  UniqueFd door_ = unixListener(dir_.file("preview.sock"));
  TcpServer server_ = port_test::tcpServer();
  agent::EventLoop loop_;
};

TEST_F(PortRelaysTest, GivesUpOnAServerThatDoesNotAccept) {
  agent::PortRelays relays(loop_, {.max_connections = 4, .connect_timeout = 200ms});
  const TcpServer busy = port_test::tcpServer(/*backlog=*/0);
  const auto fillers = port_test::fillBacklog(busy.port);
  Answer answer;
  const auto start = std::chrono::steady_clock::now();
  relays.open(request(busy.port), answer.callback());
  EXPECT_FALSE(answer.answered) << "the connect waits in the loop, not in open()";
  ASSERT_TRUE(runUntil(loop_, [&] { return answer.answered; }));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 2s);
  ASSERT_TRUE(answer.error.has_value());
  EXPECT_NE(answer.error->find("the server on 127.0.0.1:" + std::to_string(busy.port) +
                               " in the sandbox does not accept connections"),
            std::string::npos)
      << *answer.error;
  EXPECT_EQ(relays.size(), 0U);
}

TEST_F(PortRelaysTest, RefusesPastTheLimitAndFreesTheSlotOfAFinishedConnection) {
  agent::PortRelays relays(loop_, {.max_connections = 2});
  std::vector<std::pair<UniqueFd, UniqueFd>> ends;
  for (int i = 0; i < 2; ++i) {
    Answer answer;
    relays.open(request(server_.port), answer.callback());
    ASSERT_TRUE(runUntil(loop_, [&] { return answer.answered; }));
    ASSERT_EQ(answer.error, std::nullopt);
    ends.push_back(acceptBoth());
  }
  Answer refused;
  relays.open(request(server_.port), refused.callback());
  ASSERT_TRUE(refused.answered) << "refused at once";
  EXPECT_EQ(refused.error,
            "too many preview connections are open in the sandbox (2); close some and retry");

  ends.front() = {};  // both ends close
  ASSERT_TRUE(runUntil(loop_, [&] { return relays.size() == 1; }));
  Answer again;
  relays.open(request(server_.port), again.callback());
  ASSERT_TRUE(runUntil(loop_, [&] { return again.answered; }));
  EXPECT_EQ(again.error, std::nullopt);
  const auto [sandbox, host] = acceptBoth();
  sendAll(host.get(), "ping");
  ASSERT_TRUE(runUntil(loop_, [&, fd = sandbox.get()] {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }));
  EXPECT_EQ(readExactly(sandbox.get(), 4), "ping");
}

TEST_F(PortRelaysTest, CloseAllClosesRelaysAndAnswersConnectsInProgress) {
  agent::PortRelays relays(loop_);
  Answer relaying;
  relays.open(request(server_.port), relaying.callback());
  ASSERT_TRUE(runUntil(loop_, [&] { return relaying.answered; }));
  ASSERT_EQ(relaying.error, std::nullopt);
  const auto [sandbox, host] = acceptBoth();

  const TcpServer busy = port_test::tcpServer(/*backlog=*/0);
  const auto fillers = port_test::fillBacklog(busy.port);
  Answer pending;
  relays.open(request(busy.port), pending.callback());
  ASSERT_FALSE(pending.answered);

  relays.closeAll("suspended");
  EXPECT_EQ(relays.size(), 0U);
  EXPECT_TRUE(pending.answered);
  EXPECT_EQ(pending.error, "suspended");
  EXPECT_EQ(readToEof(sandbox.get()), "");
  EXPECT_EQ(readToEof(host.get()), "");
}

}  // namespace
