// The CONNECT tunnel's relay (sidecar/tunnel.h) over Unix socket pairs standing for the sandbox's
// and the upstream's connections: bytes go both ways in order, the proxy's first bytes go first,
// a half-close is passed on, and the tunnel ends, once, when both sides closed, when idle, or at
// its byte limit.
#include "sidecar/tunnel.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>

namespace {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;
using namespace std::chrono_literals;

sidecar::TunnelSocket generic(asio::io_context& io, local::socket socket) {
  sidecar::TunnelSocket out(io);
  out.assign(asio::generic::stream_protocol(AF_UNIX, 0), socket.release());
  return out;
}

// A sandbox end and an upstream end the test drives (blocking), with the tunnel between them.
struct Rig {
  explicit Rig(sidecar::TunnelLimits limits = {}, std::string first_up = {}) {
    local::socket sandbox_inner(io);
    local::socket upstream_inner(io);
    asio::local::connect_pair(sandbox, sandbox_inner);
    asio::local::connect_pair(upstream, upstream_inner);
    sidecar::startTunnel(generic(io, std::move(sandbox_inner)),
                         generic(io, std::move(upstream_inner)), std::move(first_up), limits,
                         [this](const sidecar::TunnelResult& result) {
                           ++done_calls;
                           finished.set_value(result);
                         });
    thread = std::thread([this] { io.run(); });
  }
  ~Rig() {
    io.stop();
    thread.join();
  }
  static std::string readExactly(local::socket& from, std::size_t n) {
    std::string out(n, '\0');
    asio::read(from, asio::buffer(out));
    return out;
  }

  asio::io_context io;
  local::socket sandbox{io};
  local::socket upstream{io};
  std::promise<sidecar::TunnelResult> finished;
  std::atomic<int> done_calls{0};
  std::thread thread;
};

TEST(Tunnel, RelaysBothWaysAndPassesAHalfCloseOn) {
  Rig rig({}, "HELLO:");
  asio::write(rig.sandbox, asio::buffer(std::string("ping")));
  EXPECT_EQ(Rig::readExactly(rig.upstream, 10), "HELLO:ping") << "the proxy's first bytes first";
  asio::write(rig.upstream, asio::buffer(std::string("pong")));
  EXPECT_EQ(Rig::readExactly(rig.sandbox, 4), "pong");

  rig.sandbox.shutdown(local::socket::shutdown_send);  // the sandbox is done sending
  std::array<char, 8> buffer{};
  boost::system::error_code ec;
  (void)rig.upstream.read_some(asio::buffer(buffer), ec);
  EXPECT_EQ(ec, asio::error::eof) << "the upstream sees the half-close";
  asio::write(rig.upstream, asio::buffer(std::string("late reply")));
  EXPECT_EQ(Rig::readExactly(rig.sandbox, 10), "late reply") << "the other way still flows";
  rig.upstream.close();

  auto future = rig.finished.get_future();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  const auto result = future.get();
  EXPECT_EQ(result.end, "closed");
  EXPECT_EQ(result.up, 10U);
  EXPECT_EQ(result.down, 14U);
  EXPECT_EQ(rig.done_calls.load(), 1);
}

TEST(Tunnel, EndsWhenIdle) {
  sidecar::TunnelLimits limits;
  limits.idle = 150ms;
  Rig rig(limits);
  auto future = rig.finished.get_future();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(future.get().end, "idle");
  std::array<char, 8> buffer{};
  boost::system::error_code ec;
  (void)rig.sandbox.read_some(asio::buffer(buffer), ec);
  EXPECT_TRUE(ec) << "the sandbox's side is closed";
}

TEST(Tunnel, EndsAtItsByteLimit) {
  sidecar::TunnelLimits limits;
  limits.max_bytes = 4096;
  Rig rig(limits);
  const std::string big(std::size_t{64} * 1024, 'x');
  boost::system::error_code ec;
  asio::write(rig.sandbox, asio::buffer(big), ec);  // may fail once the tunnel closes
  auto future = rig.finished.get_future();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  const auto result = future.get();
  EXPECT_EQ(result.end, "limit");
  EXPECT_GE(result.up, 4096U);
  EXPECT_LE(result.up, 4096U + std::size_t{64} * 1024) << "stops within one read of the limit";
}

}  // namespace
