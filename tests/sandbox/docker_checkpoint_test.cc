// Checkpoints against the real dockerd and runsc: a sandbox saved with runsc checkpoint goes on
// running with a new channel, and a new container restored from the files carries on with the
// same variables, open files, tmpfs files and background processes, still without a network
// and still under its limits.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/random_id.h"
#include "docker_test_support.h"

namespace {

using namespace docker_test;
namespace fs = std::filesystem;

class Checkpoints : public ::testing::Test {
 protected:
  Checkpoints() {
    backend_.useChannelSockets(root_ + "/c");
    fs::create_directories(images_);
  }
  ~Checkpoints() override { fs::remove_all(root_); }

  void SetUp() override {
    if (const auto why = backend_.checkpointUnsupported("runsc")) {
      FAIL() << "checkpoints are unavailable on this engine: " << *why;
    }
  }

  SandboxSpec production() {
    SandboxSpec out = spec();
    out.user = "65534:65534";
    return out;
  }

  const std::string root_ = "/tmp/sandbox-mcp-ckpt-" + common::randomHex(6);
  const fs::path images_ = fs::path(root_) / "images";
  DockerBackend backend_{options()};
};

std::uint64_t bytesIn(const fs::path& dir) {
  std::uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(dir)) total += entry.file_size();
  return total;
}

void copyFiles(const fs::path& from, const fs::path& to) {
  for (const auto& entry : fs::directory_iterator(from)) {
    fs::copy_file(entry.path(), to / entry.path().filename());
  }
}

TEST_F(Checkpoints, ASandboxGoesOnAfterItsCheckpointAndARestoreCarriesOnFromIt) {
  auto original = backend_.create(production());
  const std::string setup =
      "import subprocess\n"
      "x = 41\n"
      "log = open('/tmp/log.txt', 'w')\n"
      "log.write('before ')\n"
      "open('kept.txt', 'w').write('in the workdir tmpfs')\n"
      "worker = subprocess.Popen(['sleep', '600'])\n"
      "worker.pid > 0";
  ASSERT_EQ(python(*original, setup).result, "True");

  const fs::path image = images_ / "one";
  fs::create_directories(image);
  auto start = Clock::now();
  original->checkpoint(image);
  std::printf("[ metric ] checkpoint of a small Python session: %.0f ms, %.1f MB\n", msSince(start),
              static_cast<double>(bytesIn(image)) / 1e6);
  EXPECT_TRUE(fs::exists(image / "checkpoint.img"));

  // The original goes on, over a new channel.
  ASSERT_TRUE(original->alive());
  EXPECT_TRUE(dynamic_cast<DockerSandbox&>(*original).usesChannelSocket());
  EXPECT_EQ(python(*original, "x += 100\nx").result, "141");

  start = Clock::now();
  auto restored =
      backend_.restore(production(), [&](const fs::path& dir) { copyFiles(image, dir); });
  std::printf("[ metric ] restore to a ready channel: %.0f ms\n", msSince(start));
  EXPECT_NE(restored->id(), original->id());
  EXPECT_TRUE(dynamic_cast<DockerSandbox&>(*restored).usesChannelSocket());

  // The state as it was at the checkpoint, not the original's later change.
  EXPECT_EQ(python(*restored, "x + 1").result, "42");
  EXPECT_EQ(
      python(*restored, "log.write('after'); log.flush(); open('/tmp/log.txt').read()").result,
      "'before after'");
  EXPECT_EQ(python(*restored, "open('kept.txt').read()").result, "'in the workdir tmpfs'");
  EXPECT_EQ(python(*restored, "worker.poll() is None").result, "True");
  EXPECT_EQ(
      run(*restored, ExecKind::kShell, "pgrep -x sleep >/dev/null && echo running").stdout_text,
      "running\n");
  // Still no network, still the same user.
  const auto probe = python(*restored,
                            "import socket, os\n"
                            "s = socket.socket()\n"
                            "s.settimeout(2)\n"
                            "try:\n"
                            "    s.connect(('10.255.255.1', 80)); r = 'connected'\n"
                            "except OSError as e:\n"
                            "    r = type(e).__name__\n"
                            "(r, os.getuid(), [name for _, name in socket.if_nameindex()])");
  EXPECT_EQ(probe.result, "('OSError', 65534, ['lo'])") << probe.stderr_text;

  // Both live side by side and diverge.
  EXPECT_EQ(python(*original, "x").result, "141");
  EXPECT_EQ(python(*restored, "x").result, "41");
}

TEST_F(Checkpoints, ARestoredSandboxKeepsItsMemoryLimit) {
  SandboxSpec small = production();
  small.limits.memory_mib = 256;
  auto original = backend_.create(small);
  ASSERT_EQ(python(*original, "x = 1\nx").result, "1");
  const fs::path image = images_ / "limits";
  fs::create_directories(image);
  original->checkpoint(image);
  original.reset();

  auto restored = backend_.restore(small, [&](const fs::path& dir) { copyFiles(image, dir); });
  const auto& id = restored->id();
  const auto details = inspect(backend_.engine(), id);
  ASSERT_TRUE(details);
  EXPECT_EQ(details->at("HostConfig").at("Memory").get<std::int64_t>(), 256LL * 1024 * 1024);
  EXPECT_EQ(details->at("HostConfig").at("NetworkMode").get<std::string>(), "none");
  // Past the limit the restored sandbox is stopped like any other.
  try {
    (void)python(*restored, "blocks = [bytearray(32 << 20) for _ in range(32)]\nlen(blocks)");
  } catch (const SandboxError&) {
  }
  EXPECT_FALSE(restored->alive() && python(*restored, "len(blocks)").result == "32")
      << "a restored sandbox held 1 GiB under a 256 MiB limit";
}

TEST_F(Checkpoints, ACheckpointWhileCodeHoldsAHostSocketFailsAndTheSandboxRunsOn) {
  // The sandbox's only host socket is its channel; a file tool in a thread keeps the calls lock
  // busy, so this provokes the other refusal: a call in flight.
  auto sandbox = backend_.create(production());
  std::thread busy([&] { (void)python(*sandbox, "import time\ntime.sleep(6)"); });
  std::this_thread::sleep_for(500ms);
  const fs::path image = images_ / "busy";
  fs::create_directories(image);
  try {
    sandbox->checkpoint(image);
    ADD_FAILURE() << "a checkpoint during an execution succeeded";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("busy"), std::string::npos) << e.what();
  }
  busy.join();
  EXPECT_EQ(python(*sandbox, "1 + 1").result, "2");
}

TEST_F(Checkpoints, ARestoreFromDamagedFilesFailsCleanly) {
  const auto before = containersOfThisProcess(backend_.engine()).size();
  EXPECT_THROW((void)backend_.restore(production(),
                                      [](const fs::path& dir) {
                                        std::ofstream(dir / "checkpoint.img") << "not an image";
                                      }),
               SandboxError);
  const auto deadline = Clock::now() + 10s;
  while (containersOfThisProcess(backend_.engine()).size() > before && Clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(containersOfThisProcess(backend_.engine()).size(), before) << "a container leaked";
}

}  // namespace
