#include "server/session_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fake_backend.h"

namespace {

using namespace std::chrono_literals;
using sandbox::SandboxError;
using server::SessionOptions;
using server::SessionRegistry;

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return condition();
}

// The message of the SandboxError `f` throws; empty when it throws none.
std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const SandboxError& e) {
    return e.what();
  }
  return {};
}

class SessionRegistryTest : public ::testing::Test {
 protected:
  // No sandboxes made ahead: what the backend counts is the sessions'.
  SessionRegistryTest() { cfg.pool.size = 0; }

  SessionRegistry& registry() {
    if (!registry_) {
      registry_ = std::make_unique<SessionRegistry>(
          cfg, std::make_unique<server::SessionFactory>(cfg, backend));
    }
    return *registry_;
  }
  SessionRegistry::Acquired acquire(const std::string& owner, const std::string& id) {
    return registry().acquire(owner, id, SessionOptions{}, false);
  }

  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  std::unique_ptr<SessionRegistry> registry_;  // last: destroyed before the backend
};

TEST_F(SessionRegistryTest, CreatesOnceThenFindsBySameOwnerAndId) {
  const auto first = acquire("alice", "a");
  EXPECT_TRUE(first.created);
  EXPECT_FALSE(first.lost_reason);
  const auto again = acquire("alice", "a");
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.session, first.session);
  EXPECT_EQ(registry().find("alice", "a"), first.session);
  EXPECT_EQ(backend.created, 1);

  const auto other = errorOf([&] { (void)registry().find("bob", "a"); });
  EXPECT_NE(other.find("Unknown session 'a'"), std::string::npos) << other;
  EXPECT_NE(other.find("belongs to another client"), std::string::npos) << other;
}

TEST_F(SessionRegistryTest, AnEmptyIdGetsAFreshValidOne) {
  const auto a = acquire("alice", "");
  const auto b = acquire("alice", "");
  EXPECT_EQ(a.session->id().rfind("s-", 0), 0U) << a.session->id();
  EXPECT_EQ(a.session->id().size(), 2U + 32U) << "128 random bits: " << a.session->id();
  EXPECT_FALSE(SessionRegistry::checkSessionId(a.session->id()));
  EXPECT_NE(a.session->id(), b.session->id());
  EXPECT_EQ(registry().size(), 2U);
}

TEST_F(SessionRegistryTest, SessionIdsAreChecked) {
  EXPECT_FALSE(SessionRegistry::checkSessionId("ok-1_.x"));
  EXPECT_TRUE(SessionRegistry::checkSessionId(std::string(65, 'a')));
  EXPECT_FALSE(SessionRegistry::checkSessionId(std::string(64, 'a')));
  EXPECT_TRUE(SessionRegistry::checkSessionId("a/b"));
  EXPECT_TRUE(SessionRegistry::checkSessionId("a b"));
  EXPECT_NE(errorOf([&] { (void)acquire("alice", "../x"); }).find("session_id may only contain"),
            std::string::npos);
  EXPECT_EQ(backend.created, 0);
}

TEST_F(SessionRegistryTest, OptionsGivenForAnExistingSessionMustMatch) {
  SessionOptions with_env;
  with_env.environment = {{"A", "1"}};
  (void)registry().acquire("alice", "a", with_env, true);
  SessionOptions other_env;
  other_env.environment = {{"A", "2"}};
  const auto error = errorOf([&] { (void)registry().acquire("alice", "a", other_env, true); });
  EXPECT_NE(error.find("different environment"), std::string::npos) << error;
  // Not given: the session is used as it is.
  EXPECT_FALSE(registry().acquire("alice", "a", other_env, false).created);
  EXPECT_EQ(backend.created, 1);
}

TEST_F(SessionRegistryTest, PerClientAndServerSessionLimits) {
  cfg.sessions.max_sessions_per_client = 1;
  cfg.sessions.max_sessions = 2;
  (void)acquire("alice", "a");
  const auto per_client = errorOf([&] { (void)acquire("alice", "b"); });
  EXPECT_NE(per_client.find("sessions.max_sessions_per_client"), std::string::npos) << per_client;
  (void)acquire("bob", "a");
  const auto server_wide = errorOf([&] { (void)acquire("carol", "a"); });
  EXPECT_NE(server_wide.find("(sessions.max_sessions)"), std::string::npos) << server_wide;
  EXPECT_EQ(backend.created, 2);
  // Reusing an existing session is never refused.
  EXPECT_FALSE(acquire("alice", "a").created);
}

TEST_F(SessionRegistryTest, AFailedCreationLeavesNothingBehind) {
  backend.fail_creates = true;
  EXPECT_NE(errorOf([&] { (void)acquire("alice", "a"); }).find("engine unavailable"),
            std::string::npos);
  EXPECT_EQ(registry().size(), 0U);
  backend.fail_creates = false;
  EXPECT_TRUE(acquire("alice", "a").created);
}

TEST_F(SessionRegistryTest, ADeadSandboxIsForgottenAndItsIdStartsFreshSayingWhy) {
  const auto first = acquire("alice", "a");
  backend.sandboxes_alive->store(false);
  const auto lost = errorOf([&] { (void)registry().find("alice", "a"); });
  EXPECT_NE(lost.find("was lost (the sandbox stopped)"), std::string::npos) << lost;
  EXPECT_EQ(registry().size(), 0U);

  backend.sandboxes_alive = std::make_shared<std::atomic<bool>>(true);  // new sandboxes live
  const auto fresh = acquire("alice", "a");
  EXPECT_TRUE(fresh.created);
  EXPECT_NE(fresh.session, first.session);
  ASSERT_TRUE(fresh.lost_reason);
  EXPECT_EQ(*fresh.lost_reason, "the sandbox stopped");
  EXPECT_FALSE(acquire("alice", "a").lost_reason) << "told once";
}

TEST_F(SessionRegistryTest, RemoveListAndCloseOwnerDestroyOnlyWhatTheyName) {
  (void)acquire("alice", "a");
  (void)acquire("alice", "b");
  (void)acquire("bob", "a");
  EXPECT_EQ(backend.live, 3);
  EXPECT_EQ(registry().list("alice").size(), 2U);

  EXPECT_TRUE(registry().remove("alice", "a"));
  EXPECT_FALSE(registry().remove("alice", "a"));
  EXPECT_EQ(backend.live, 2);

  registry().closeOwner("alice");
  EXPECT_EQ(backend.live, 1);
  EXPECT_TRUE(registry().list("alice").empty());
  ASSERT_EQ(registry().list("bob").size(), 1U);
  EXPECT_EQ(registry().list("bob")[0]->id(), "a");
}

TEST_F(SessionRegistryTest, ShutdownDestroysEverySessionAndRefusesNewOnes) {
  (void)acquire("alice", "a");
  (void)acquire("bob", "b");
  registry().shutdown();
  EXPECT_EQ(backend.live, 0);
  EXPECT_EQ(registry().size(), 0U);
  EXPECT_NE(errorOf([&] { (void)acquire("alice", "c"); }).find("shutting down"), std::string::npos);
  registry().shutdown();  // idempotent
}

// Shutdown does not wait for a session's image build: it stops it, and the caller is told.
TEST_F(SessionRegistryTest, ShutdownStopsABuildUnderWayInsteadOfWaitingForIt) {
  cfg.sandbox.allow_dockerfile = true;
  std::atomic<bool> building{false};
  backend.on_build = [&building](const CancelToken& cancel) -> std::string {
    building = true;
    const auto deadline = std::chrono::steady_clock::now() + 10s;  // a 90 s step, shortened
    while (!cancel.cancelled() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    if (!cancel.cancelled()) return "built:1";
    throw SandboxError("the build was stopped at the RUN step at dockerfile line 2");
  };
  SessionOptions options;
  options.dockerfile = "FROM " + cfg.sandbox.image + "\nRUN sleep 90\n";
  auto& sessions = registry();
  std::string error;
  std::thread caller(
      [&] { error = errorOf([&] { (void)sessions.acquire("alice", "a", options, true); }); });
  ASSERT_TRUE(eventually([&] { return building.load(); }));
  const auto started = std::chrono::steady_clock::now();
  sessions.shutdown();
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "shutdown waited for the build";
  EXPECT_EQ(error.rfind("the server is shutting down", 0), 0U) << error;
  EXPECT_EQ(backend.created, 0) << "a sandbox was started from the image during shutdown";
}

TEST_F(SessionRegistryTest, IdleSessionsExpireButOnesInUseStay) {
  cfg.sessions.idle_timeout_s = 1;
  auto busy = acquire("alice", "busy").session;
  const server::SessionUse use(busy);
  (void)acquire("alice", "idle");
  busy.reset();
  ASSERT_TRUE(eventually([&] { return registry().size() == 1; }, 10s));
  EXPECT_NO_THROW((void)registry().find("alice", "busy"));
  EXPECT_EQ(backend.live, 1) << "the expired session's sandbox is destroyed";
}

TEST_F(SessionRegistryTest, ExecutionSlotsPerClientAndServerWide) {
  cfg.execution.max_concurrent = 2;
  cfg.execution.max_concurrent_per_client = 1;
  std::vector<server::ExecutionClaim> held;
  held.push_back(registry().claimExecutionSlot("alice"));
  const auto per_client = errorOf([&] { (void)registry().claimExecutionSlot("alice"); });
  EXPECT_NE(per_client.find("execution.max_concurrent_per_client"), std::string::npos)
      << per_client;
  held.push_back(registry().claimExecutionSlot("bob"));
  const auto server_wide = errorOf([&] { (void)registry().claimExecutionSlot("carol"); });
  EXPECT_NE(server_wide.find("(execution.max_concurrent)"), std::string::npos) << server_wide;
  EXPECT_EQ(registry().executionSlots().inUse(), 2U);

  held.clear();
  EXPECT_EQ(registry().executionSlots().inUse(), 0U);
  EXPECT_NO_THROW((void)registry().claimExecutionSlot("carol"));
}

}  // namespace
