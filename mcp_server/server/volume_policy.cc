#include "server/volume_policy.h"

#include <climits>
#include <cstdlib>
#include <filesystem>

namespace server {
namespace {

namespace fs = std::filesystem;

bool isUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

std::string describeAllowed(const std::vector<config::AllowedHostDir>& allowed) {
  std::string text;
  for (const auto& dir : allowed) {
    text += (text.empty() ? "" : ", ") + dir.path + (dir.allow_rw ? " (rw allowed)" : " (ro)");
  }
  return text;
}

// Container paths that would shadow the agent, the kernel interfaces or the whole root.
bool isReservedContainerPath(const std::string& path) {
  static const char* const kReserved[] = {"/",     "/.sandbox", "/proc",  "/sys",
                                          "/dev",  "/etc",      "/usr",   "/bin",
                                          "/sbin", "/lib",      "/lib64", "/run/mcp"};
  for (const char* reserved : kReserved) {
    if (path == reserved) return true;
    if (std::string(reserved) != "/" && isUnder(path, reserved)) return true;
  }
  return false;
}

sandbox::VolumeMount resolveOne(const std::string& host, const nlohmann::json& spec,
                                const std::vector<config::AllowedHostDir>& allowed) {
  const std::string where = "volumes[\"" + host + "\"]";
  if (!spec.is_object() || !spec.contains("bind") || !spec["bind"].is_string()) {
    throw sandbox::SandboxError(where +
                                ": expected {\"bind\": \"/container/path\", \"mode\": "
                                "\"ro\"|\"rw\"}");
  }
  const std::string mode = spec.value("mode", "ro");
  if (mode != "ro" && mode != "rw") {
    throw sandbox::SandboxError(where + ".mode: must be \"ro\" or \"rw\" (got \"" + mode + "\")");
  }
  std::string bind = fs::path(spec["bind"].get<std::string>()).lexically_normal().string();
  if (bind.size() > 1 && bind.back() == '/') bind.pop_back();
  if (bind.empty() || bind.front() != '/' || isReservedContainerPath(bind)) {
    throw sandbox::SandboxError(where + ".bind: \"" + bind +
                                "\" is not allowed; use an absolute path such as /mnt/data");
  }
  char resolved[PATH_MAX];
  if (host.empty() || host.front() != '/' || realpath(host.c_str(), resolved) == nullptr) {
    throw sandbox::SandboxError(where + ": the host path must be an absolute path that exists");
  }
  for (const auto& dir : allowed) {
    if (!isUnder(resolved, dir.path)) continue;
    if (mode == "rw" && !dir.allow_rw) {
      throw sandbox::SandboxError(where + ": mode \"rw\" is not allowed under " + dir.path +
                                  "; mount it with mode \"ro\"");
    }
    return sandbox::VolumeMount{resolved, bind, mode == "ro"};
  }
  throw sandbox::SandboxError(where + ": " + std::string(resolved) +
                              " is outside the host directories the operator allowed (" +
                              describeAllowed(allowed) + ")");
}

}  // namespace

std::vector<sandbox::VolumeMount> resolveVolumes(const nlohmann::json& volumes,
                                                 const std::vector<config::AllowedHostDir>& allowed,
                                                 const std::string& sandbox_workdir) {
  std::vector<sandbox::VolumeMount> mounts;
  if (volumes.is_null() || volumes.empty()) return mounts;
  if (allowed.empty()) {
    throw sandbox::SandboxError(
        "volumes are disabled on this server: the operator has not allowed any host directory "
        "(config volumes.allowed_host_dirs). Use upload_file to move data in instead.");
  }
  for (const auto& [host, spec] : volumes.items()) {
    auto mount = resolveOne(host, spec, allowed);
    if (mount.container_path == sandbox_workdir) {
      throw sandbox::SandboxError("volumes[\"" + host + "\"].bind: " + sandbox_workdir +
                                  " is the sandbox working directory; bind below it instead");
    }
    for (const auto& other : mounts) {
      if (other.container_path == mount.container_path) {
        throw sandbox::SandboxError("volumes: two entries bind " + mount.container_path);
      }
    }
    mounts.push_back(std::move(mount));
  }
  return mounts;
}

}  // namespace server
