// The frozen tier over the in-memory backend (its "cgroups" are counters a test sets): a quiet
// idle session is frozen and its next use thaws it; busy processes, a call in flight or
// freeze: false keep it running; past sessions.max_frozen_mib the longest frozen go to disk; and
// making room under max_sessions keeps each client's fair share.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "common/random_id.h"
#include "fake_backend.h"
#include "server/session_registry.h"

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

class FreezingRegistryTest : public ::testing::Test {
 protected:
  FreezingRegistryTest() {
    cfg.pool.size = 0;
    cfg.sessions.pause_after_idle_s = 0;
    cfg.sessions.freeze_after_idle_s = 1;
    cfg.sessions.snapshot_dir = root.string();
    backend.checkpoints = true;
    backend.cgroups->enabled = true;
  }
  ~FreezingRegistryTest() override {
    registry_.reset();
    fs::remove_all(root);
  }

  server::SessionRegistry& registry() {
    if (!registry_) {
      server::SessionServices services;
      services.instance_id = "replica-a";
      registry_ = std::make_unique<server::SessionRegistry>(
          cfg, std::make_unique<server::SessionFactory>(cfg, backend, services), "replica-a");
    }
    return *registry_;
  }
  std::shared_ptr<server::Session> newSession(const std::string& client = "alice",
                                              const server::SessionOptions& options = {}) {
    return registry().acquire({client, client, 16, 4}, "", options, false).session;
  }

  const fs::path root = fs::temp_directory_path() / ("freezing-" + common::randomHex(6));
  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  std::unique_ptr<server::SessionRegistry> registry_;
};

TEST_F(FreezingRegistryTest, AQuietIdleSessionIsFrozenAndItsNextUseThawsIt) {
  auto session = newSession();
  session->sandbox().writeFile("/workspace/x", "42", 0644);
  ASSERT_TRUE(eventually([&] { return session->state() == "frozen"; }));
  EXPECT_EQ(registry().stateCounts().frozen, 1U);
  EXPECT_TRUE(eventually([&] { return registry().stateCounts().freezes >= 1U; }))
      << "counted once the reaper's tick ends";
  EXPECT_EQ(registry().size(), 1U);
  EXPECT_EQ(session->sandbox().readFile("/workspace/x", 10), "42");
  EXPECT_EQ(session->state(), "running") << "its next use thawed it";
}

TEST_F(FreezingRegistryTest, ASessionWhoseProcessesUseCpuStaysRunningUntilTheyGoQuiet) {
  auto session = newSession();
  const std::string id = session->sandbox().id();
  std::atomic<bool> busy{true};
  std::thread job([&] {  // a background job: 50 % of a core
    while (busy) {
      backend.cgroups->addCpu(id, 50'000'000);
      std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(session->state(), "running") << "frozen while its processes worked";
  busy = false;
  job.join();
  EXPECT_TRUE(eventually([&] { return session->state() == "frozen"; }))
      << "quiet again, it is frozen";
}

TEST_F(FreezingRegistryTest, AnIdleFloorOfAFewPercentIsQuiet) {
  auto session = newSession();
  const std::string id = session->sandbox().id();
  std::atomic<bool> idle{true};
  std::thread sentry([&] {  // gVisor's Sentry spinning: 4 % of a core
    while (idle) {
      backend.cgroups->addCpu(id, 4'000'000);
      std::this_thread::sleep_for(100ms);
    }
  });
  EXPECT_TRUE(eventually([&] { return session->state() == "frozen"; }));
  idle = false;
  sentry.join();
}

TEST_F(FreezingRegistryTest, ASessionInUseOrCreatedWithFreezeFalseIsNeverFrozen) {
  server::SessionOptions keep_time;
  keep_time.freeze = false;
  auto opted_out = newSession("alice", keep_time);
  auto used = newSession();
  server::SessionUse use(used);
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(opted_out->state(), "running");
  EXPECT_EQ(used->state(), "running");
}

TEST_F(FreezingRegistryTest, PastTheFrozenBudgetTheLongestFrozenArePausedToDisk) {
  cfg.sessions.max_frozen_mib = 150;  // each fake sandbox holds 100 MiB
  auto first = newSession();
  first->sandbox().writeFile("/workspace/x", "first", 0644);
  ASSERT_TRUE(eventually([&] { return first->state() == "frozen"; }));
  auto second = newSession();
  ASSERT_TRUE(eventually([&] { return second->state() == "frozen"; }));
  EXPECT_TRUE(eventually([&] { return first->state() == "paused"; }))
      << "the longest frozen goes to disk";
  EXPECT_EQ(second->state(), "frozen");
  EXPECT_EQ(first->sandbox().readFile("/workspace/x", 10), "first");
}

TEST_F(FreezingRegistryTest, ATierTheBackendCannotServeLeavesSessionsRunning) {
  backend.cgroups->enabled = false;  // a remote engine
  auto session = newSession();
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(session->state(), "running");
}

// One client's new sessions cannot push every other client's to disk: past max_sessions, a
// client under its share (max_sessions / clients) makes room from clients past theirs, and a
// client at its share only from its own sessions.
TEST_F(FreezingRegistryTest, MakingRoomKeepsEachClientsFairShare) {
  cfg.sessions.freeze_after_idle_s = 0;
  cfg.sessions.max_sessions = 4;
  std::vector<std::shared_ptr<server::Session>> hers;
  hers.reserve(4);
  for (int i = 0; i < 4; ++i) hers.push_back(newSession("alice"));
  const auto running = [](const std::vector<std::shared_ptr<server::Session>>& list) {
    return std::count_if(list.begin(), list.end(),
                         [](const auto& s) { return s->state() == "running"; });
  };
  std::vector<std::shared_ptr<server::Session>> his;
  his.push_back(newSession("bob"));
  his.push_back(newSession("bob"));
  EXPECT_EQ(running(hers), 2) << "alice, past her share of 2, made room for bob";
  EXPECT_EQ(running(his), 2);
  his.push_back(newSession("bob"));  // bob at his share: his own oldest goes to disk
  EXPECT_EQ(running(hers), 2) << "bob pushed alice below her share";
  EXPECT_EQ(running(his), 2);
  EXPECT_EQ(his[0]->state(), "paused");
}

}  // namespace
