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
