#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/accept_backoff.h"
#include "transport/connection_limiter.h"

namespace {

using transport::ConnectionLimiter;

TEST(ConnectionLimiter, PerAddressBoundLeavesOtherAddressesIn) {
  auto limiter = std::make_shared<ConnectionLimiter>(10, 2);
  std::string why;
  std::vector<ConnectionLimiter::Slot> held;
  for (int i = 0; i < 2; ++i) {
    auto slot = limiter->tryAcquire("10.0.0.1", why);
    ASSERT_TRUE(slot);
    held.push_back(std::move(*slot));
  }
  EXPECT_FALSE(limiter->tryAcquire("10.0.0.1", why));
  EXPECT_NE(why.find("max_connections_per_address"), std::string::npos) << why;
  auto other = limiter->tryAcquire("10.0.0.2", why);
  EXPECT_TRUE(other);
  EXPECT_EQ(limiter->total(), 3U);
  EXPECT_EQ(limiter->fromAddress("10.0.0.1"), 2U);
}

TEST(ConnectionLimiter, TotalBoundAndReleaseOnDestruction) {
  auto limiter = std::make_shared<ConnectionLimiter>(2, 5);
  std::string why;
  std::optional<ConnectionLimiter::Slot> a = limiter->tryAcquire("a", why);
  std::optional<ConnectionLimiter::Slot> b = limiter->tryAcquire("b", why);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(limiter->tryAcquire("c", why));
  EXPECT_NE(why.find("http.max_connections"), std::string::npos) << why;
  a.reset();
  EXPECT_EQ(limiter->total(), 1U);
  EXPECT_EQ(limiter->fromAddress("a"), 0U);
  EXPECT_TRUE(limiter->tryAcquire("c", why));  // released again at once (a temporary)
  EXPECT_EQ(limiter->total(), 1U);
}

TEST(ConnectionLimiter, MovedAndResetSlotsReleaseOnce) {
  auto limiter = std::make_shared<ConnectionLimiter>(0, 0);  // 0: no bound
  std::string why;
  ConnectionLimiter::Slot slot = std::move(*limiter->tryAcquire("x", why));
  ConnectionLimiter::Slot moved = std::move(slot);
  EXPECT_EQ(limiter->total(), 1U);
  slot = ConnectionLimiter::Slot();  // the moved-from slot owns nothing
  EXPECT_EQ(limiter->total(), 1U);
  moved = ConnectionLimiter::Slot();
  EXPECT_EQ(limiter->total(), 0U);
}

// A connection's stand-in: reclaiming it records that it was asked to close.
struct FakeConnection {
  ConnectionLimiter::Slot slot;
  bool asked_to_close = false;
  void idle() {
    slot.markIdle([this] { asked_to_close = true; });
  }
};

FakeConnection open(const std::shared_ptr<ConnectionLimiter>& limiter, const std::string& address) {
  std::string why;
  auto slot = limiter->tryAcquire(address, why);
  EXPECT_TRUE(slot) << why;
  return FakeConnection{slot ? std::move(*slot) : ConnectionLimiter::Slot()};
}

TEST(ConnectionLimiter, AtTheAddressBoundTheLongestIdleOfThatAddressMakesRoom) {
  auto limiter = std::make_shared<ConnectionLimiter>(10, 3);
  std::vector<FakeConnection> conns;
  conns.reserve(4);
  for (int i = 0; i < 3; ++i) conns.push_back(open(limiter, "10.0.0.1"));
  auto elsewhere = open(limiter, "10.0.0.2");
  elsewhere.idle();  // idle longest, but another address's: not this bound's to reclaim
  conns[1].idle();
  conns[0].idle();
  conns[2].idle();
  EXPECT_EQ(limiter->idle(), 4U);
  auto newcomer = open(limiter, "10.0.0.1");
  EXPECT_TRUE(conns[1].asked_to_close);
  EXPECT_FALSE(conns[0].asked_to_close || conns[2].asked_to_close || elsewhere.asked_to_close);
  EXPECT_EQ(limiter->fromAddress("10.0.0.1"), 3U);
  EXPECT_EQ(limiter->total(), 4U);
  EXPECT_EQ(limiter->reclaimed(), 1U);
  // The reclaimed connection learns it when a request arrives; its close gives back nothing.
  EXPECT_FALSE(conns[1].slot.markBusy());
  conns[1].slot = ConnectionLimiter::Slot();
  EXPECT_EQ(limiter->fromAddress("10.0.0.1"), 3U);
  EXPECT_EQ(limiter->total(), 4U);
}

TEST(ConnectionLimiter, AtTheTotalBoundTheLongestIdleOfAnyAddressMakesRoom) {
  auto limiter = std::make_shared<ConnectionLimiter>(3, 3);
  auto a = open(limiter, "a");
  auto b = open(limiter, "b");
  auto c = open(limiter, "c");
  b.idle();
  a.idle();
  auto d = open(limiter, "d");
  EXPECT_TRUE(b.asked_to_close);
  EXPECT_FALSE(a.asked_to_close);
  EXPECT_EQ(limiter->fromAddress("b"), 0U);
  EXPECT_EQ(limiter->total(), 3U);
}

TEST(ConnectionLimiter, BusyConnectionsAreNeverReclaimedSoTheNewcomerIsRefused) {
  auto limiter = std::make_shared<ConnectionLimiter>(10, 2);
  auto a = open(limiter, "10.0.0.1");  // never idle: its request is in progress
  auto b = open(limiter, "10.0.0.1");
  b.idle();
  EXPECT_TRUE(b.slot.markBusy());  // the next request's first bytes arrived
  EXPECT_EQ(limiter->idle(), 0U);
  std::string why;
  EXPECT_FALSE(limiter->tryAcquire("10.0.0.1", why));
  EXPECT_NE(why.find("all with a request under way"), std::string::npos) << why;
  EXPECT_NE(why.find("max_connections_per_address"), std::string::npos) << why;
  EXPECT_FALSE(a.asked_to_close || b.asked_to_close);
  b.idle();  // done with it: waiting again, and reclaimable again
  EXPECT_TRUE(limiter->tryAcquire("10.0.0.1", why));
  EXPECT_TRUE(b.asked_to_close);
}

TEST(ConnectionLimiter, AClosedIdleConnectionLeavesTheIdleOrder) {
  auto limiter = std::make_shared<ConnectionLimiter>(2, 2);
  auto a = open(limiter, "x");
  auto b = open(limiter, "x");
  a.idle();
  a.slot = ConnectionLimiter::Slot();  // closed by its client
  EXPECT_EQ(limiter->idle(), 0U);
  EXPECT_EQ(limiter->total(), 1U);
  auto c = open(limiter, "x");  // a free place: nothing reclaimed
  EXPECT_FALSE(b.asked_to_close);
  EXPECT_EQ(limiter->reclaimed(), 0U);
}

TEST(ConnectionLimiter, DefaultBoundsTakeHalfTheOpenFilesAndHalfOfThatPerAddress) {
  using transport::defaultConnectionBounds;
  EXPECT_EQ(defaultConnectionBounds(1024).total, 512U);
  EXPECT_EQ(defaultConnectionBounds(1024).per_address, 256U);
  EXPECT_EQ(defaultConnectionBounds(20000).total, 8192U);  // capped: memory, not descriptors
  EXPECT_EQ(defaultConnectionBounds(20000).per_address, 4096U);
  EXPECT_EQ(defaultConnectionBounds(256).total, 128U);
  EXPECT_EQ(defaultConnectionBounds(0).total, 256U);  // unknown
  EXPECT_EQ(defaultConnectionBounds(0).per_address, 128U);
}

TEST(AcceptBackoff, LogsTheFirstFailureThenAtMostEveryTenSecondsWithTheCount) {
  using common::AcceptBackoff;
  AcceptBackoff backoff;
  const auto t0 = AcceptBackoff::Clock::now();
  EXPECT_EQ(backoff.onFailure(t0), std::optional<std::uint64_t>(1));
  for (int i = 1; i < 100; ++i) {
    EXPECT_FALSE(backoff.onFailure(t0 + std::chrono::milliseconds(100 * i)));
  }
  EXPECT_EQ(backoff.onFailure(t0 + AcceptBackoff::kLogEvery + std::chrono::seconds(1)),
            std::optional<std::uint64_t>(100));
  EXPECT_FALSE(AcceptBackoff::isTransient(EMFILE));
  EXPECT_FALSE(AcceptBackoff::isTransient(ENFILE));
  EXPECT_TRUE(AcceptBackoff::isTransient(ECONNABORTED));
}

}  // namespace
