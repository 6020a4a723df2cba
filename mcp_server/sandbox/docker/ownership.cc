#include "sandbox/docker/ownership.h"

#include <unistd.h>

#include <array>
#include <charconv>
#include <fstream>
#include <sstream>

namespace sandbox::docker {
namespace {

std::string readFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

template <class Int>
std::optional<Int> parseInt(const std::string& text) {
  Int value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::string labelOr(const std::map<std::string, std::string>& labels, const char* key) {
  const auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

OrphanDecision staleUnlessRunning(const ContainerSummary& container, std::int64_t now_unix,
                                  const std::string& why_unknown) {
  if (container.state == "running") {
    return {false, why_unknown + ", and it is running: kept (remove it by hand if it is stale)"};
  }
  if (now_unix - container.created_unix < kStaleAfterSeconds) {
    return {false, why_unknown + ", and it is recent: kept (it may be starting)"};
  }
  return {true, why_unknown + ", and it has been " + container.state + " for a long time"};
}

// A container labelled with our instance id: ours if this very process created it; else left
// by an earlier run of this instance (a restarted replica reaps its own leftovers, wherever that
// run lived), unless a live process on this host still claims the id: then two servers were
// given one id, and neither may touch the other's sandboxes.
OrphanDecision decideOwnInstance(const std::string& boot_id, const std::string& pid_namespace,
                                 std::optional<std::int64_t> pid,
                                 std::optional<std::uint64_t> start, const ProcessIdentity& self,
                                 const StartTicksLookup& start_ticks_of) {
  const bool same_namespace = boot_id == self.boot_id && pid_namespace == self.pid_namespace;
  if (same_namespace && pid && start) {
    if (*pid == self.pid && *start == self.start_ticks) return {false, "belongs to this server"};
    const auto live_start = start_ticks_of(*pid);
    if (live_start && *live_start == *start) {
      return {false,
              "another live server (pid " + std::to_string(*pid) +
                  ") uses this instance id: give each server its own instance_id",
              true};
    }
  }
  return {true, "an earlier run of this instance left it"};
}

}  // namespace

ProcessIdentity ProcessIdentity::current() {
  ProcessIdentity self;
  self.boot_id = readFirstLine("/proc/sys/kernel/random/boot_id");
  std::array<char, 128> link{};
  const ssize_t n = ::readlink("/proc/self/ns/pid", link.data(), link.size() - 1);
  if (n > 0) self.pid_namespace.assign(link.data(), static_cast<std::size_t>(n));
  self.pid = ::getpid();
  self.start_ticks = processStartTicks(self.pid).value_or(0);
  return self;
}

std::map<std::string, std::string> ownershipLabels(const std::string& instance_id,
                                                   const ProcessIdentity& self) {
  return {
      {kLabelManaged, "1"},
      {kLabelInstance, instance_id},
      {kLabelBootId, self.boot_id},
      {kLabelPidNamespace, self.pid_namespace},
      {kLabelPid, std::to_string(self.pid)},
      {kLabelPidStart, std::to_string(self.start_ticks)},
  };
}

OrphanDecision decideOrphan(const ContainerSummary& container, const std::string& our_instance,
                            const ProcessIdentity& self, std::int64_t now_unix,
                            const StartTicksLookup& start_ticks_of) {
  const auto& labels = container.labels;
  const std::string boot_id = labelOr(labels, kLabelBootId);
  const std::string pid_namespace = labelOr(labels, kLabelPidNamespace);
  const auto pid = parseInt<std::int64_t>(labelOr(labels, kLabelPid));
  const auto start = parseInt<std::uint64_t>(labelOr(labels, kLabelPidStart));
  if (labelOr(labels, kLabelInstance) == our_instance) {
    return decideOwnInstance(boot_id, pid_namespace, pid, start, self, start_ticks_of);
  }
  if (boot_id.empty() || pid_namespace.empty() || !pid || !start) {
    return staleUnlessRunning(container, now_unix, "its owner is not recorded");
  }
  if (boot_id != self.boot_id || pid_namespace != self.pid_namespace) {
    return staleUnlessRunning(container, now_unix,
                              "its owner ran under another kernel boot or pid namespace");
  }
  const auto live_start = start_ticks_of(*pid);
  if (live_start && *live_start == *start) {
    return {false, "its owner (pid " + std::to_string(*pid) + ") is alive"};
  }
  return {true, "its owner (pid " + std::to_string(*pid) + ") has exited"};
}

std::optional<std::uint64_t> processStartTicks(std::int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string stat = buffer.str();
  // Field 2 (comm) is parenthesised and may contain spaces: start after the last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  // After comm come fields 3..; starttime is field 22, i.e. the 20th token here.
  for (int index = 3; index <= 22; ++index) {
    if (!(fields >> field)) return std::nullopt;
  }
  return parseInt<std::uint64_t>(field);
}

}  // namespace sandbox::docker
