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

// A caller that is its own quota, with the configured per-client limits.
server::Caller callerOf(const config::ServerConfig& cfg, const std::string& owner) {
  return {owner, owner, static_cast<std::size_t>(cfg.sessions.max_sessions_per_client),
          static_cast<std::size_t>(cfg.execution.max_concurrent_per_client)};
}

class SessionRegistryTest : public ::testing::Test {
 protected:
  // No sandboxes made ahead: what the backend counts is the sessions'.
  SessionRegistryTest() { cfg.pool.size = 0; }

  SessionRegistry& registry() {
    if (!registry_) {
      registry_ = std::make_unique<SessionRegistry>(
          cfg, std::make_unique<server::SessionFactory>(cfg, backend), "replica-a");
    }
    return *registry_;
  }
  // `id` empty: a new session.
  SessionRegistry::Acquired acquire(const std::string& owner, const std::string& id = {}) {
    return registry().acquire(callerOf(cfg, owner), id, SessionOptions{}, false);
  }
  // A new session's id.
  std::string create(const std::string& owner) { return acquire(owner).session->id(); }

  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  std::unique_ptr<SessionRegistry> registry_;  // last: destroyed before the backend
};

TEST_F(SessionRegistryTest, CreatesOnceThenFindsBySameOwnerAndId) {
  const auto first = acquire("alice");
  EXPECT_TRUE(first.created);
  EXPECT_FALSE(first.lost_reason);
  const std::string id = first.session->id();
  const auto again = acquire("alice", id);
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.session, first.session);
  EXPECT_EQ(registry().find("alice", id), first.session);
  EXPECT_EQ(backend.created, 1);

  const auto other = errorOf([&] { (void)registry().find("bob", id); });
  EXPECT_NE(other.find("Unknown session '" + id + "'"), std::string::npos) << other;
  EXPECT_NE(other.find("belongs to another client"), std::string::npos) << other;
  const auto reached = errorOf([&] { (void)acquire("bob", id); });
  EXPECT_NE(reached.find("Unknown session '" + id + "'"), std::string::npos) << reached;
  EXPECT_EQ(backend.created, 1) << "another owner naming the id got a sandbox";
}

TEST_F(SessionRegistryTest, AnEmptyIdGetsAFreshUnguessableOneNamingTheReplica) {
  const auto a = acquire("alice");
  const auto b = acquire("alice");
  const std::string& id = a.session->id();
  ASSERT_EQ(id.size(), 2U + 32U + 1U + 9U) << "s-, 128 random bits, ~replica-a: " << id;
  EXPECT_EQ(id.rfind("s-", 0), 0U) << id;
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 2), 34U) << id;
  EXPECT_EQ(id.substr(34), "~replica-a");
  EXPECT_FALSE(SessionRegistry::checkSessionId(id));
  EXPECT_NE(id, b.session->id());
  EXPECT_EQ(registry().size(), 2U);
}

// A handle is minted, never chosen: naming an id nobody was given is an error that says what to
// do, and starts nothing.
TEST_F(SessionRegistryTest, AnUnknownIdIsAnErrorNotANewSandbox) {
  for (const std::string id : {"my-session", "s-00000000000000000000000000000000~replica-a"}) {
    const auto error = errorOf([&] { (void)acquire("alice", id); });
    EXPECT_NE(error.find("Unknown session '" + id + "'"), std::string::npos) << error;
    EXPECT_NE(error.find("without session_id"), std::string::npos) << error;
  }
  EXPECT_EQ(backend.created, 0);
  EXPECT_EQ(registry().size(), 0U);
}

TEST_F(SessionRegistryTest, AnEndedSessionSaysWhyItIsGone) {
  const std::string id = create("alice");
  EXPECT_TRUE(registry().remove("alice", id));
  for (const auto& error : {errorOf([&] { (void)acquire("alice", id); }),
                            errorOf([&] { (void)registry().find("alice", id); })}) {
    EXPECT_NE(error.find("Session '" + id + "' has ended (cleanup_session ended it)"),
              std::string::npos)
        << error;
  }
  EXPECT_EQ(backend.created, 1);
}

TEST_F(SessionRegistryTest, SessionIdsAreChecked) {
  EXPECT_FALSE(SessionRegistry::checkSessionId("ok-1_.x~r"));
  EXPECT_TRUE(SessionRegistry::checkSessionId(std::string(129, 'a')));
  EXPECT_FALSE(SessionRegistry::checkSessionId(std::string(128, 'a')));
  EXPECT_TRUE(SessionRegistry::checkSessionId("a/b"));
  EXPECT_TRUE(SessionRegistry::checkSessionId("a b"));
  EXPECT_NE(errorOf([&] { (void)acquire("alice", "../x"); }).find("session_id may only contain"),
            std::string::npos);
  EXPECT_EQ(backend.created, 0);
}

TEST_F(SessionRegistryTest, OptionsGivenForAnExistingSessionMustMatch) {
  SessionOptions with_env;
  with_env.environment = {{"A", "1"}};
  const auto alice = callerOf(cfg, "alice");
  const std::string id = registry().acquire(alice, "", with_env, true).session->id();
  SessionOptions other_env;
  other_env.environment = {{"A", "2"}};
  const auto error = errorOf([&] { (void)registry().acquire(alice, id, other_env, true); });
  EXPECT_NE(error.find("different environment"), std::string::npos) << error;
  // Not given: the session is used as it is.
  EXPECT_FALSE(registry().acquire(alice, id, other_env, false).created);
  EXPECT_EQ(backend.created, 1);
}

TEST_F(SessionRegistryTest, PerClientAndServerSessionLimits) {
  cfg.sessions.max_sessions_per_client = 1;
  cfg.sessions.max_sessions = 2;
  const std::string alices = create("alice");
  const auto per_client = errorOf([&] { (void)acquire("alice"); });
  EXPECT_NE(per_client.find("sessions.max_sessions_per_client"), std::string::npos) << per_client;
  (void)create("bob");
  const auto server_wide = errorOf([&] { (void)acquire("carol"); });
  EXPECT_NE(server_wide.find("(sessions.max_sessions)"), std::string::npos) << server_wide;
  EXPECT_EQ(backend.created, 2);
  // Reusing an existing session is never refused.
  EXPECT_FALSE(acquire("alice", alices).created);
}

// A tokens-file principal is one quota over all its owners (MCP sessions, stateless requests).
TEST_F(SessionRegistryTest, APrincipalsQuotaHoldsAcrossItsOwners) {
  const server::Caller first{"mcp-session-1", "principal:alice", 2, 1};
  const server::Caller second{"principal:alice", "principal:alice", 2, 1};
  (void)registry().acquire(first, "", SessionOptions{}, false);
  (void)registry().acquire(second, "", SessionOptions{}, false);
  const auto refused =
      errorOf([&] { (void)registry().acquire(first, "", SessionOptions{}, false); });
  EXPECT_NE(refused.find("holds 2 sessions"), std::string::npos) << refused;
  EXPECT_NO_THROW((void)acquire("bob")) << "another client's quota is its own";

  const auto running = registry().claimExecutionSlot(first);
  const auto busy = errorOf([&] { (void)registry().claimExecutionSlot(second); });
  EXPECT_NE(busy.find("already runs 1 executions"), std::string::npos) << busy;
}

TEST_F(SessionRegistryTest, AFailedCreationLeavesNothingBehind) {
  backend.fail_creates = true;
  EXPECT_NE(errorOf([&] { (void)acquire("alice"); }).find("engine unavailable"), std::string::npos);
  EXPECT_EQ(registry().size(), 0U);
  backend.fail_creates = false;
  EXPECT_TRUE(acquire("alice").created);
}

TEST_F(SessionRegistryTest, ADeadSandboxIsForgottenAndItsIdStartsFreshSayingWhy) {
  const auto first = acquire("alice");
  const std::string id = first.session->id();
  backend.sandboxes_alive->store(false);
  const auto lost = errorOf([&] { (void)registry().find("alice", id); });
  EXPECT_NE(lost.find("was lost (the sandbox stopped)"), std::string::npos) << lost;
  EXPECT_EQ(registry().size(), 0U);

  backend.sandboxes_alive = std::make_shared<std::atomic<bool>>(true);  // new sandboxes live
  const auto fresh = acquire("alice", id);
  EXPECT_TRUE(fresh.created);
  EXPECT_NE(fresh.session, first.session);
  ASSERT_TRUE(fresh.lost_reason);
  EXPECT_EQ(*fresh.lost_reason, "the sandbox stopped");
  EXPECT_FALSE(acquire("alice", id).lost_reason) << "told once";
}

TEST_F(SessionRegistryTest, RemoveListAndCloseOwnerDestroyOnlyWhatTheyName) {
  const std::string a = create("alice");
  (void)create("alice");
  const std::string bobs = create("bob");
  EXPECT_EQ(backend.live, 3);
  EXPECT_EQ(registry().list("alice").size(), 2U);

  EXPECT_TRUE(registry().remove("alice", a));
  EXPECT_FALSE(registry().remove("alice", a));
  EXPECT_FALSE(registry().remove("alice", bobs));
  EXPECT_EQ(backend.live, 2);

  registry().closeOwner("alice");
  EXPECT_EQ(backend.live, 1);
  EXPECT_TRUE(registry().list("alice").empty());
  ASSERT_EQ(registry().list("bob").size(), 1U);
  EXPECT_EQ(registry().list("bob")[0]->id(), bobs);
}

TEST_F(SessionRegistryTest, ShutdownDestroysEverySessionAndRefusesNewOnes) {
  (void)create("alice");
  (void)create("bob");
  registry().shutdown();
  EXPECT_EQ(backend.live, 0);
  EXPECT_EQ(registry().size(), 0U);
  EXPECT_NE(errorOf([&] { (void)acquire("alice"); }).find("shutting down"), std::string::npos);
  registry().shutdown();  // idempotent
}

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
  std::thread caller([&] {
    error = errorOf([&] { (void)sessions.acquire(callerOf(cfg, "alice"), "", options, true); });
  });
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
  auto busy = acquire("alice").session;
  const std::string busy_id = busy->id();
  const server::SessionUse use(busy);
  const std::string idle_id = create("alice");
  busy.reset();
  ASSERT_TRUE(eventually([&] { return registry().size() == 1; }, 10s));
  EXPECT_NO_THROW((void)registry().find("alice", busy_id));
  // Destroyed just after it leaves the map (outside the registry's lock).
  EXPECT_TRUE(eventually([&] { return backend.live == 1; }, 10s))
      << "the expired session's sandbox is destroyed";
  const auto gone = errorOf([&] { (void)acquire("alice", idle_id); });
  EXPECT_NE(gone.find("has ended (it expired after 1 s idle"), std::string::npos) << gone;
}

TEST_F(SessionRegistryTest, ExecutionSlotsPerClientAndServerWide) {
  cfg.execution.max_concurrent = 2;
  cfg.execution.max_concurrent_per_client = 1;
  std::vector<server::ExecutionClaim> held;
  held.push_back(registry().claimExecutionSlot(callerOf(cfg, "alice")));
  const auto per_client =
      errorOf([&] { (void)registry().claimExecutionSlot(callerOf(cfg, "alice")); });
  EXPECT_NE(per_client.find("execution.max_concurrent_per_client"), std::string::npos)
      << per_client;
  held.push_back(registry().claimExecutionSlot(callerOf(cfg, "bob")));
  const auto server_wide =
      errorOf([&] { (void)registry().claimExecutionSlot(callerOf(cfg, "carol")); });
  EXPECT_NE(server_wide.find("(execution.max_concurrent)"), std::string::npos) << server_wide;
  EXPECT_EQ(registry().executionSlots().inUse(), 2U);

  held.clear();
  EXPECT_EQ(registry().executionSlots().inUse(), 0U);
  EXPECT_NO_THROW((void)registry().claimExecutionSlot(callerOf(cfg, "carol")));
}

}  // namespace
