// The named snapshots of sessions (snapshot_session), by owner: what fork_session and
// restore_session start from. Their files are in the SnapshotStore; this keeps what a restore
// needs besides them (the session's options), bounds what each client holds (count and bytes, by
// quota key: a tokens-file principal is one client across all its MCP sessions, server/caller.h),
// and removes them with their owner (its connection closed), past their time to live, and with
// the server. Names are the owner's. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/snapshot_store.h"
#include "server/session.h"

namespace server {

struct NamedSnapshot {
  std::string id;         // the store's (32 hex digits)
  std::string name;       // the owner's name for it; unique per owner
  std::string quota_key;  // whose limits it counts against (Caller::quota_key)
  std::string session_id;
  SessionOptions options;  // the session's, for forks
  std::uint64_t bytes = 0;
  double created_at_unix = 0;
};

struct SnapshotLimits {
  std::size_t max_count = 8;
  std::uint64_t max_bytes = std::uint64_t{4096} * 1024 * 1024;
  std::chrono::seconds ttl{86400};
};

class SnapshotCatalog {
 public:
  SnapshotCatalog(sandbox::SnapshotStore& store, SnapshotLimits limits);
  ~SnapshotCatalog();  // removes every snapshot it holds
  SnapshotCatalog(const SnapshotCatalog&) = delete;
  SnapshotCatalog& operator=(const SnapshotCatalog&) = delete;

  // Throws a "busy:" SandboxError when `quota_key` already holds max_count snapshots (or its
  // bytes reach max_bytes) and `owner` has none named `name` (which a new one would replace):
  // checked before a checkpoint is taken.
  void requireRoom(const std::string& owner, const std::string& quota_key,
                   const std::string& name) const;
  // Records a sealed snapshot (its quota_key set; empty counts as the owner's). A snapshot of the
  // owner's of the same name is replaced (its files removed). Throws a "busy:" SandboxError, and
  // removes the new snapshot's files, when it would take its quota key past max_count or
  // max_bytes (calls at once may all have passed requireRoom).
  NamedSnapshot add(const std::string& owner, NamedSnapshot snapshot);
  // What `quota_key` holds: {count, bytes}.
  [[nodiscard]] std::pair<std::size_t, std::uint64_t> usage(const std::string& quota_key) const;
  // By name; nullopt when the owner has none of that name.
  [[nodiscard]] std::optional<NamedSnapshot> find(const std::string& owner,
                                                  const std::string& name) const;
  [[nodiscard]] std::vector<NamedSnapshot> list(const std::string& owner) const;
  // Of one session only, oldest first.
  [[nodiscard]] std::vector<NamedSnapshot> ofSession(const std::string& owner,
                                                     const std::string& session_id) const;
  void removeOwner(const std::string& owner);
  // Forgets (never removes) the snapshots of owners for which `keep` holds: they outlive this
  // catalog for a server started again (sessions.persist).
  void keepOwners(const std::function<bool(const std::string&)>& keep);
  // A snapshot an earlier run of this server kept (keepOwners), as it was: no quota check.
  void adopt(const std::string& owner, NamedSnapshot snapshot);
  // The owner's snapshot `name`, if any.
  void remove(const std::string& owner, const std::string& name);
  // Removes snapshots older than the time to live; returns how many.
  int expire();

 private:
  struct Usage {
    std::size_t count = 0;
    std::uint64_t bytes = 0;
  };
  // mutex_ held: what `quota_key` holds, but for the owner's snapshot `except` (one it replaces).
  [[nodiscard]] Usage usageOf(const std::string& quota_key, const std::string& owner = {},
                              const std::string& except = {}) const;

  sandbox::SnapshotStore& store_;
  const SnapshotLimits limits_;
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<NamedSnapshot>> by_owner_;  // oldest first
};

}  // namespace server
