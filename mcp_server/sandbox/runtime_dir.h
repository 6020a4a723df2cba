// The server's private run-time directory: <root>/<instance id>/, mode 0700, holding one
// directory per session that has an MCP sidecar (its socket, policy and audit log) and the Python
// helper that sandboxes import. Removed when the server stops; directories of servers that died
// without cleaning up are removed at the next start, by the same ownership rule as containers
// (sandbox/docker/ownership.h). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

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
  // Creates <root>/<instance_id> and records its owner (the ownership labels) in owner.json.
  // `root` is created 0700 if missing, and refused when it is a symlink, not owned by this
  // process's uid, or writable by group or others (someone could have pre-created it in /tmp).
  // Throws SandboxError naming the directory and what to do.
  RuntimeDir(const std::string& root, const std::string& instance_id,
             const std::map<std::string, std::string>& owner_labels);
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
  static int removeStale(const std::string& root, const std::string& our_instance,
                         const docker::ProcessIdentity& self);

 private:
  std::string path_;
};

}  // namespace sandbox
