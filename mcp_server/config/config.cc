#include "config/config.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "common/json_limits.h"
#include "common/rich_output.h"
#include "policy/policy.h"

namespace config {
namespace {

using nlohmann::json;

// Reads fields of one JSON object, rejecting unknown keys so typos do not pass silently.
class ObjectReader {
 public:
  ObjectReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {
    if (!object_.is_object()) fail(path_.empty() ? "the document" : path_, "must be an object");
  }

  template <typename T>
  void read(const char* key, T& out) {
    seen_.insert(key);
    const auto it = object_.find(key);
    if (it == object_.end()) return;
    try {
      out = it->template get<T>();
    } catch (const json::exception&) {
      fail(field(key), "has the wrong type (got " + it->dump() + ")");
    }
  }

  const json* child(const char* key) {
    seen_.insert(key);
    const auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  void rejectUnknown() const {
    for (const auto& [key, value] : object_.items()) {
      if (!seen_.count(key)) fail(field(key.c_str()), "is not a known setting");
    }
  }

  [[nodiscard]] std::string field(const char* key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    throw ConfigError("config: " + path + " " + what);
  }

 private:
  const json& object_;
  std::string path_;
  std::set<std::string> seen_;
};

void requireAtLeast(std::int64_t value, std::int64_t minimum, const std::string& path) {
  if (value < minimum) ObjectReader::fail(path, "must be >= " + std::to_string(minimum));
}

void readDocker(ObjectReader& parent, DockerConfig& out) {
  const json* node = parent.child("docker");
  if (!node) return;
  ObjectReader r(*node, "docker");
  r.read("socket_path", out.socket_path);
  r.read("api_version", out.api_version);
  r.read("request_timeout_ms", out.request_timeout_ms);
  r.rejectUnknown();
  requireAtLeast(out.request_timeout_ms, 100, "docker.request_timeout_ms");
}

void readSandbox(ObjectReader& parent, SandboxConfig& out) {
  const json* node = parent.child("sandbox");
  if (!node) return;
  ObjectReader r(*node, "sandbox");
  r.read("image", out.image);
  r.read("runtime", out.runtime);
  if (node->contains("strict_gvisor")) {
    ObjectReader::fail("sandbox.strict_gvisor",
                       "was replaced: refusing runc is now the default; set "
                       "sandbox.allow_runc_fallback to true to fall back to runc instead");
  }
  r.read("memory_mib", out.memory_mib);
  r.read("cpus", out.cpus);
  r.read("pids_limit", out.pids_limit);
  r.read("tmp_size_mib", out.tmp_size_mib);
  r.read("workdir_size_mib", out.workdir_size_mib);
  r.read("workdir", out.workdir);
  r.read("user", out.user);
  r.read("read_only_root", out.read_only_root);
  r.read("agent_path", out.agent_path);
  r.read("allow_custom_images", out.allow_custom_images);
  r.read("allow_dockerfile", out.allow_dockerfile);
  r.read("allow_runc_fallback", out.allow_runc_fallback);
  r.read("allowed_images", out.allowed_images);
  r.read("allowed_image_label", out.allowed_image_label);
  r.read("build_runtime", out.build_runtime);
  r.read("build_timeout_s", out.build_timeout_s);
  r.read("build_max_steps", out.build_max_steps);
  r.read("built_images_max", out.built_images_max);
  r.read("built_image_max_idle_s", out.built_image_max_idle_s);
  r.read("build_max_size_mib", out.build_max_size_mib);
  r.rejectUnknown();
  for (std::size_t i = 0; i < out.allowed_images.size(); ++i) {
    const auto& entry = out.allowed_images[i];
    const auto star = entry.find('*');
    if (entry.empty() || (star != std::string::npos &&
                          (star != entry.size() - 1 || star < 2 || entry[star - 1] != ':'))) {
      ObjectReader::fail("sandbox.allowed_images[" + std::to_string(i) + "]",
                         "must be an image reference (\"repo:tag\") or \"repo:*\"");
    }
  }
  if (!out.allowed_image_label.empty() && out.allowed_image_label.find('=') == std::string::npos) {
    ObjectReader::fail("sandbox.allowed_image_label", "must be \"key=value\"");
  }
  if (out.build_runtime.empty()) ObjectReader::fail("sandbox.build_runtime", "must not be empty");
  requireAtLeast(out.build_timeout_s, 1, "sandbox.build_timeout_s");
  requireAtLeast(out.build_max_steps, 1, "sandbox.build_max_steps");
  requireAtLeast(out.built_images_max, 1, "sandbox.built_images_max");
  requireAtLeast(out.built_image_max_idle_s, 60, "sandbox.built_image_max_idle_s");
  requireAtLeast(out.build_max_size_mib, 1, "sandbox.build_max_size_mib");
  if (out.runtime != "runsc" && out.runtime != "runc") {
    ObjectReader::fail("sandbox.runtime", "must be \"runsc\" or \"runc\"");
  }
  requireAtLeast(out.memory_mib, 16, "sandbox.memory_mib");
  if (out.cpus <= 0.0) ObjectReader::fail("sandbox.cpus", "must be > 0");
  requireAtLeast(out.pids_limit, 32, "sandbox.pids_limit");
  requireAtLeast(out.tmp_size_mib, 1, "sandbox.tmp_size_mib");
  requireAtLeast(out.workdir_size_mib, 1, "sandbox.workdir_size_mib");
  if (out.workdir.empty() || out.workdir.front() != '/') {
    ObjectReader::fail("sandbox.workdir", "must be an absolute path");
  }
  if (out.image.empty()) ObjectReader::fail("sandbox.image", "must not be empty");
}

void readExecution(ObjectReader& parent, ExecutionConfig& out) {
  const json* node = parent.child("execution");
  if (!node) return;
  ObjectReader r(*node, "execution");
  r.read("default_timeout_s", out.default_timeout_s);
  r.read("max_timeout_s", out.max_timeout_s);
  r.read("max_output_bytes", out.max_output_bytes);
  r.read("max_file_bytes", out.max_file_bytes);
  r.read("max_concurrent", out.max_concurrent);
  r.read("max_concurrent_per_client", out.max_concurrent_per_client);
  r.read("max_saved_output_bytes", out.max_saved_output_bytes);
  r.rejectUnknown();
  requireAtLeast(out.max_saved_output_bytes, 0, "execution.max_saved_output_bytes");
  if (out.max_saved_output_bytes > 256LL * 1024 * 1024) {
    ObjectReader::fail("execution.max_saved_output_bytes", "must be <= 268435456 (256 MiB)");
  }
  requireAtLeast(out.max_concurrent, 1, "execution.max_concurrent");
  requireAtLeast(out.max_concurrent_per_client, 1, "execution.max_concurrent_per_client");
  requireAtLeast(out.default_timeout_s, 1, "execution.default_timeout_s");
  requireAtLeast(out.max_timeout_s, out.default_timeout_s, "execution.max_timeout_s");
  requireAtLeast(out.max_output_bytes, 1024, "execution.max_output_bytes");
  requireAtLeast(out.max_file_bytes, 1024, "execution.max_file_bytes");
  if (out.max_file_bytes > 48LL * 1024 * 1024) {
    ObjectReader::fail("execution.max_file_bytes", "must be <= 50331648 (48 MiB)");
  }
}

void readImages(ObjectReader& parent, ImagesConfig& out) {
  const json* node = parent.child("images");
  if (!node) return;
  ObjectReader r(*node, "images");
  r.read("max_per_call", out.max_per_call);
  r.read("max_px", out.max_px);
  r.read("max_bytes", out.max_bytes);
  r.rejectUnknown();
  requireAtLeast(out.max_per_call, 0, "images.max_per_call");
  if (out.max_per_call > static_cast<std::int64_t>(common::kMaxImagesLimit)) {
    ObjectReader::fail("images.max_per_call",
                       "must be <= " + std::to_string(common::kMaxImagesLimit));
  }
  requireAtLeast(out.max_px, common::kMinImagePx, "images.max_px");
  if (out.max_px > common::kMaxImagePx) {
    ObjectReader::fail("images.max_px", "must be <= " + std::to_string(common::kMaxImagePx));
  }
  requireAtLeast(out.max_bytes, 1024, "images.max_bytes");
  if (out.max_bytes > static_cast<std::int64_t>(common::kMaxImageBytesLimit)) {
    ObjectReader::fail("images.max_bytes",
                       "must be <= " + std::to_string(common::kMaxImageBytesLimit) + " (4 MiB)");
  }
}

void readResources(ObjectReader& parent, ResourcesConfig& out) {
  const json* node = parent.child("resources");
  if (!node) return;
  ObjectReader r(*node, "resources");
  r.read("max_read_bytes", out.max_read_bytes);
  r.rejectUnknown();
  requireAtLeast(out.max_read_bytes, 1024, "resources.max_read_bytes");
  if (out.max_read_bytes > 16LL * 1024 * 1024) {
    ObjectReader::fail("resources.max_read_bytes", "must be <= 16777216 (16 MiB)");
  }
}

void readTasks(ObjectReader& parent, TasksConfig& out) {
  const json* node = parent.child("tasks");
  if (!node) return;
  ObjectReader r(*node, "tasks");
  r.read("max_per_client", out.max_per_client);
  r.read("default_ttl_ms", out.default_ttl_ms);
  r.read("max_ttl_ms", out.max_ttl_ms);
  r.read("poll_interval_ms", out.poll_interval_ms);
  r.rejectUnknown();
  requireAtLeast(out.max_per_client, 1, "tasks.max_per_client");
  requireAtLeast(out.default_ttl_ms, 1000, "tasks.default_ttl_ms");
  requireAtLeast(out.max_ttl_ms, out.default_ttl_ms, "tasks.max_ttl_ms");
  requireAtLeast(out.poll_interval_ms, 10, "tasks.poll_interval_ms");
}

void readSessions(ObjectReader& parent, SessionsConfig& out) {
  const json* node = parent.child("sessions");
  if (!node) return;
  ObjectReader r(*node, "sessions");
  r.read("max_sessions", out.max_sessions);
  r.read("idle_timeout_s", out.idle_timeout_s);
  r.read("max_sessions_per_client", out.max_sessions_per_client);
  r.rejectUnknown();
  requireAtLeast(out.max_sessions, 1, "sessions.max_sessions");
  requireAtLeast(out.max_sessions_per_client, 1, "sessions.max_sessions_per_client");
  requireAtLeast(out.idle_timeout_s, 1, "sessions.idle_timeout_s");
}

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

void readHttp(ObjectReader& parent, HttpConfig& out) {
  const json* node = parent.child("http");
  if (!node) return;
  ObjectReader r(*node, "http");
  r.read("path", out.path);
  r.read("max_body_bytes", out.max_body_bytes);
  r.read("allowed_origins", out.allowed_origins);
  r.read("session_idle_timeout_s", out.session_idle_timeout_s);
  r.read("max_sessions", out.max_sessions);
  r.read("max_connections", out.max_connections);
  r.read("max_connections_per_address", out.max_connections_per_address);
  r.read("header_timeout_ms", out.header_timeout_ms);
  r.read("idle_timeout_ms", out.idle_timeout_ms);
  r.read("max_body_bytes_in_flight", out.max_body_bytes_in_flight);
  r.rejectUnknown();
  if (out.path.empty() || out.path.front() != '/') {
    ObjectReader::fail("http.path", "must start with /");
  }
  requireAtLeast(out.max_body_bytes, 1024, "http.max_body_bytes");
  requireAtLeast(out.session_idle_timeout_s, 1, "http.session_idle_timeout_s");
  requireAtLeast(out.max_sessions, 1, "http.max_sessions");
  requireAtLeast(out.max_connections, 1, "http.max_connections");
  requireAtLeast(out.max_connections_per_address, 1, "http.max_connections_per_address");
  requireAtLeast(out.header_timeout_ms, 100, "http.header_timeout_ms");
  requireAtLeast(out.idle_timeout_ms, 100, "http.idle_timeout_ms");
  requireAtLeast(out.max_body_bytes_in_flight, out.max_body_bytes, "http.max_body_bytes_in_flight");
}

void readStdio(ObjectReader& parent, StdioConfig& out) {
  const json* node = parent.child("stdio");
  if (!node) return;
  ObjectReader r(*node, "stdio");
  r.read("max_message_bytes", out.max_message_bytes);
  r.rejectUnknown();
  requireAtLeast(out.max_message_bytes, 1024, "stdio.max_message_bytes");
}

void readSidecar(ObjectReader& parent, SidecarConfig& out) {
  const json* node = parent.child("sidecar");
  if (!node) return;
  ObjectReader r(*node, "mcp.sidecar");
  r.read("mode", out.mode);
  r.read("image", out.image);
  r.read("network", out.network);
  r.read("user", out.user);
  r.read("binary_path", out.binary_path);
  r.read("memory_mib", out.memory_mib);
  r.read("pids_limit", out.pids_limit);
  r.read("start_timeout_ms", out.start_timeout_ms);
  r.read("upstream_connect_timeout_ms", out.upstream_connect_timeout_ms);
  r.read("upstream_idle_timeout_ms", out.upstream_idle_timeout_ms);
  r.read("max_concurrent_requests", out.max_concurrent_requests);
  r.read("max_body_bytes", out.max_body_bytes);
  r.read("audit_log_max_bytes", out.audit_log_max_bytes);
  r.rejectUnknown();
  requireAtLeast(out.audit_log_max_bytes, 4096, "mcp.sidecar.audit_log_max_bytes");
  if (out.mode != "container" && out.mode != "process") {
    ObjectReader::fail("mcp.sidecar.mode", "must be \"container\" or \"process\"");
  }
  if (out.image.empty()) ObjectReader::fail("mcp.sidecar.image", "must not be empty");
  if (out.network.empty() || out.network == "none") {
    ObjectReader::fail("mcp.sidecar.network",
                       "must name a network the relay can reach its upstreams on (default host)");
  }
  requireAtLeast(out.memory_mib, 16, "mcp.sidecar.memory_mib");
  requireAtLeast(out.pids_limit, 16, "mcp.sidecar.pids_limit");
  requireAtLeast(out.start_timeout_ms, 100, "mcp.sidecar.start_timeout_ms");
  requireAtLeast(out.upstream_connect_timeout_ms, 1, "mcp.sidecar.upstream_connect_timeout_ms");
  requireAtLeast(out.upstream_idle_timeout_ms, 1, "mcp.sidecar.upstream_idle_timeout_ms");
  requireAtLeast(out.max_concurrent_requests, 1, "mcp.sidecar.max_concurrent_requests");
  requireAtLeast(out.max_body_bytes, 1024, "mcp.sidecar.max_body_bytes");
}

void readMcp(ObjectReader& parent, McpConfig& out) {
  const json* node = parent.child("mcp");
  if (!node) return;
  ObjectReader r(*node, "mcp");
  if (const json* allowlist = r.child("allowlist")) {
    try {
      // Cloud metadata stays unreachable even when the operator names it.
      const auto operator_policy = policy::loadPolicy(*allowlist);
      for (const auto& rule : operator_policy->rules) {
        const auto forbidden = policy::decideForbiddenUrl(rule.base, {});
        if (!forbidden.allowed()) throw policy::PolicyError(rule.id + ": " + forbidden.reason);
      }
    } catch (const policy::PolicyError& e) {
      ObjectReader::fail("mcp.allowlist", std::string("is not a valid allowlist: ") + e.what());
    }
    out.allowlist = *allowlist;
  }
  r.read("runtime_dir", out.runtime_dir);
  r.read("audit_log", out.audit_log);
  readSidecar(r, out.sidecar);
  r.read("audit_log_max_bytes", out.audit_log_max_bytes);
  r.rejectUnknown();
  requireAtLeast(out.audit_log_max_bytes, 4096, "mcp.audit_log_max_bytes");
  if (!out.runtime_dir.empty() && out.runtime_dir.front() != '/') {
    ObjectReader::fail("mcp.runtime_dir", "must be an absolute path");
  }
  if (!out.audit_log.empty() && out.audit_log.front() != '/') {
    ObjectReader::fail("mcp.audit_log", "must be an absolute path");
  }
}

}  // namespace

ServerConfig fromJson(const json& document) {
  ServerConfig config;
  ObjectReader root(document, "");
  readDocker(root, config.docker);
  readSandbox(root, config.sandbox);
  readExecution(root, config.execution);
  readResources(root, config.resources);
  readImages(root, config.images);
  readTasks(root, config.tasks);
  readSessions(root, config.sessions);
  readPool(root, config.pool);
  readVolumes(root, config.volumes);
  readHttp(root, config.http);
  readStdio(root, config.stdio);
  readMcp(root, config.mcp);
  root.read("log_level", config.log_level);
  root.rejectUnknown();
  static const std::set<std::string> kLevels{"trace", "debug", "info", "warn", "error", "off"};
  if (!kLevels.count(config.log_level)) {
    ObjectReader::fail("log_level", "must be one of trace, debug, info, warn, error, off");
  }
  return config;
}

ServerConfig loadFile(const std::string& path) {
  // A configuration is a few kilobytes; the bound keeps a wrong --config path (a log, a device)
  // from being read whole.
  constexpr std::size_t kMaxConfigBytes = std::size_t{1} * 1024 * 1024;
  std::ifstream in(path);
  if (!in) throw ConfigError("config: cannot open " + path + " (check the --config path)");
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes) {
    throw ConfigError("config: " + path + " is larger than " + std::to_string(kMaxConfigBytes) +
                      " bytes; is it the right file?");
  }
  json document;
  try {
    common::requireJsonDepth(text);
    document = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for "1e400"
    throw ConfigError("config: " + path + " is not valid JSON: " + e.what());
  }
  return fromJson(document);
}

json toJson(const ServerConfig& c) {
  json dirs = json::array();
  for (const auto& d : c.volumes.allowed_host_dirs) {
    dirs.push_back({{"path", d.path}, {"allow_rw", d.allow_rw}});
  }
  json document = json{
      {"docker",
       {{"socket_path", c.docker.socket_path},
        {"api_version", c.docker.api_version},
        {"request_timeout_ms", c.docker.request_timeout_ms}}},
      {"sandbox",
       {{"image", c.sandbox.image},
        {"runtime", c.sandbox.runtime},
        {"memory_mib", c.sandbox.memory_mib},
        {"cpus", c.sandbox.cpus},
        {"pids_limit", c.sandbox.pids_limit},
        {"tmp_size_mib", c.sandbox.tmp_size_mib},
        {"workdir_size_mib", c.sandbox.workdir_size_mib},
        {"workdir", c.sandbox.workdir},
        {"user", c.sandbox.user},
        {"read_only_root", c.sandbox.read_only_root},
        {"agent_path", c.sandbox.agent_path},
        {"allow_custom_images", c.sandbox.allow_custom_images},
        {"allow_dockerfile", c.sandbox.allow_dockerfile},
        {"allow_runc_fallback", c.sandbox.allow_runc_fallback},
        {"allowed_images", c.sandbox.allowed_images},
        {"allowed_image_label", c.sandbox.allowed_image_label},
        {"build_runtime", c.sandbox.build_runtime},
        {"build_timeout_s", c.sandbox.build_timeout_s},
        {"build_max_steps", c.sandbox.build_max_steps},
        {"built_images_max", c.sandbox.built_images_max},
        {"built_image_max_idle_s", c.sandbox.built_image_max_idle_s},
        {"build_max_size_mib", c.sandbox.build_max_size_mib}}},
      {"execution",
       {{"default_timeout_s", c.execution.default_timeout_s},
        {"max_timeout_s", c.execution.max_timeout_s},
        {"max_output_bytes", c.execution.max_output_bytes},
        {"max_file_bytes", c.execution.max_file_bytes},
        {"max_concurrent", c.execution.max_concurrent},
        {"max_saved_output_bytes", c.execution.max_saved_output_bytes}}},
      {"resources", {{"max_read_bytes", c.resources.max_read_bytes}}},
      {"images",
       {{"max_per_call", c.images.max_per_call},
        {"max_px", c.images.max_px},
        {"max_bytes", c.images.max_bytes}}},
      {"sessions",
       {{"max_sessions", c.sessions.max_sessions}, {"idle_timeout_s", c.sessions.idle_timeout_s}}},
      {"pool", {{"size", c.pool.size}, {"preload_python", c.pool.preload_python}}},
      {"volumes", {{"allowed_host_dirs", dirs}}},
      {"http",
       {{"path", c.http.path},
        {"max_body_bytes", c.http.max_body_bytes},
        {"allowed_origins", c.http.allowed_origins},
        {"session_idle_timeout_s", c.http.session_idle_timeout_s},
        {"max_connections", c.http.max_connections},
        {"max_connections_per_address", c.http.max_connections_per_address},
        {"max_sessions", c.http.max_sessions},
        {"max_body_bytes_in_flight", c.http.max_body_bytes_in_flight},
        {"header_timeout_ms", c.http.header_timeout_ms},
        {"idle_timeout_ms", c.http.idle_timeout_ms}}},
      {"stdio", {{"max_message_bytes", c.stdio.max_message_bytes}}},
      {"mcp",
       {{"allowlist", c.mcp.allowlist},
        {"runtime_dir", c.mcp.runtime_dir},
        {"audit_log", c.mcp.audit_log},
        {"sidecar",
         {{"mode", c.mcp.sidecar.mode},
          {"image", c.mcp.sidecar.image},
          {"network", c.mcp.sidecar.network},
          {"user", c.mcp.sidecar.user},
          {"binary_path", c.mcp.sidecar.binary_path},
          {"memory_mib", c.mcp.sidecar.memory_mib},
          {"pids_limit", c.mcp.sidecar.pids_limit},
          {"start_timeout_ms", c.mcp.sidecar.start_timeout_ms},
          {"upstream_connect_timeout_ms", c.mcp.sidecar.upstream_connect_timeout_ms},
          {"upstream_idle_timeout_ms", c.mcp.sidecar.upstream_idle_timeout_ms},
          {"max_concurrent_requests", c.mcp.sidecar.max_concurrent_requests},
          {"max_body_bytes", c.mcp.sidecar.max_body_bytes}}}}},
      {"log_level", c.log_level}};
  // Fair-share quotas and audit caps (issue 9).
  document["execution"]["max_concurrent_per_client"] = c.execution.max_concurrent_per_client;
  document["sessions"]["max_sessions_per_client"] = c.sessions.max_sessions_per_client;
  document["mcp"]["audit_log_max_bytes"] = c.mcp.audit_log_max_bytes;
  document["tasks"] = {{"max_per_client", c.tasks.max_per_client},
                       {"default_ttl_ms", c.tasks.default_ttl_ms},
                       {"max_ttl_ms", c.tasks.max_ttl_ms},
                       {"poll_interval_ms", c.tasks.poll_interval_ms}};
  document["mcp"]["sidecar"]["audit_log_max_bytes"] = c.mcp.sidecar.audit_log_max_bytes;
  return document;
}

}  // namespace config
