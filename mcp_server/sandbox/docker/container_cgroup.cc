#include "sandbox/docker/container_cgroup.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "sandbox/docker/freeze_witness.h"

namespace sandbox::docker {
namespace {

namespace fs = std::filesystem;

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const auto end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

bool listHas(std::string_view list, std::string_view item) {
  for (const auto part : split(list, ',')) {
    if (part == item) return true;
  }
  return false;
}

struct Mount {
  std::string root;
  std::string point;
  bool v2 = false;
  std::string options;  // v1: holds the controllers
};

std::vector<Mount> cgroupMounts(std::string_view mountinfo) {
  std::vector<Mount> mounts;
  for (const auto line : split(mountinfo, '\n')) {
    const auto dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    const auto before = split(line.substr(0, dash), ' ');
    const auto after = split(line.substr(dash + 3), ' ');
    if (before.size() < 5 || after.size() < 3) continue;
    const bool v1 = after[0] == "cgroup";
    if (!v1 && after[0] != "cgroup2") continue;
    mounts.push_back(
        {std::string(before[3]), std::string(before[4]), !v1, v1 ? std::string(after[2]) : ""});
  }
  return mounts;
}

// `path` (as /proc/PID/cgroup names it) under `mount`; nullopt when the mount does not show it
// or the path climbs ("..": a process outside this reader's cgroup namespace).
std::optional<fs::path> under(const Mount& mount, std::string_view path) {
  for (const auto part : split(path, '/')) {
    if (part == "..") return std::nullopt;
  }
  std::string_view relative = path;
  if (mount.root != "/") {
    if (!relative.starts_with(mount.root)) return std::nullopt;
    relative.remove_prefix(mount.root.size());
    if (!relative.empty() && relative.front() != '/') return std::nullopt;  // /outer vs /outerX
  }
  while (relative.starts_with('/')) relative.remove_prefix(1);
  return fs::path(mount.point) / relative;
}

// The v1 directory of `controller` for the process, or nullopt.
std::optional<fs::path> v1Directory(const std::vector<Mount>& mounts, std::string_view proc_cgroup,
                                    std::string_view controller) {
  for (const auto line : split(proc_cgroup, '\n')) {
    const auto fields = split(line, ':');
    if (fields.size() < 3 || !listHas(fields[1], controller)) continue;
    const auto path = line.substr(fields[0].size() + fields[1].size() + 2);
    for (const auto& mount : mounts) {
      if (mount.v2 || !listHas(mount.options, controller)) continue;
      if (auto dir = under(mount, path)) return dir;
    }
  }
  return std::nullopt;
}

std::optional<std::string> readSmallFile(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool writeSmallFile(const fs::path& path, std::string_view text) noexcept {
  const common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return false;
  return ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

std::optional<std::uint64_t> number(std::string_view text) {
  std::uint64_t value = 0;
  bool any = false;
  for (const char c : text) {
    if (c < '0' || c > '9') break;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
    any = true;
  }
  return any ? std::optional(value) : std::nullopt;
}

// The number after `key ` on a line of a flat-keyed cgroup file (cpu.stat, cgroup.events).
std::optional<std::uint64_t> keyed(std::string_view text, std::string_view key) {
  for (const auto line : split(text, '\n')) {
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ' ') {
      return number(line.substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<CgroupFiles> cgroupFilesOf(std::string_view proc_cgroup, std::string_view mountinfo) {
  const auto mounts = cgroupMounts(mountinfo);
  CgroupFiles files;
  if (const auto freezer = v1Directory(mounts, proc_cgroup, "freezer")) {
    files.freeze = *freezer / "freezer.state";
    if (const auto cpu = v1Directory(mounts, proc_cgroup, "cpuacct")) {
      files.cpu = *cpu / "cpuacct.usage";
    }
    if (const auto memory = v1Directory(mounts, proc_cgroup, "memory")) {
      files.memory = *memory / "memory.usage_in_bytes";
    }
    return files;
  }
  for (const auto line : split(proc_cgroup, '\n')) {
    if (!line.starts_with("0::")) continue;
    for (const auto& mount : mounts) {
      if (!mount.v2) continue;
      const auto dir = under(mount, line.substr(3));
      if (!dir) continue;
      files.v2 = true;
      files.freeze = *dir / "cgroup.freeze";
      files.events = *dir / "cgroup.events";
      files.cpu = *dir / "cpu.stat";
      files.memory = *dir / "memory.current";
      return files;
    }
  }
  return std::nullopt;
}

std::optional<std::string> hostFreezerMissing() {
  const auto mountinfo = readSmallFile("/proc/self/mountinfo");
  if (!mountinfo) return "/proc/self/mountinfo is unreadable";
  for (const auto& mount : cgroupMounts(*mountinfo)) {
    if (!mount.v2 && !listHas(mount.options, "freezer")) continue;
    if (::access(mount.point.c_str(), W_OK) == 0) return std::nullopt;
    return "the cgroup freezer at " + mount.point +
           " is not writable by this server (run it as root)";
  }
  return std::string("this host mounts no cgroup freezer");
}

std::optional<ContainerCgroup> ContainerCgroup::ofContainer(pid_t pid,
                                                            const std::string& container_id) {
  if (pid <= 0 || container_id.size() < 12) return std::nullopt;
  const auto proc_cgroup = readSmallFile("/proc/" + std::to_string(pid) + "/cgroup");
  const auto mountinfo = readSmallFile("/proc/self/mountinfo");
  if (!proc_cgroup || !mountinfo) return std::nullopt;
  auto files = cgroupFilesOf(*proc_cgroup, *mountinfo);
  if (!files ||
      files->freeze.parent_path().filename().string().find(container_id) == std::string::npos) {
    return std::nullopt;
  }
  if (::access(files->freeze.c_str(), W_OK) != 0) return std::nullopt;
  return ContainerCgroup(std::move(*files));
}

bool ContainerCgroup::freeze(std::chrono::milliseconds wait) {
  (void)FreezeWitness::instance().willFreeze(files_.freeze);  // thaws it if the server dies
  if (!writeSmallFile(files_.freeze, files_.v2 ? "1" : "FROZEN")) return false;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  // v1 reads FREEZING until every task stopped; v2 says so in cgroup.events.
  while (!frozen()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      (void)thaw();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool ContainerCgroup::thaw() noexcept {
  if (!writeSmallFile(files_.freeze, files_.v2 ? "0" : "THAWED")) return false;
  FreezeWitness::instance().thawed(files_.freeze);
  return true;
}

bool ContainerCgroup::frozen() const {
  if (files_.v2) {
    const auto events = readSmallFile(files_.events);
    return events && keyed(*events, "frozen") == 1U;
  }
  const auto state = readSmallFile(files_.freeze);
  return state && state->starts_with("FROZEN");
}

std::optional<std::uint64_t> ContainerCgroup::cpuNs() const {
  if (files_.cpu.empty()) return std::nullopt;
  const auto text = readSmallFile(files_.cpu);
  if (!text) return std::nullopt;
  if (!files_.v2) return number(*text);
  const auto usec = keyed(*text, "usage_usec");
  return usec ? std::optional(*usec * 1000) : std::nullopt;
}

std::optional<std::uint64_t> ContainerCgroup::memoryBytes() const {
  if (files_.memory.empty()) return std::nullopt;
  const auto text = readSmallFile(files_.memory);
  return text ? number(*text) : std::nullopt;
}

}  // namespace sandbox::docker
