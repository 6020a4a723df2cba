// The container cgroup resolver (container_cgroup.h): /proc/PID/cgroup and the host's mountinfo,
// as the hosts we meet write them, to the files the frozen tier reads and writes.
#include "sandbox/docker/container_cgroup.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sandbox/docker/freeze_witness.h"

namespace {

using sandbox::docker::cgroupFilesOf;

constexpr const char* kId = "34d073e7560bae2488e97fd6af2dbda4885bf4e3201ce93d6f4630fafee19342";

// Debian 12 with cgroupfs and v1 controllers (this machine kind): cpu and cpuacct apart.
constexpr const char* kHybridMounts =
    "25 30 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
    "29 25 0:26 / /sys/fs/cgroup/freezer rw,nosuid shared:13 - cgroup cgroup rw,freezer\n"
    "30 25 0:27 / /sys/fs/cgroup/cpuacct rw,nosuid shared:14 - cgroup cgroup rw,cpuacct\n"
    "31 25 0:28 / /sys/fs/cgroup/memory rw,nosuid shared:15 - cgroup cgroup rw,memory\n"
    "32 25 0:29 / /sys/fs/cgroup/cpu rw,nosuid shared:16 - cgroup cgroup rw,cpu\n";

std::string v1Process(const std::string& path) {
  return "9:name=systemd:" + path + "\n6:freezer:" + path + "\n4:memory:" + path +
         "\n2:cpuacct:" + path + "\n1:cpu:" + path + "\n0::/\n";
}

TEST(ContainerCgroup, HybridHostUsesTheV1Freezer) {
  const auto files = cgroupFilesOf(v1Process(std::string("/docker/") + kId), kHybridMounts);
  ASSERT_TRUE(files);
  EXPECT_FALSE(files->v2);
  EXPECT_EQ(files->freeze, std::string("/sys/fs/cgroup/freezer/docker/") + kId + "/freezer.state");
  EXPECT_EQ(files->cpu, std::string("/sys/fs/cgroup/cpuacct/docker/") + kId + "/cpuacct.usage");
  EXPECT_EQ(files->memory,
            std::string("/sys/fs/cgroup/memory/docker/") + kId + "/memory.usage_in_bytes");
}

TEST(ContainerCgroup, CoMountedControllersAndAnotherCgroupParentResolve) {
  const std::string mounts =
      "29 25 0:26 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n"
      "30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
  const std::string process = "6:freezer:/tls-engine/abc\n2:cpu,cpuacct:/tls-engine/abc\n";
  const auto files = cgroupFilesOf(process, mounts);
  ASSERT_TRUE(files);
  EXPECT_EQ(files->freeze, "/sys/fs/cgroup/freezer/tls-engine/abc/freezer.state");
  EXPECT_EQ(files->cpu, "/sys/fs/cgroup/cpu,cpuacct/tls-engine/abc/cpuacct.usage");
  EXPECT_TRUE(files->memory.empty()) << "no memory controller: memory unknown";
}

TEST(ContainerCgroup, UnifiedHostUsesCgroupFreeze) {
  const std::string mounts =
      "24 30 0:22 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
  const auto files =
      cgroupFilesOf(std::string("0::/system.slice/docker-") + kId + ".scope\n", mounts);
  ASSERT_TRUE(files);
  EXPECT_TRUE(files->v2);
  const std::string dir = std::string("/sys/fs/cgroup/system.slice/docker-") + kId + ".scope";
  EXPECT_EQ(files->freeze, dir + "/cgroup.freeze");
  EXPECT_EQ(files->events, dir + "/cgroup.events");
  EXPECT_EQ(files->cpu, dir + "/cpu.stat");
  EXPECT_EQ(files->memory, dir + "/memory.current");
}

TEST(ContainerCgroup, AMountRootedBelowTheHierarchyStripsItsRoot) {
  // A server in a container of its own sees the hierarchy from its cgroup down.
  const std::string mounts =
      "29 25 0:26 /outer /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n";
  const auto files = cgroupFilesOf("6:freezer:/outer/docker/abc\n", mounts);
  ASSERT_TRUE(files);
  EXPECT_EQ(files->freeze, "/sys/fs/cgroup/freezer/docker/abc/freezer.state");
  EXPECT_FALSE(cgroupFilesOf("6:freezer:/elsewhere/abc\n", mounts)) << "not under the mount";
  EXPECT_FALSE(cgroupFilesOf("6:freezer:/outerX/docker/abc\n", mounts)) << "a sibling of the root";
  EXPECT_FALSE(cgroupFilesOf("6:freezer:/outer/../docker/abc\n", mounts)) << "a climbing path";
}

TEST(ContainerCgroup, NoFreezerNoFiles) {
  EXPECT_FALSE(cgroupFilesOf("", kHybridMounts));
  EXPECT_FALSE(cgroupFilesOf(v1Process("/docker/abc"), ""));
  const std::string no_freezer =
      "31 25 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
  EXPECT_FALSE(cgroupFilesOf(v1Process("/docker/abc"), no_freezer));
  EXPECT_FALSE(cgroupFilesOf("garbage\n:::\n0:\n", "garbage - \n - cgroup\n"));
}

// A container's pid can be reused by another process once the container ended: a cgroup that is
// not the container's own (its directory does not name the id) is never taken.
TEST(ContainerCgroup, AProcessOutsideTheContainersCgroupIsRefused) {
  EXPECT_FALSE(sandbox::docker::ContainerCgroup::ofContainer(::getpid(), kId));
  EXPECT_FALSE(sandbox::docker::ContainerCgroup::ofContainer(1, kId));
  EXPECT_FALSE(sandbox::docker::ContainerCgroup::ofContainer(0, kId));
}

// The freeze witness thaws, when the server's pipe ends, every file it was told was frozen and
// not thawed since, v1 and v2 alike, and writes nothing else.
TEST(FreezeWitness, ThawsWhatIsStillFrozenWhenTheServerEnds) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("witness-" + std::to_string(::getpid()));
  for (const char* sub : {"a", "b", "c"}) fs::create_directories(dir / sub);
  const auto put = [](const fs::path& file, const char* text) { std::ofstream(file) << text; };
  const auto read = [](const fs::path& file) {
    std::ifstream in(file);
    std::string word;
    in >> word;
    return word;
  };
  put(dir / "a" / "freezer.state", "FROZEN");
  put(dir / "b" / "cgroup.freeze", "1");
  put(dir / "c" / "freezer.state", "FROZEN");  // thawed by the server, then frozen by another
  put(dir / "c" / "other", "FROZEN");
  std::istringstream server_said("F " + (dir / "a" / "freezer.state").string() + "\n" + "F " +
                                 (dir / "b" / "cgroup.freeze").string() + "\n" + "F " +
                                 (dir / "c" / "freezer.state").string() + "\n" + "T " +
                                 (dir / "c" / "freezer.state").string() + "\n" + "F " +
                                 (dir / "c" / "other").string() + "\ngarbage\n");
  EXPECT_EQ(sandbox::docker::runFreezeWitness(server_said), 0);
  EXPECT_EQ(read(dir / "a" / "freezer.state"), "THAWED");
  EXPECT_EQ(read(dir / "b" / "cgroup.freeze"), "0");
  EXPECT_EQ(read(dir / "c" / "freezer.state"), "FROZEN") << "not the witness's to thaw any more";
  EXPECT_EQ(read(dir / "c" / "other"), "FROZEN") << "only freezer files are ever written";
  fs::remove_all(dir);
}

}  // namespace
