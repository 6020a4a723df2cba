// Config sections for sessions and what they hold: tasks, sessions, the warm pool (and its Python
// preloads), volumes.
#include <cstddef>
#include <filesystem>
#include <string>

#include "config/sections.h"

namespace config {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxPreloadModules = 32;
constexpr std::size_t kMaxModuleNameChars = 200;

// A dotted Python module name of ASCII identifiers ("matplotlib.pyplot").
bool isModuleName(const std::string& name) {
  if (name.empty() || name.size() > kMaxModuleNameChars) return false;
  bool at_start = true;
  for (const char c : name) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (c == '.') {
      if (at_start) return false;
      at_start = true;
    } else if (letter || (digit && !at_start)) {
      at_start = false;
    } else {
      return false;
    }
  }
  return !at_start;
}

}  // namespace

void readTasks(ObjectReader& parent, TasksConfig& out) {
  const json* node = parent.child("tasks");
  if (!node) return;
  ObjectReader r(*node, "tasks");
  r.read("max_per_client", out.max_per_client);
  r.read("default_ttl_ms", out.default_ttl_ms);
  r.read("max_ttl_ms", out.max_ttl_ms);
  r.read("poll_interval_ms", out.poll_interval_ms);
  r.read("inline_wait_ms", out.inline_wait_ms);
  r.read("max_result_bytes_per_client", out.max_result_bytes_per_client);
  r.read("max_result_bytes", out.max_result_bytes);
  r.read("max_queued_bytes_per_client", out.max_queued_bytes_per_client);
  r.read("max_queued_bytes", out.max_queued_bytes);
  r.rejectUnknown();
  requireAtLeast(out.max_per_client, 1, "tasks.max_per_client");
  requireAtLeast(out.default_ttl_ms, 1000, "tasks.default_ttl_ms");
  requireAtLeast(out.max_ttl_ms, out.default_ttl_ms, "tasks.max_ttl_ms");
  requireAtLeast(out.poll_interval_ms, 10, "tasks.poll_interval_ms");
  requireAtLeast(out.inline_wait_ms, 0, "tasks.inline_wait_ms");
  requireAtLeast(out.max_result_bytes_per_client, std::int64_t{64} * 1024,
                 "tasks.max_result_bytes_per_client");
  requireAtLeast(out.max_result_bytes, out.max_result_bytes_per_client, "tasks.max_result_bytes");
  requireAtLeast(out.max_queued_bytes_per_client, std::int64_t{16} * 1024,
                 "tasks.max_queued_bytes_per_client");
  requireAtLeast(out.max_queued_bytes, out.max_queued_bytes_per_client, "tasks.max_queued_bytes");
}

void readSessions(ObjectReader& parent, SessionsConfig& out) {
  const json* node = parent.child("sessions");
  if (!node) return;
  ObjectReader r(*node, "sessions");
  r.read("max_sessions", out.max_sessions);
  r.read("idle_timeout_s", out.idle_timeout_s);
  r.read("max_sessions_per_client", out.max_sessions_per_client);
  r.read("pause_after_idle_s", out.pause_after_idle_s);
  r.read("freeze_after_idle_s", out.freeze_after_idle_s);
  r.read("max_frozen_mib", out.max_frozen_mib);
  r.read("max_paused_sessions", out.max_paused_sessions);
  r.read("max_paused_gib", out.max_paused_gib);
  r.read("snapshot_dir", out.snapshot_dir);
  r.read("max_snapshots_per_client", out.max_snapshots_per_client);
  r.read("max_snapshot_mib_per_client", out.max_snapshot_mib_per_client);
  r.read("snapshot_ttl_s", out.snapshot_ttl_s);
  r.read("max_forks_per_call", out.max_forks_per_call);
  r.read("persist", out.persist);
  r.rejectUnknown();
  requireAtLeast(out.pause_after_idle_s, 0, "sessions.pause_after_idle_s");
  requireAtLeast(out.freeze_after_idle_s, 0, "sessions.freeze_after_idle_s");
  requireAtLeast(out.max_frozen_mib, 0, "sessions.max_frozen_mib");
  requireAtLeast(out.max_paused_sessions, 0, "sessions.max_paused_sessions");
  requireAtLeast(out.max_paused_gib, 1, "sessions.max_paused_gib");
  requireAtLeast(out.max_snapshots_per_client, 0, "sessions.max_snapshots_per_client");
  requireAtLeast(out.max_snapshot_mib_per_client, 1, "sessions.max_snapshot_mib_per_client");
  requireAtLeast(out.snapshot_ttl_s, 1, "sessions.snapshot_ttl_s");
  requireAtLeast(out.max_forks_per_call, 1, "sessions.max_forks_per_call");
  if (out.snapshot_dir.empty() || out.snapshot_dir.front() != '/') {
    throw ConfigError("sessions.snapshot_dir must be an absolute path, got '" + out.snapshot_dir +
                      "'");
  }
  requireAtLeast(out.max_sessions, 1, "sessions.max_sessions");
  requireAtLeast(out.max_sessions_per_client, 1, "sessions.max_sessions_per_client");
  requireAtLeast(out.idle_timeout_s, 1, "sessions.idle_timeout_s");
}

void readPool(ObjectReader& parent, PoolConfig& out) {
  const json* node = parent.child("pool");
  if (!node) return;
  ObjectReader r(*node, "pool");
  r.read("size", out.size);
  r.read("preload_python", out.preload_python);
  r.rejectUnknown();
  requireAtLeast(out.size, 0, "pool.size");
  if (out.size > 64) ObjectReader::fail("pool.size", "must be <= 64");
  if (out.preload_python.size() > kMaxPreloadModules) {
    ObjectReader::fail("pool.preload_python",
                       "names at most " + std::to_string(kMaxPreloadModules) + " modules");
  }
  for (std::size_t i = 0; i < out.preload_python.size(); ++i) {
    if (!isModuleName(out.preload_python[i])) {
      ObjectReader::fail("pool.preload_python[" + std::to_string(i) + "]",
                         "must be a Python module name such as \"numpy\" or "
                         "\"matplotlib.pyplot\" (letters, digits, '_' and dots), got \"" +
                             out.preload_python[i].substr(0, 80) + "\"");
    }
  }
}

void readVolumes(ObjectReader& parent, VolumesConfig& out) {
  const json* node = parent.child("volumes");
  if (!node) return;
  ObjectReader r(*node, "volumes");
  const json* dirs = r.child("allowed_host_dirs");
  r.rejectUnknown();
  if (!dirs) return;
  if (!dirs->is_array()) ObjectReader::fail("volumes.allowed_host_dirs", "must be an array");
  for (std::size_t i = 0; i < dirs->size(); ++i) {
    const std::string path = "volumes.allowed_host_dirs[" + std::to_string(i) + "]";
    ObjectReader dir(dirs->at(i), path);
    AllowedHostDir entry;
    dir.read("path", entry.path);
    dir.read("allow_rw", entry.allow_rw);
    dir.rejectUnknown();
    if (entry.path.empty() || entry.path.front() != '/') {
      ObjectReader::fail(path + ".path", "must be an absolute host path");
    }
    entry.path = std::filesystem::path(entry.path).lexically_normal().string();
    if (entry.path.size() > 1 && entry.path.back() == '/') entry.path.pop_back();
    out.allowed_host_dirs.push_back(entry);
  }
}

}  // namespace config
