#include "transport/session_registry.h"

#include <gtest/gtest.h>

#include <set>

#include "fake_endpoint.h"

namespace {

using transport::SessionRegistry;
using transport_test::FakeEndpoint;
using namespace std::chrono_literals;

TEST(Unit, SessionIdsAreRandomHex128) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string id = transport::newSessionId();
    ASSERT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(Unit, SessionRegistryFindsAndRemoves) {
  SessionRegistry registry;
  auto endpoint = std::make_shared<FakeEndpoint>();
  const auto now = SessionRegistry::Clock::now();
  registry.add("abc", "alice", endpoint, now);
  EXPECT_EQ(registry.size(), 1u);
  {
    auto lease = registry.acquire("abc", "alice", now);
    ASSERT_TRUE(lease.has_value());
    EXPECT_EQ(lease->endpoint(), endpoint);
  }
  EXPECT_FALSE(registry.acquire("abd", "alice", now).has_value());
  EXPECT_EQ(registry.remove("abc", "alice"), endpoint);
  EXPECT_EQ(registry.remove("abc", "alice"), nullptr);
  EXPECT_FALSE(registry.acquire("abc", "alice", now).has_value());
}

// A session answers only the principal that opened it: to another it does not exist.
TEST(Unit, SessionRegistryKeepsEachPrincipalsSessionsItsOwn) {
  SessionRegistry registry;
  auto endpoint = std::make_shared<FakeEndpoint>();
  const auto now = SessionRegistry::Clock::now();
  registry.add("abc", "alice", endpoint, now);
  EXPECT_FALSE(registry.acquire("abc", "mallory", now).has_value());
  EXPECT_EQ(registry.remove("abc", "mallory"), nullptr);
  EXPECT_EQ(registry.size(), 1u);
  EXPECT_TRUE(registry.acquire("abc", "alice", now).has_value());
}

TEST(Unit, SessionRegistryExpiresOnlyIdleUnusedSessions) {
  SessionRegistry registry;
  const auto start = SessionRegistry::Clock::now();
  auto idle = std::make_shared<FakeEndpoint>();
  auto busy = std::make_shared<FakeEndpoint>();
  registry.add("idle", "local", idle, start);
  registry.add("busy", "local", busy, start);
  auto lease = registry.acquire("busy", "local", start);
  ASSERT_TRUE(lease.has_value());

  EXPECT_TRUE(registry.takeIdle(start + 10s, 30s).empty());
  const auto expired = registry.takeIdle(start + 31s, 30s);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0], idle);
  EXPECT_EQ(registry.size(), 1u);  // the leased one stays however old

  lease.reset();  // release refreshes its idle clock to "now"
  EXPECT_TRUE(registry.takeIdle(SessionRegistry::Clock::now() + 29s, 30s).empty());
  EXPECT_EQ(registry.takeIdle(SessionRegistry::Clock::now() + 31s, 30s).size(), 1u);
  EXPECT_EQ(registry.size(), 0u);
}

TEST(Unit, SessionRegistryTakeAllEmptiesIt) {
  SessionRegistry registry;
  const auto now = SessionRegistry::Clock::now();
  registry.add("a", "local", std::make_shared<FakeEndpoint>(), now);
  registry.add("b", "local", std::make_shared<FakeEndpoint>(), now);
  EXPECT_EQ(registry.takeAll().size(), 2u);
  EXPECT_EQ(registry.size(), 0u);
}

}  // namespace
