// Idle sessions paused to the snapshot store and resumed on their next call, over the in-memory
// backend (its "checkpoint" is a file of the sandbox's files): the state comes back, a busy session
// is never paused, a snapshot that fails its check loses the session with the reason, and nothing
// is left in the store.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "common/random_id.h"
#include "fake_backend.h"
#include "sandbox/pausable_sandbox.h"
#include "server/session_registry.h"

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using sandbox::PausableSandbox;
using sandbox::SandboxError;

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

std::size_t snapshotsIn(const fs::path& instance_dir) {
  if (!fs::exists(instance_dir)) return 0;
  std::size_t count = 0;
  for (const auto& entry : fs::directory_iterator(instance_dir)) count += entry.is_directory();
  return count;
}

class PausableSandboxTest : public ::testing::Test {
 protected:
  PausableSandboxTest() { backend.checkpoints = true; }
  ~PausableSandboxTest() override { fs::remove_all(root); }

  std::unique_ptr<PausableSandbox> make(sandbox::SnapshotStore* with_store) {
    sandbox::SandboxSpec spec;
    spec.image = "python:3";
    spec.runtime = "runsc";
    return std::make_unique<PausableSandbox>(backend, spec, backend.create(spec), with_store,
                                             "alice", "s-1");
  }

  const fs::path root = fs::temp_directory_path() / ("pausable-" + common::randomHex(6));
  testing_support::FakeBackend backend;
  sandbox::SnapshotStore store{root, "inst"};
};

TEST_F(PausableSandboxTest, APauseSavesTheStateAndTheNextCallResumesIt) {
  auto box = make(&store);
  box->writeFile("/workspace/a.txt", "kept", 0644);
  ASSERT_TRUE(box->pause());
  EXPECT_EQ(box->state(), PausableSandbox::State::kPaused);
  EXPECT_EQ(backend.live.load(), 0) << "a paused sandbox holds no live sandbox";
  EXPECT_GT(box->snapshotBytes(), 0U);
  EXPECT_EQ(box->status(), "paused");
  EXPECT_TRUE(box->alive()) << "paused is not lost";
  EXPECT_EQ(snapshotsIn(root / "inst"), 1U);

  EXPECT_EQ(box->readFile("/workspace/a.txt", 100), "kept");  // resumes first
  EXPECT_EQ(box->state(), PausableSandbox::State::kRunning);
  EXPECT_EQ(backend.live.load(), 1);
  EXPECT_EQ(backend.restored.load(), 1);
  EXPECT_EQ(box->snapshotBytes(), 0U);
  EXPECT_EQ(snapshotsIn(root / "inst"), 0U) << "a resumed session's snapshot is removed";
}

TEST_F(PausableSandboxTest, ABusySandboxIsNotPaused) {
  auto box = make(&store);
  std::thread call([&] {
    CancelToken cancel;
    sandbox::ExecRequest request;
    request.code = "wait-for-cancel";
    std::thread canceller([&] {
      eventually([&] { return backend.waiting_for_cancel->load() > 0; });
      EXPECT_FALSE(box->pause()) << "paused during a call";
      cancel.cancel();
    });
    (void)box->exec(request, cancel, nullptr);
    canceller.join();
  });
  call.join();
  EXPECT_EQ(box->state(), PausableSandbox::State::kRunning);
  EXPECT_TRUE(box->pause()) << "idle again, it pauses";
}

TEST_F(PausableSandboxTest, AFailedRestoreLosesTheSandboxAndSaysWhy) {
  auto box = make(&store);
  box->writeFile("/workspace/a.txt", "kept", 0644);
  ASSERT_TRUE(box->pause());
  for (const auto& entry : fs::directory_iterator(root / "inst")) {
    std::ofstream(entry.path() / "state.img", std::ios::app) << " ";  // one byte more
  }
  try {
    (void)box->readFile("/workspace/a.txt", 100);
    FAIL() << "a tampered snapshot was restored";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("restoring its paused sandbox failed"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("state.img"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(box->alive());
  EXPECT_EQ(box->state(), PausableSandbox::State::kLost);
  EXPECT_NE(box->stopReason().value_or("").find("restoring its paused sandbox failed"),
            std::string::npos);
  EXPECT_EQ(snapshotsIn(root / "inst"), 0U) << "the refused snapshot is removed";
  EXPECT_EQ(backend.live.load(), 0) << "nothing restored from unverified bytes";
}

TEST_F(PausableSandboxTest, AnEngineFailureKeepsThePausedStateForTheNextTry) {
  auto box = make(&store);
  box->writeFile("/workspace/a.txt", "kept", 0644);
  ASSERT_TRUE(box->pause());
  backend.fail_restores = true;
  try {
    (void)box->readFile("/workspace/a.txt", 100);
    FAIL() << "restored while the engine fails";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("state is kept"), std::string::npos) << e.what();
  }
  EXPECT_EQ(box->state(), PausableSandbox::State::kPaused);
  EXPECT_TRUE(box->alive());
  EXPECT_EQ(snapshotsIn(root / "inst"), 1U);
  backend.fail_restores = false;
  EXPECT_EQ(box->readFile("/workspace/a.txt", 100), "kept");
}

TEST_F(PausableSandboxTest, AnotherRuntimeVersionIsRefused) {
  auto box = make(&store);
  ASSERT_TRUE(box->pause());
  backend.checkpoint_format = "fake 2";
  EXPECT_THROW((void)box->listFiles("/workspace"), SandboxError);
  EXPECT_NE(box->stopReason().value_or("").find("fake 1"), std::string::npos);
}

TEST_F(PausableSandboxTest, AFailedPauseLeavesItRunningAndIsNotRetriedAtOnce) {
  auto box = make(&store);
  box->writeFile("/workspace/a.txt", "kept", 0644);
  *backend.fail_checkpoints = true;
  EXPECT_FALSE(box->pause());
  EXPECT_EQ(box->state(), PausableSandbox::State::kRunning);
  EXPECT_EQ(box->readFile("/workspace/a.txt", 100), "kept");
  EXPECT_EQ(snapshotsIn(root / "inst"), 0U) << "the failed draft is removed";
  *backend.fail_checkpoints = false;
  EXPECT_FALSE(box->pause()) << "retried at once (each try costs a checkpoint)";
  EXPECT_EQ(backend.checkpoint_attempts->load(), 1);
}

TEST_F(PausableSandboxTest, WithoutAStoreItNeverPauses) {
  auto box = make(nullptr);
  EXPECT_FALSE(box->pausable());
  EXPECT_FALSE(box->pause());
  EXPECT_EQ(box->state(), PausableSandbox::State::kRunning);
}

TEST_F(PausableSandboxTest, DestroyingAPausedSandboxRemovesItsSnapshot) {
  auto box = make(&store);
  ASSERT_TRUE(box->pause());
  box.reset();
  EXPECT_EQ(snapshotsIn(root / "inst"), 0U);
}

// The registry pauses sessions idle past sessions.pause_after_idle_s and resumes them on acquire.
class PausingRegistryTest : public ::testing::Test {
 protected:
  PausingRegistryTest() {
    cfg.pool.size = 0;
    cfg.sessions.pause_after_idle_s = 1;
    cfg.sessions.snapshot_dir = root.string();
    backend.checkpoints = true;
  }
  ~PausingRegistryTest() override {
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
  server::SessionRegistry::Acquired acquire(const std::string& id = {}) {
    return registry().acquire({"alice", "alice", 16, 4}, id, server::SessionOptions{}, false);
  }

  const fs::path root = fs::temp_directory_path() / ("pausing-" + common::randomHex(6));
  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  std::unique_ptr<server::SessionRegistry> registry_;
};

TEST_F(PausingRegistryTest, AnIdleSessionIsPausedAndItsNextCallFindsItsState) {
  auto first = acquire();
  first.session->sandbox().writeFile("/workspace/x", "42", 0644);
  const auto id = first.session->id();
  const auto session = first.session;
  first = {};
  ASSERT_TRUE(eventually([&] { return session->paused(); })) << "not paused after 1 s idle";
  EXPECT_EQ(session->state(), "paused");
  EXPECT_GT(session->snapshotBytes(), 0U);
  EXPECT_EQ(backend.live.load(), 0);

  const auto again = acquire(id);
  EXPECT_FALSE(again.created);
  EXPECT_FALSE(again.lost_reason);
  EXPECT_EQ(again.session->state(), "running") << "acquire resumes it";
  EXPECT_EQ(again.session->sandbox().readFile("/workspace/x", 10), "42");
}

TEST_F(PausingRegistryTest, ASessionInUseIsNotPaused) {
  auto first = acquire();
  {
    server::SessionUse use(first.session);
    std::this_thread::sleep_for(2500ms);
    EXPECT_EQ(first.session->state(), "running");
  }
}

TEST_F(PausingRegistryTest, ARestoreThatFailsStartsTheIdFreshAndSaysWhy) {
  auto first = acquire();
  first.session->sandbox().writeFile("/workspace/x", "42", 0644);
  const auto id = first.session->id();
  const auto session = first.session;
  first = {};
  ASSERT_TRUE(eventually([&] { return session->paused(); }));
  backend.checkpoint_format = "fake 2";  // as after an upgrade of the runtime

  const auto again = acquire(id);
  EXPECT_TRUE(again.created) << "a fresh sandbox under the same id";
  EXPECT_EQ(again.session->id(), id);
  ASSERT_TRUE(again.lost_reason);
  EXPECT_NE(again.lost_reason->find("restoring its paused sandbox failed"), std::string::npos)
      << *again.lost_reason;
  EXPECT_THROW((void)again.session->sandbox().readFile("/workspace/x", 10), SandboxError)
      << "the fresh sandbox must not hold the old state";
}

TEST_F(PausingRegistryTest, PastMaxSessionsTheLongestIdleSessionIsPausedToMakeRoom) {
  cfg.sessions.pause_after_idle_s = 0;  // only the limit pauses here
  cfg.sessions.max_sessions = 2;
  auto oldest = acquire().session;
  oldest->sandbox().writeFile("/workspace/x", "oldest", 0644);
  std::this_thread::sleep_for(20ms);
  auto middle = acquire().session;
  std::this_thread::sleep_for(20ms);

  auto newest = acquire().session;  // a third running session would pass the limit
  EXPECT_EQ(oldest->state(), "paused") << "the longest idle one makes room";
  EXPECT_EQ(middle->state(), "running");
  EXPECT_EQ(backend.live.load(), 2);
  EXPECT_EQ(registry().size(), 3U) << "paused sessions do not count against max_sessions";

  const auto back = acquire(oldest->id());  // resuming it pauses the now longest idle: middle
  EXPECT_EQ(back.session->sandbox().readFile("/workspace/x", 10), "oldest");
  EXPECT_EQ(middle->state(), "paused");
  EXPECT_EQ(backend.live.load(), 2);
}

TEST_F(PausingRegistryTest, AFileCallOnAPausedSessionMakesRoomAndStatsLeaveItPaused) {
  cfg.sessions.pause_after_idle_s = 0;
  cfg.sessions.max_sessions = 1;
  auto first = acquire().session;
  first->sandbox().writeFile("/workspace/x", "first", 0644);
  auto second = acquire().session;
  ASSERT_EQ(first->state(), "paused");

  const auto counted =
      registry().find("alice", first->id(), server::SessionRegistry::IfStarting::kWait,
                      server::SessionRegistry::IfPaused::kLeave);
  EXPECT_EQ(counted->state(), "paused") << "reading its counters resumed it";
  const auto used = registry().find("alice", first->id());  // as download_file does
  EXPECT_EQ(used->state(), "running");
  EXPECT_EQ(second->state(), "paused") << "the resume made room under max_sessions";
  EXPECT_EQ(backend.live.load(), 1);
  EXPECT_EQ(used->sandbox().readFile("/workspace/x", 10), "first");
}

TEST_F(PausingRegistryTest, WithNoSessionToPausePastMaxSessionsANewOneIsRefused) {
  cfg.sessions.pause_after_idle_s = 0;
  cfg.sessions.max_sessions = 1;
  cfg.sessions.max_paused_sessions = 1;
  auto first = acquire().session;
  auto second = acquire().session;  // first is paused
  EXPECT_EQ(first->state(), "paused");
  try {
    (void)acquire();  // second cannot be paused: max_paused_sessions is reached
    FAIL() << "a session past both limits";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("sessions.max_sessions"), std::string::npos) << e.what();
  }
  const auto back = acquire(first->id());  // a swap: second takes first's place among the paused
  EXPECT_EQ(back.session->state(), "running");
  EXPECT_EQ(second->state(), "paused");
  {
    server::SessionUse busy(back.session);
    (void)registry().remove("alice", second->id());
    EXPECT_THROW((void)acquire(), SandboxError) << "a session in use is never paused for room";
  }
  EXPECT_EQ(backend.live.load(), 1);
}

}  // namespace
