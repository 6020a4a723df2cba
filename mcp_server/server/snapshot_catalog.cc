#include "server/snapshot_catalog.h"

#include <algorithm>

#include "server/sessions_log.h"

namespace server {
namespace {

double nowUnix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string mib(std::uint64_t bytes) {
  return std::to_string(bytes / (std::uint64_t{1024} * 1024)) + " MiB";
}

}  // namespace

SnapshotCatalog::SnapshotCatalog(sandbox::SnapshotStore& store, SnapshotLimits limits)
    : store_(store), limits_(limits) {}

SnapshotCatalog::~SnapshotCatalog() {
  for (const auto& [owner, snapshots] : by_owner_) {
    for (const auto& snapshot : snapshots) store_.remove(snapshot.id);
  }
}

SnapshotCatalog::Usage SnapshotCatalog::usageOf(const std::string& quota_key,
                                                const std::string& owner,
                                                const std::string& except) const {
  Usage usage;
  for (const auto& [held_by, snapshots] : by_owner_) {
    for (const auto& snapshot : snapshots) {
      if (snapshot.quota_key != quota_key) continue;
      if (held_by == owner && snapshot.name == except) continue;
      ++usage.count;
      usage.bytes += snapshot.bytes;
    }
  }
  return usage;
}

std::pair<std::size_t, std::uint64_t> SnapshotCatalog::usage(const std::string& quota_key) const {
  std::lock_guard lock(mutex_);
  const Usage usage = usageOf(quota_key);
  return {usage.count, usage.bytes};
}

void SnapshotCatalog::requireRoom(const std::string& owner, const std::string& quota_key,
                                  const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = by_owner_.find(owner);
  if (it != by_owner_.end() && std::any_of(it->second.begin(), it->second.end(),
                                           [&](const auto& s) { return s.name == name; })) {
    return;  // replaces: add() checks the bytes it ends with
  }
  const Usage held = usageOf(quota_key);
  if (held.count >= limits_.max_count) {
    throw sandbox::SandboxError(
        "busy: this client holds " + std::to_string(held.count) +
        " snapshots, its limit (sessions.max_snapshots_per_client; a principal's count across "
        "all its MCP sessions). Reuse a name (the snapshot is replaced), or end the sessions you "
        "no longer need (their snapshots stay until the client disconnects).");
  }
  if (held.bytes >= limits_.max_bytes) {
    throw sandbox::SandboxError("busy: this client's snapshots hold " + mib(held.bytes) +
                                ", its limit (sessions.max_snapshot_mib_per_client). Reuse a name "
                                "to replace a snapshot.");
  }
}

NamedSnapshot SnapshotCatalog::add(const std::string& owner, NamedSnapshot snapshot) {
  snapshot.created_at_unix = nowUnix();
  if (snapshot.quota_key.empty()) snapshot.quota_key = owner;
  std::optional<std::string> replaced;
  {
    std::lock_guard lock(mutex_);
    auto& list = by_owner_[owner];
    const auto same = std::find_if(list.begin(), list.end(),
                                   [&](const auto& s) { return s.name == snapshot.name; });
    const Usage others = usageOf(snapshot.quota_key, owner, snapshot.name);
    if (same == list.end() && others.count >= limits_.max_count) {
      store_.remove(snapshot.id);
      if (list.empty()) by_owner_.erase(owner);
      throw sandbox::SandboxError("busy: this client holds " + std::to_string(others.count) +
                                  " snapshots, its limit (sessions.max_snapshots_per_client); "
                                  "this one was not kept");
    }
    if (others.bytes + snapshot.bytes > limits_.max_bytes) {
      store_.remove(snapshot.id);
      if (list.empty()) by_owner_.erase(owner);
      throw sandbox::SandboxError("busy: this snapshot (" + mib(snapshot.bytes) +
                                  ") would take this client's snapshots past " +
                                  mib(limits_.max_bytes) +
                                  " (sessions.max_snapshot_mib_per_client); it was not kept");
    }
    if (same != list.end()) {
      replaced = same->id;
      list.erase(same);
    }
    list.push_back(snapshot);
  }
  if (replaced) store_.remove(*replaced);
  return snapshot;
}

std::optional<NamedSnapshot> SnapshotCatalog::find(const std::string& owner,
                                                   const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = by_owner_.find(owner);
  if (it == by_owner_.end()) return std::nullopt;
  for (const auto& snapshot : it->second) {
    if (snapshot.name == name) return snapshot;
  }
  return std::nullopt;
}

std::vector<NamedSnapshot> SnapshotCatalog::list(const std::string& owner) const {
  std::lock_guard lock(mutex_);
  const auto it = by_owner_.find(owner);
  return it == by_owner_.end() ? std::vector<NamedSnapshot>{} : it->second;
}

std::vector<NamedSnapshot> SnapshotCatalog::ofSession(const std::string& owner,
                                                      const std::string& session_id) const {
  auto all = list(owner);
  std::erase_if(all, [&](const auto& s) { return s.session_id != session_id; });
  return all;
}

void SnapshotCatalog::removeOwner(const std::string& owner) {
  std::vector<NamedSnapshot> doomed;
  {
    std::lock_guard lock(mutex_);
    const auto it = by_owner_.find(owner);
    if (it == by_owner_.end()) return;
    doomed = std::move(it->second);
    by_owner_.erase(it);
  }
  for (const auto& snapshot : doomed) store_.remove(snapshot.id);
}

void SnapshotCatalog::remove(const std::string& owner, const std::string& name) {
  std::optional<std::string> doomed;
  {
    std::lock_guard lock(mutex_);
    const auto it = by_owner_.find(owner);
    if (it == by_owner_.end()) return;
    std::erase_if(it->second, [&](const auto& s) {
      if (s.name != name) return false;
      doomed = s.id;
      return true;
    });
    if (it->second.empty()) by_owner_.erase(it);
  }
  if (doomed) store_.remove(*doomed);
}

int SnapshotCatalog::expire() {
  const double oldest = nowUnix() - static_cast<double>(limits_.ttl.count());
  std::vector<std::string> doomed;
  {
    std::lock_guard lock(mutex_);
    for (auto& [owner, list] : by_owner_) {
      std::erase_if(list, [&](const auto& s) {
        if (s.created_at_unix >= oldest) return false;
        doomed.push_back(s.id);
        return true;
      });
    }
    std::erase_if(by_owner_, [](const auto& entry) { return entry.second.empty(); });
  }
  for (const auto& id : doomed) store_.remove(id);
  if (!doomed.empty()) {
    log()->info("removed {} snapshot(s) past sessions.snapshot_ttl_s", doomed.size());
  }
  return static_cast<int>(doomed.size());
}

void SnapshotCatalog::keepOwners(const std::function<bool(const std::string&)>& keep) {
  std::lock_guard lock(mutex_);
  std::erase_if(by_owner_, [&](const auto& entry) { return keep(entry.first); });
}

void SnapshotCatalog::adopt(const std::string& owner, NamedSnapshot snapshot) {
  if (snapshot.quota_key.empty()) snapshot.quota_key = owner;  // a returning owner is its own
  std::lock_guard lock(mutex_);
  auto& held = by_owner_[owner];
  std::erase_if(held, [&](const NamedSnapshot& s) { return s.name == snapshot.name; });
  held.push_back(std::move(snapshot));
  std::sort(held.begin(), held.end(), [](const NamedSnapshot& a, const NamedSnapshot& b) {
    return a.created_at_unix < b.created_at_unix;
  });
}

}  // namespace server
