#include "config/weakenings.h"

namespace config {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

std::vector<std::string> weakenings(const ServerConfig& config) {
  std::vector<std::string> out;
  const auto& sandbox = config.sandbox;
  if (sandbox.runtime == "runc") {
    out.emplace_back(
        "WEAKENED: sandbox.runtime is runc: sandboxes share the host kernel (no gVisor)");
  }
  if (sandbox.allow_runc_fallback) {
    out.emplace_back(
        "WEAKENED: sandbox.allow_runc_fallback is on: without runsc, sandboxes run under runc");
  }
  if (sandbox.user.empty()) {
    out.emplace_back(
        "WEAKENED: sandbox.user is empty: code runs as the image's user, the same uid as the agent "
        "(PID 1), so it can reach the agent's channel to the server through /proc/1/fd");
  }
  if (!sandbox.read_only_root) {
    out.emplace_back("WEAKENED: sandbox.read_only_root is off: code may write the image's files");
  }
  if (sandbox.allow_dockerfile) {
    out.emplace_back(
        "WEAKENED: sandbox.allow_dockerfile is on: models may build images (RUN steps "
        "under " +
        sandbox.build_runtime + ", network none, " + std::to_string(sandbox.build_timeout_s) +
        " s deadline)");
    if (sandbox.build_runtime.rfind("runsc", 0) != 0) {
      out.emplace_back("WEAKENED: sandbox.build_runtime is " + sandbox.build_runtime +
                       ": Dockerfile RUN steps run outside gVisor");
    }
  }
  if (sandbox.allow_custom_images && !sandbox.allowed_images.empty()) {
    out.emplace_back("WEAKENED: sandbox.allowed_images: models may run " +
                     joined(sandbox.allowed_images));
  }
  if (sandbox.allow_custom_images && !sandbox.allowed_image_label.empty()) {
    out.emplace_back("WEAKENED: sandbox.allowed_image_label: models may run any image labelled " +
                     sandbox.allowed_image_label);
  }
  for (const auto& dir : config.volumes.allowed_host_dirs) {
    out.emplace_back("WEAKENED: volumes.allowed_host_dirs: models may mount " + dir.path +
                     (dir.allow_rw ? " read-write" : " read-only"));
  }
  if (config.egress.enabled) {
    std::vector<std::string> profiles;
    for (const auto& [name, entries] : config.egress.profiles) profiles.push_back(name);
    out.emplace_back(
        "WEAKENED: egress.enabled: sessions that ask may reach " +
        std::to_string(config.egress.allow.size()) +
        " host(s) of egress.allow through their sidecar's proxy" +
        (profiles.empty() ? std::string() : ", and pick the profiles " + joined(profiles)));
  }
  if (config.mcp.allowlist.is_array() && !config.mcp.allowlist.empty()) {
    out.emplace_back("WEAKENED: mcp.allowlist: sandboxes may reach " +
                     std::to_string(config.mcp.allowlist.size()) +
                     " operator-listed MCP endpoint(s) through their sidecar, special addresses "
                     "included where listed");
  }
  if (config.preview.enabled()) {
    out.emplace_back("WEAKENED: preview.listen is " + config.preview.listen +
                     ": models may expose ports of their sandboxes (expose_port) to anyone who "
                     "reaches that address and holds a preview link (<label>." +
                     config.preview.domain + ")");
  }
  if (config.mcp.sidecar.mode == "process") {
    out.emplace_back(
        "WEAKENED: mcp.sidecar.mode is process: MCP relays run as child processes of the server, "
        "not in their own containers");
  }
  return out;
}

}  // namespace config
