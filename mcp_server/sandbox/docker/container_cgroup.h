// A container's cgroup on the engine's host, reached through the server's own /sys/fs/cgroup (the
// engine must share the server's host): its freezer, its CPU time and its memory. The frozen tier
// (sessions.freeze_after_idle_s) stops an idle sandbox with the freezer, because gVisor's own
// pause leaves its Sentry spinning; a frozen container uses no CPU and keeps its memory.
// cgroup v1 (freezer.state, cpuacct.usage, memory.usage_in_bytes) and v2 (cgroup.freeze,
// cpu.stat, memory.current), whichever holds the container, found from its process's
// /proc/PID/cgroup and the host's mounts, so any cgroup parent or driver works.
// Thread-compatible: one owner calls it (DockerSandbox serializes).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace sandbox::docker {

struct CgroupFiles {
  bool v2 = false;
  std::filesystem::path freeze;  // v1 freezer.state ("FROZEN"/"THAWED"), v2 cgroup.freeze (1/0)
  std::filesystem::path events;  // v2 cgroup.events ("frozen 1"); empty on v1
  std::filesystem::path cpu;     // v1 cpuacct.usage (ns), v2 cpu.stat (usage_usec)
  std::filesystem::path memory;  // v1 memory.usage_in_bytes, v2 memory.current
};

// The files of the cgroup `proc_cgroup` (a /proc/PID/cgroup) names, under the cgroup mounts of
// `mountinfo` (a /proc/self/mountinfo). nullopt when no freezer holds the process (no v1
// freezer mount, and no v2 hierarchy with its path). Pure.
[[nodiscard]] std::optional<CgroupFiles> cgroupFilesOf(std::string_view proc_cgroup,
                                                       std::string_view mountinfo);

// Why this host's cgroup freezer cannot be used by this process (no freezer hierarchy mounted, or
// not writable: not root), or nullopt when it can.
[[nodiscard]] std::optional<std::string> hostFreezerMissing();

class ContainerCgroup {
 public:
  explicit ContainerCgroup(CgroupFiles files) : files_(std::move(files)) {}

  // The cgroup of container `container_id` (its full id) through its first process `pid` (the
  // engine's State.Pid) on this host; nullopt when it cannot be read, has no freezer, or is not
  // the container's own (its directory must name the id): a pid reused by another process after
  // the container ended must never lead to freezing that process's cgroup.
  [[nodiscard]] static std::optional<ContainerCgroup> ofContainer(pid_t pid,
                                                                  const std::string& container_id);

  // Freezes every process of the cgroup; true once the kernel reports it frozen. A freeze that
  // does not complete within `wait` is undone (false): a process in an uninterruptible wait.
  bool freeze(std::chrono::milliseconds wait);
  // Thaws it (at once); false when the file cannot be written (the cgroup is gone).
  bool thaw() noexcept;
  [[nodiscard]] bool frozen() const;
  // CPU time the cgroup used since it was made, in ns; nullopt when unreadable.
  [[nodiscard]] std::optional<std::uint64_t> cpuNs() const;
  // Memory it is charged for now (resident and page cache), in bytes; nullopt when unreadable.
  [[nodiscard]] std::optional<std::uint64_t> memoryBytes() const;

  [[nodiscard]] const CgroupFiles& files() const noexcept { return files_; }

 private:
  CgroupFiles files_;
};

}  // namespace sandbox::docker
