// Which server owns a sandbox container, and when a container is an orphan that may be removed.
// The decision is pure (table-tested); reading /proc is separate. Thread-safe.
//
// Every container carries labels naming its owner: the server instance id, and the owning
// process as (kernel boot id, pid namespace, pid, process start time). A container is removed as
// an orphan only when we can prove its owner is gone:
//   * same instance id, created by this process  -> keep (ours)
//   * same instance id, another live process on this host -> keep (a duplicate id: warn)
//   * same instance id otherwise                 -> remove: an earlier run of this instance (a
//                                                   restarted replica reaps its own leftovers,
//                                                   also on a shared or remote engine)
//   * same boot id and pid namespace as ours     -> remove iff no process with that pid and
//                                                   start time exists (pid reuse can't fool it)
//   * another boot id / pid namespace, or no owner labels (we can't see that process)
//                                                -> remove only if it is not running and was
//                                                   created over kStaleAfterSeconds ago (a live
//                                                   server starts its containers in seconds;
//                                                   after a reboot leftovers are never running)
// So two servers with their own instance ids never remove each other's live sandboxes, whether
// they share a host or only an engine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace sandbox::docker {

inline constexpr const char* kLabelManaged = "sandbox-mcp.managed";
inline constexpr const char* kLabelInstance = "sandbox-mcp.instance";
inline constexpr const char* kLabelBootId = "sandbox-mcp.boot-id";
inline constexpr const char* kLabelPidNamespace = "sandbox-mcp.pidns";
inline constexpr const char* kLabelPid = "sandbox-mcp.pid";
inline constexpr const char* kLabelPidStart = "sandbox-mcp.pid-start";
inline constexpr std::int64_t kStaleAfterSeconds = 600;

struct ProcessIdentity {
  std::string boot_id;
  std::string pid_namespace;  // e.g. "pid:[4026531836]"
  std::int64_t pid = 0;
  std::uint64_t start_ticks = 0;  // /proc/<pid>/stat field 22

  // The identity of the calling process, read from /proc.
  [[nodiscard]] static ProcessIdentity current();
};

// The labels every container of this server carries (managed, instance, owner process).
[[nodiscard]] std::map<std::string, std::string> ownershipLabels(const std::string& instance_id,
                                                                 const ProcessIdentity& self);

struct ContainerSummary {
  std::string id;
  std::map<std::string, std::string> labels;
  std::string state;  // created | running | exited | ...
  std::int64_t created_unix = 0;
};

struct OrphanDecision {
  bool remove = false;
  std::string reason;
  bool duplicate_instance = false;  // a live process elsewhere on this host claims our id
};

// Returns the start time of a live process, or nullopt when no such pid exists.
using StartTicksLookup = std::function<std::optional<std::uint64_t>(std::int64_t pid)>;

[[nodiscard]] OrphanDecision decideOrphan(const ContainerSummary& container,
                                          const std::string& our_instance,
                                          const ProcessIdentity& self, std::int64_t now_unix,
                                          const StartTicksLookup& start_ticks_of);

// Reads /proc/<pid>/stat; nullopt when the process does not exist.
[[nodiscard]] std::optional<std::uint64_t> processStartTicks(std::int64_t pid);

}  // namespace sandbox::docker
