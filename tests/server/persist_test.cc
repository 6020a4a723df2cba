// sessions.persist over the in-memory backend: a stopping registry saves the sessions and named
// snapshots of owners that outlive the server (stdio, principals), and a registry of the same
// instance brings them back, each restored on its next call. Everything else is removed; options
// the config no longer allows, another instance, or a tampered snapshot bring nothing back.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/random_id.h"
#include "fake_backend.h"
#include "server/session_registry.h"

namespace {

namespace fs = std::filesystem;
using sandbox::SandboxError;

std::size_t snapshotsIn(const fs::path& instance_dir) {
  if (!fs::exists(instance_dir)) return 0;
  std::size_t count = 0;
  for (const auto& entry : fs::directory_iterator(instance_dir)) count += entry.is_directory();
  return count;
}

// Stands in for the tools' parser: this config allows no volumes.
server::SessionOptions readOptions(const nlohmann::json& arguments) {
  if (arguments.contains("volumes")) throw SandboxError("volumes: no host directory is allowed");
  server::SessionOptions options;
  options.arguments = arguments;
  return options;
}

server::Caller callerOf(const std::string& owner) { return {owner, owner, 16, 4}; }

class PersistTest : public ::testing::Test {
 protected:
  PersistTest() {
    cfg.pool.size = 0;
    cfg.sessions.pause_after_idle_s = 0;
    cfg.sessions.persist = true;
    cfg.sessions.snapshot_dir = root.string();
    backend.checkpoints = true;
  }
  ~PersistTest() override {
    registry_.reset();
    fs::remove_all(root);
  }

  // The registry of a server run with `instance`; a previous one is shut down first.
  server::SessionRegistry& start(const std::string& instance = "replica-a") {
    registry_.reset();
    server::SessionServices services;
    services.instance_id = instance;
    registry_ = std::make_unique<server::SessionRegistry>(
        cfg, std::make_unique<server::SessionFactory>(cfg, backend, services), instance);
    revived_ = registry_->revive(readOptions);
    return *registry_;
  }
  void stop() { registry_.reset(); }

  std::string newSession(const std::string& owner, const std::string& file_text,
                         const server::SessionOptions& options = {}) {
    auto acquired = registry_->acquire(callerOf(owner), "", options, false);
    acquired.session->sandbox().writeFile("/workspace/x", file_text, 0644);
    return acquired.session->id();
  }

  const fs::path root = fs::temp_directory_path() / ("persist-" + common::randomHex(6));
  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  std::unique_ptr<server::SessionRegistry> registry_;
  std::size_t revived_ = 0;
};

TEST_F(PersistTest, AStdioSessionComesBackWithItsStateAfterARestart) {
  start();
  const auto id = newSession("stdio", "42");
  stop();
  EXPECT_EQ(backend.live.load(), 0) << "no sandbox outlives the server";
  EXPECT_EQ(snapshotsIn(root / "replica-a"), 1U) << "its state is on disk";

  auto& registry = start();
  EXPECT_EQ(revived_, 1U);
  const auto listed = registry.list("stdio");
  ASSERT_EQ(listed.size(), 1U);
  EXPECT_EQ(listed[0]->state(), "paused") << "not restored before its first call";
  EXPECT_EQ(backend.live.load(), 0);

  const auto again = registry.acquire(callerOf("stdio"), id, {}, false);
  EXPECT_FALSE(again.created);
  EXPECT_FALSE(again.lost_reason);
  EXPECT_EQ(again.session->state(), "running");
  EXPECT_EQ(again.session->sandbox().readFile("/workspace/x", 10), "42");
  EXPECT_EQ(snapshotsIn(root / "replica-a"), 0U) << "a resumed session's snapshot goes";
}

TEST_F(PersistTest, APrincipalsSessionComesBackAndAnHttpSessionsDoesNot) {
  start();
  const auto kept = newSession("principal:bob", "bob's");
  const auto gone = newSession("mcp-session-1234", "ephemeral");
  stop();
  EXPECT_EQ(snapshotsIn(root / "replica-a"), 1U) << "only the principal's is saved";

  auto& registry = start();
  EXPECT_EQ(revived_, 1U);
  EXPECT_EQ(registry.acquire(callerOf("principal:bob"), kept, {}, false)
                .session->sandbox()
                .readFile("/workspace/x", 10),
            "bob's");
  try {
    (void)registry.acquire(callerOf("mcp-session-1234"), gone, {}, false);
    FAIL() << "an HTTP MCP session's sandbox outlived the server";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("Unknown session"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)registry.acquire(callerOf("principal:eve"), kept, {}, false), SandboxError)
      << "another principal reached a saved session by its id";
}

TEST_F(PersistTest, ClosingTheStdioClientKeepsItsSessionsForTheSave) {
  auto& registry = start();
  const auto id = newSession("stdio", "42");
  registry.closeOwner("stdio");  // stdin closed: the server is about to stop
  EXPECT_EQ(registry.list("stdio").size(), 1U);
  stop();
  auto& again = start();
  EXPECT_EQ(again.acquire(callerOf("stdio"), id, {}, false)
                .session->sandbox()
                .readFile("/workspace/x", 10),
            "42");
}

TEST_F(PersistTest, ASessionTheConfigNoLongerAllowsIsNotBroughtBackAndItsNextCallSaysWhy) {
  start();
  server::SessionOptions options;
  options.arguments = {{"volumes", nlohmann::json::array({"/data:/workspace/data"})}};
  const auto id = newSession("stdio", "42", options);
  stop();

  auto& registry = start();
  EXPECT_EQ(revived_, 0U);
  EXPECT_EQ(snapshotsIn(root / "replica-a"), 0U) << "its snapshot is removed";
  const auto again = registry.acquire(callerOf("stdio"), id, {}, false);
  EXPECT_TRUE(again.created) << "a fresh sandbox under the same id";
  ASSERT_TRUE(again.lost_reason);
  EXPECT_NE(again.lost_reason->find("could not bring it back"), std::string::npos)
      << *again.lost_reason;
  EXPECT_NE(again.lost_reason->find("volumes"), std::string::npos) << *again.lost_reason;
  EXPECT_THROW((void)again.session->sandbox().readFile("/workspace/x", 10), SandboxError);
}

TEST_F(PersistTest, AnotherInstanceNeverBringsThemBackNorRemovesThem) {
  start("replica-a");
  const auto id = newSession("stdio", "42");
  stop();

  auto& other = start("replica-b");
  EXPECT_EQ(revived_, 0U);
  EXPECT_THROW((void)other.acquire(callerOf("stdio"), id, {}, false), SandboxError);
  EXPECT_EQ(snapshotsIn(root / "replica-a"), 1U)
      << "a stopped instance's saved sessions within sessions.snapshot_ttl_s are left for it";
  cfg.sessions.persist = false;
  auto& without_persist = start("replica-c");
  (void)without_persist.snapshots();  // opens the store, which sweeps abandoned instances
  EXPECT_EQ(snapshotsIn(root / "replica-a"), 1U) << "a server without persist removed them";
  cfg.sessions.persist = true;

  auto& same = start("replica-a");
  EXPECT_EQ(same.acquire(callerOf("stdio"), id, {}, false)
                .session->sandbox()
                .readFile("/workspace/x", 10),
            "42");
}

TEST_F(PersistTest, NamedSnapshotsComeBackToo) {
  auto& registry = start();
  const auto id = newSession("stdio", "before");
  (void)registry.snapshot(callerOf("stdio"), id, "checkpoint-1");
  stop();

  auto& again = start();
  ASSERT_NE(again.snapshots(), nullptr);
  const auto named = again.snapshots()->find("stdio", "checkpoint-1");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->session_id, id);
  const auto forks = again.fork(callerOf("stdio"), "", "checkpoint-1", 1);
  ASSERT_EQ(forks.size(), 1U);
  EXPECT_EQ(forks[0]->sandbox().readFile("/workspace/x", 10), "before");
}

// A tokens-file principal is one client: its snapshots count together across its MCP sessions
// (each its own owner), while names stay each owner's.
TEST_F(PersistTest, APrincipalsSnapshotQuotaHoldsAcrossAllItsMcpSessions) {
  cfg.sessions.max_snapshots_per_client = 2;
  auto& registry = start();
  const server::Caller first{"mcp-a", "principal:alice", 16, 4};
  const server::Caller second{"mcp-b", "principal:alice", 16, 4};
  const auto a = registry.acquire(first, "", {}, false).session->id();
  const auto b = registry.acquire(second, "", {}, false).session->id();
  (void)registry.snapshot(first, a, "one");
  (void)registry.snapshot(second, b, "two");
  try {
    (void)registry.snapshot(second, b, "three");
    FAIL() << "a third snapshot of the principal was kept";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("busy: this client holds 2 snapshots"), std::string::npos)
        << e.what();
  }
  (void)registry.snapshot(second, b, "two");  // a name reused replaces: no room needed
  const auto [count, bytes] = registry.snapshots()->usage("principal:alice");
  EXPECT_EQ(count, 2U);
  // Another principal has its own room.
  const server::Caller bob{"mcp-c", "principal:bob", 16, 4};
  const auto c = registry.acquire(bob, "", {}, false).session->id();
  EXPECT_NO_THROW((void)registry.snapshot(bob, c, "one"));
  // A snapshot goes with its MCP session, and gives its room back.
  registry.closeOwner("mcp-a");
  EXPECT_NO_THROW((void)registry.snapshot(second, b, "three"));
}

TEST_F(PersistTest, ASnapshotWhoseManifestWasEditedIsRemovedNotBroughtBack) {
  start();
  const auto id = newSession("stdio", "42");
  stop();
  // Someone with write access to the snapshot directory, but not the key, widens the options.
  for (const auto& entry : fs::directory_iterator(root / "replica-a")) {
    const auto manifest = entry.path() / "manifest.json";
    std::ifstream in(manifest);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = text.find("\"options\":{}");
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, 12, R"("options":{"image":"attacker/image"})");
    std::ofstream(manifest, std::ios::trunc) << text;
  }
  auto& registry = start();
  EXPECT_EQ(revived_, 0U);
  EXPECT_EQ(snapshotsIn(root / "replica-a"), 0U) << "a manifest that fails its check is removed";
  EXPECT_THROW((void)registry.acquire(callerOf("stdio"), id, {}, false), SandboxError);
  EXPECT_EQ(backend.restored.load(), 0);
}

TEST_F(PersistTest, WithoutPersistNothingOutlivesTheServer) {
  cfg.sessions.persist = false;
  start();
  const auto id = newSession("stdio", "42");
  stop();
  EXPECT_EQ(snapshotsIn(root / "replica-a"), 0U);
  auto& registry = start();
  EXPECT_EQ(revived_, 0U);
  EXPECT_THROW((void)registry.acquire(callerOf("stdio"), id, {}, false), SandboxError);
}

}  // namespace
