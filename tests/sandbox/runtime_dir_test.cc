// RuntimeDir: the server's private run-time directory, its per-session directories, and the
// sweep of directories that earlier runs (of this instance id or others) left behind.
#include "sandbox/runtime_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "sandbox/backend.h"
#include "sandbox/docker/ownership.h"

namespace {

using nlohmann::json;
using namespace sandbox;
using namespace sandbox::docker;
namespace fs = std::filesystem;

std::string tempDir() {
  std::string pattern = (fs::temp_directory_path() / "runtime-dir-test-XXXXXX").string();
  return mkdtemp(pattern.data());
}

TEST(RuntimeDir, CreatesPrivateDirectoriesAndRemovesThem) {
  const std::string root = tempDir();
  std::string instance_path;
  std::string session_path;
  {
    RuntimeDir dir(root, "inst1", {{kLabelInstance, "inst1"}});
    instance_path = dir.path();
    EXPECT_EQ(fs::status(instance_path).permissions(), fs::perms::owner_all);
    EXPECT_TRUE(fs::exists(instance_path + "/owner.json"));
    const auto python = dir.writePythonModule("m.py", "X = 1\n");
    EXPECT_TRUE(fs::exists(python + "/m.py"));
    {
      auto session =
          dir.createSessionDir(std::to_string(getuid()) + ":" + std::to_string(getgid()));
      session_path = session->path();
      EXPECT_TRUE(fs::is_directory(session_path + "/sock"));
      EXPECT_EQ(session_path.rfind(instance_path + "/s-", 0), 0U);
    }
    EXPECT_FALSE(fs::exists(session_path));
  }
  EXPECT_FALSE(fs::exists(instance_path));
  fs::remove_all(root);
}

TEST(RuntimeDir, RemoveStaleKeepsLiveOwnersAndRemovesDeadOnes) {
  const std::string root = tempDir();
  const auto self = ProcessIdentity::current();
  // A live owner (this process under another instance id) and a dead one (a reaped child).
  RuntimeDir live(root, "live", ownershipLabels("live", self));
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  auto dead_identity = self;
  dead_identity.pid = child;
  fs::create_directories(root + "/dead");
  std::ofstream(root + "/dead/owner.json") << json(ownershipLabels("dead", dead_identity)).dump();

  EXPECT_EQ(RuntimeDir::removeStale(root, "me", self), 1);
  EXPECT_TRUE(fs::exists(root + "/live"));
  EXPECT_FALSE(fs::exists(root + "/dead"));
  fs::remove_all(root);
}

TEST(RuntimeDir, ARestartedInstanceStartsFromAnEmptyDirectory) {
  const std::string root = tempDir();
  const auto self = ProcessIdentity::current();
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  auto earlier_run = self;  // the same instance id, run by a process that has exited
  earlier_run.pid = child;
  fs::create_directories(root + "/replica-1/s-leftover");
  std::ofstream(root + "/replica-1/owner.json")
      << json(ownershipLabels("replica-1", earlier_run)).dump();

  // The sweep leaves our own id's directory to the constructor, which cleans it under the lock.
  EXPECT_EQ(RuntimeDir::removeStale(root, "replica-1", self), 0);
  {
    RuntimeDir dir(root, "replica-1", ownershipLabels("replica-1", self));
    EXPECT_FALSE(fs::exists(dir.path() + "/s-leftover"));
    EXPECT_TRUE(fs::exists(dir.path() + "/owner.json"));
  }
  fs::remove_all(root);
}

TEST(RuntimeDir, RefusesAnInstanceIdThatALiveServerHolds) {
  const std::string root = tempDir();
  const pid_t other = fork();  // another live "server" on this host
  if (other == 0) {
    pause();
    _exit(0);
  }
  auto identity = ProcessIdentity::current();
  identity.pid = other;
  identity.start_ticks = processStartTicks(other).value_or(0);
  fs::create_directories(root + "/replica-1/s-live");
  std::ofstream(root + "/replica-1/owner.json")
      << json(ownershipLabels("replica-1", identity)).dump();

  EXPECT_EQ(RuntimeDir::removeStale(root, "replica-1", ProcessIdentity::current()), 0);
  try {
    RuntimeDir dir(root, "replica-1", ownershipLabels("replica-1", ProcessIdentity::current()));
    ADD_FAILURE() << "a second server took instance id replica-1";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("another live server (pid " + std::to_string(other) +
                                         ") uses this instance id"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::exists(root + "/replica-1/s-live"));  // the live server's files are untouched
  kill(other, SIGKILL);
  waitpid(other, nullptr, 0);
  fs::remove_all(root);
}

TEST(RuntimeDir, AReplicaInAnotherPidNamespaceIsKeptWhileItsHeartbeatIsFresh) {
  const std::string root = tempDir();
  auto other = ProcessIdentity::current();
  other.pid_namespace = "pid:[4026539999]";  // a replica in another container on this host
  for (const char* name : {"fresh", "silent"}) {
    fs::create_directories(root + "/" + name + "/s-x");
    std::ofstream(root + "/" + name + "/owner.json") << json(ownershipLabels(name, other)).dump();
  }
  // "silent" has not touched its owner.json for longer than the stale age; nor its directory.
  const auto old_time =
      std::chrono::system_clock::now() - std::chrono::seconds(kStaleAfterSeconds + 60);
  const timespec old_spec{std::chrono::system_clock::to_time_t(old_time), 0};
  const timespec times[2] = {old_spec, old_spec};
  ASSERT_EQ(utimensat(AT_FDCWD, (root + "/silent/owner.json").c_str(), times, 0), 0);
  ASSERT_EQ(utimensat(AT_FDCWD, (root + "/fresh").c_str(), times, 0), 0);  // only owner.json counts

  EXPECT_EQ(RuntimeDir::removeStale(root, "me", ProcessIdentity::current()), 1);
  EXPECT_TRUE(fs::exists(root + "/fresh/s-x"));
  EXPECT_FALSE(fs::exists(root + "/silent"));
  fs::remove_all(root);
}

TEST(RuntimeDir, ALiveDirectoryKeepsItsHeartbeat) {
  const std::string root = tempDir();
  {
    RuntimeDir dir(root, "beating", ownershipLabels("beating", ProcessIdentity::current()),
                   std::chrono::milliseconds(20));
    const std::string owner = dir.path() + "/owner.json";
    const timespec old_spec{1000, 0};  // 1970
    const timespec times[2] = {old_spec, old_spec};
    ASSERT_EQ(utimensat(AT_FDCWD, owner.c_str(), times, 0), 0);
    const auto touched = [&owner] {
      struct stat info {};
      return ::stat(owner.c_str(), &info) == 0 && info.st_mtime > 1000;
    };
    for (int i = 0; i < 200 && !touched(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(touched()) << "the heartbeat did not touch owner.json";
  }  // the heartbeat thread stops with the RuntimeDir
  EXPECT_TRUE(fs::is_empty(root));
  fs::remove_all(root);
}

TEST(RuntimeDir, TheInstanceLockRefusesASecondServerInAnyPidNamespace) {
  const std::string root = tempDir();
  const auto self = ProcessIdentity::current();
  {
    RuntimeDir first(root, "replica-1", ownershipLabels("replica-1", self));
    EXPECT_TRUE(fs::exists(root + "/replica-1.lock"));
    // A second server with the id: its owner.json check would not see a process in another pid
    // namespace, but the lock (one open file per server) does.
    try {
      RuntimeDir second(root, "replica-1", ownershipLabels("replica-1", self));
      ADD_FAILURE() << "a second RuntimeDir took instance id replica-1";
    } catch (const SandboxError& e) {
      EXPECT_NE(std::string(e.what()).find("another live server on this host holds it"),
                std::string::npos)
          << e.what();
    }
    EXPECT_TRUE(fs::exists(first.path() + "/owner.json"));       // the refusal removed nothing
    EXPECT_EQ(RuntimeDir::removeStale(root, "other", self), 0);  // a held lock stays
    EXPECT_TRUE(fs::exists(root + "/replica-1.lock"));
  }
  EXPECT_FALSE(fs::exists(root + "/replica-1.lock"));  // released and removed with its holder
  { RuntimeDir again(root, "replica-1", ownershipLabels("replica-1", self)); }

  std::ofstream(root + "/crashed.lock") << "";  // a server that died holding nothing now
  EXPECT_EQ(RuntimeDir::removeStale(root, "me", self), 1);
  EXPECT_FALSE(fs::exists(root + "/crashed.lock"));
  EXPECT_TRUE(fs::is_empty(root));
  fs::remove_all(root);
}

}  // namespace
