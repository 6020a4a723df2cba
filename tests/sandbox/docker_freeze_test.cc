// The frozen tier's sandbox side against the real dockerd and runsc: a frozen sandbox uses no
// CPU and keeps its state, whatever reaches it next (a call, a checkpoint, its removal) thaws it
// first, and a frozen container a crashed server left behind is removed without waiting.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/random_id.h"
#include "docker_test_support.h"

namespace {

using namespace docker_test;
namespace fs = std::filesystem;

class Freezing : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = backend_.freezeUnsupported()) {
      FAIL() << "the frozen tier is unavailable with this engine: " << *why;
    }
  }
  // The container's freezer state as the kernel reports it, read the way an operator would:
  // its first process's line for the v1 freezer hierarchy (the cgroup v1 host these tests run on).
  std::string freezerState(const std::string& id) {
    const auto pid = inspect(backend_.engine(), id)->at("State").value("Pid", 0);
    std::ifstream cgroups("/proc/" + std::to_string(pid) + "/cgroup");
    std::string line;
    while (std::getline(cgroups, line)) {
      const auto first = line.find(':');
      const auto second = line.find(':', first + 1);
      if (line.substr(first + 1, second - first - 1) != "freezer") continue;
      std::ifstream state("/sys/fs/cgroup/freezer" + line.substr(second + 1) + "/freezer.state");
      std::string word;
      state >> word;
      return word;
    }
    return "no freezer";
  }

  DockerBackend backend_{options()};
};

TEST_F(Freezing, AFrozenSandboxUsesNoCpuKeepsItsStateAndTheNextCallThawsIt) {
  auto box = backend_.create(spec());
  ASSERT_EQ(python(*box, "x = 41\nx").result, "41");
  ASSERT_TRUE(box->freeze());
  EXPECT_TRUE(box->frozen());
  EXPECT_EQ(freezerState(box->id()), "FROZEN");
  const auto before = box->usage();
  ASSERT_TRUE(before);
  EXPECT_GT(before->memory_bytes, 1U << 20) << "a frozen sandbox keeps its memory";
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(box->usage()->cpu_ns, before->cpu_ns) << "gVisor's Sentry spins while idle, not frozen";

  const auto start = Clock::now();
  EXPECT_EQ(python(*box, "x += 1\nx").result, "42");
  std::printf("[ metric ] first call on a frozen sandbox: %.1f ms\n", msSince(start));
  EXPECT_FALSE(box->frozen());
  EXPECT_EQ(freezerState(box->id()), "THAWED");
  // Idle but thawed, its Sentry spins again: the reason for the tier.
  const auto idle = box->usage()->cpu_ns;
  std::this_thread::sleep_for(1500ms);
  std::printf("[ metric ] idle sandbox: %.1f %% of a core\n",
              static_cast<double>(box->usage()->cpu_ns - idle) / 1.5e7);
}

TEST_F(Freezing, ACheckpointThawsTheSandboxFirst) {
  if (const auto why = backend_.checkpointUnsupported("runsc")) FAIL() << *why;
  backend_.useChannelSockets("/tmp/sandbox-mcp-freeze-" + common::randomHex(6));
  auto box = backend_.create(spec());
  ASSERT_EQ(python(*box, "y = 7\ny").result, "7");
  ASSERT_TRUE(box->freeze());
  const fs::path image = fs::temp_directory_path() / ("freeze-ckpt-" + common::randomHex(6));
  fs::create_directories(image);
  const auto start = Clock::now();
  box->checkpoint(image);  // a frozen agent would never answer its suspend
  EXPECT_LT(msSince(start), 20000);
  EXPECT_FALSE(box->frozen());
  EXPECT_EQ(python(*box, "y").result, "7");
  fs::remove_all(image);
}

TEST_F(Freezing, RemovingAFrozenSandboxDoesNotWaitForAThaw) {
  auto box = backend_.create(spec());
  const std::string id = box->id();
  ASSERT_TRUE(box->freeze());
  const auto start = Clock::now();
  box.reset();
  std::printf("[ metric ] removal of a frozen sandbox: %.0f ms\n", msSince(start));
  EXPECT_TRUE(goneWithin(backend_.engine(), id, 10s));
}

TEST_F(Freezing, AFrozenContainerACrashedServerLeftIsRemovedWithoutWaiting) {
  auto box = backend_.create(spec());
  const std::string id = box->id();
  ASSERT_TRUE(box->freeze());
  // As a crashed server leaves it: the channel gone, the agent frozen (it never sees EOF).
  dynamic_cast<DockerSandbox&>(*box).dropChannelForTesting();
  std::this_thread::sleep_for(500ms);
  ASSERT_TRUE(inspect(backend_.engine(), id)) << "a frozen agent cannot exit by itself";
  EXPECT_EQ(freezerState(id), "FROZEN");
  const auto start = Clock::now();
  EXPECT_TRUE(thawContainer(backend_.engine(), id));  // what the start-up sweep runs
  forceRemoveContainer(backend_.engine(), id);
  EXPECT_LT(msSince(start), 15000);
  EXPECT_TRUE(goneWithin(backend_.engine(), id, 5s));
}

TEST_F(Freezing, AFreezeWaitsForNoCallAndASandboxWithACallRunningIsNotFrozen) {
  auto box = backend_.create(spec());
  std::thread call([&] { (void)python(*box, "import time\ntime.sleep(1.5)\n1"); });
  std::this_thread::sleep_for(500ms);
  EXPECT_FALSE(box->freeze()) << "frozen in the middle of a call";
  call.join();
  EXPECT_TRUE(box->freeze());
}

}  // namespace
