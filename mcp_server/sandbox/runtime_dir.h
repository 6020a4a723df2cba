// The server's private run-time directory: <root>/<instance id>/, mode 0700, holding one
// directory per session that has an MCP sidecar (its socket, policy and audit log) and the Python
// helper that sandboxes import. Removed when the server stops; directories of servers that died
// without cleaning up are removed at the next start, by the same ownership rule as containers
// (sandbox/docker/ownership.h). Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "sandbox/docker/ownership.h"

namespace sandbox {

// /run/sandbox-mcp as root, else $XDG_RUNTIME_DIR/sandbox-mcp, else /tmp/sandbox-mcp-<uid>.
[[nodiscard]] std::string defaultRuntimeRoot();

// A directory removed with everything in it when this object goes away.
class ScopedDirectory {
 public:
  explicit ScopedDirectory(std::string path) : path_(std::move(path)) {}
  ~ScopedDirectory();
  ScopedDirectory(const ScopedDirectory&) = delete;
  ScopedDirectory& operator=(const ScopedDirectory&) = delete;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

class RuntimeDir {
 public:
  static constexpr std::chrono::milliseconds kHeartbeat{60'000};

  // Takes the instance id: an exclusive flock(2) on <root>/<instance_id>.lock for this object's
  // life, so a second live server with this id on this host is refused whatever pid namespace
  // (container) it runs in. Then creates <root>/<instance_id> afresh (what an earlier run of the
  // id left goes) and records its owner (the ownership labels) in owner.json.
  // `root` is created 0700 if missing, and refused when it is a symlink, not owned by this
  // process's uid, or writable by group or others (someone could have pre-created it in /tmp).
  // Throws SandboxError naming the directory and what to do.
  // A thread touches owner.json every `heartbeat` (see removeStale).
  RuntimeDir(const std::string& root, const std::string& instance_id,
             const std::map<std::string, std::string>& owner_labels,
             std::chrono::milliseconds heartbeat = kHeartbeat);
  ~RuntimeDir();
  RuntimeDir(const RuntimeDir&) = delete;
  RuntimeDir& operator=(const RuntimeDir&) = delete;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  // A fresh directory for one session (a random name: session ids are caller-chosen and may be
  // reused). `owner` "uid:gid" gets it when the server runs as root; otherwise it is made
  // writable for the relay (the 0700 instance directory above keeps other users out).
  [[nodiscard]] std::unique_ptr<ScopedDirectory> createSessionDir(const std::string& owner);

  // Writes `content` to <path>/python/<file_name> (0644) and returns the directory.
  std::string writePythonModule(const std::string& file_name, const std::string& content);

  // Removes instance directories under `root` whose owning server is gone; returns how many.
  // An owner this process cannot see (another pid namespace: a replica in another container on
  // this host) counts as gone only when its owner.json has not been touched for
  // docker::kStaleAfterSeconds: every RuntimeDir touches its own each kHeartbeat.
  static int removeStale(const std::string& root, const std::string& our_instance,
                         const docker::ProcessIdentity& self);

 private:
  void heartbeatLoop();

  std::string path_;
  std::string lock_path_;
  common::UniqueFd lock_;  // flock(2) on <root>/<instance_id>.lock, held for this object's life
  std::chrono::milliseconds heartbeat_interval_;
  std::mutex heartbeat_mutex_;
  std::condition_variable heartbeat_wake_;
  bool stopping_ = false;
  std::thread heartbeat_;  // last: started once the members above exist
};

}  // namespace sandbox
