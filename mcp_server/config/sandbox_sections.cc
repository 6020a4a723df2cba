// Config sections for the sandboxes and what runs in them: docker, sandbox (image, runtime,
// limits, Dockerfile builds), execution, images, resources.
#include <stdexcept>
#include <string>

#include "common/engine_host.h"
#include "common/rich_output.h"
#include "config/sections.h"

namespace config {

using nlohmann::json;

namespace {

void readDockerTls(ObjectReader& parent, DockerTlsConfig& out) {
  const json* node = parent.child("tls");
  if (!node) return;
  ObjectReader r(*node, "docker.tls");
  r.read("ca_file", out.ca_file);
  r.read("cert_file", out.cert_file);
  r.read("key_file", out.key_file);
  r.rejectUnknown();
}

// docker.host wins; the older docker.socket_path may say the same unix:// path, nothing else.
void resolveDockerHost(const json& node, const std::string& socket_path, DockerConfig& out) {
  if (!node.contains("socket_path")) return;
  if (socket_path.empty() || socket_path.front() != '/') {
    ObjectReader::fail("docker.socket_path", "must be an absolute path");
  }
  if (!node.contains("host")) {
    out.host = "unix://" + socket_path;
  } else if (out.host != "unix://" + socket_path) {
    ObjectReader::fail("docker.socket_path",
                       "(\"" + socket_path + "\") disagrees with docker.host (\"" + out.host +
                           "\"); set only docker.host (socket_path is its older spelling)");
  }
}

void requireTlsFile(const std::string& value, const char* key, const std::string& host) {
  const std::string field = std::string("docker.tls.") + key;
  if (value.empty()) {
    ObjectReader::fail(field, "must be set for docker.host " + host +
                                  ": an engine reached over TCP needs TLS with a client "
                                  "certificate (set docker.tls.ca_file, cert_file and key_file; "
                                  "an Engine API without them is root on its host for anyone "
                                  "who reaches the port)");
  }
  if (value.front() != '/') ObjectReader::fail(field, "must be an absolute path");
}

}  // namespace

void readDocker(ObjectReader& parent, DockerConfig& out) {
  const json* node = parent.child("docker");
  if (!node) return;
  ObjectReader r(*node, "docker");
  std::string socket_path;
  r.read("host", out.host);
  r.read("socket_path", socket_path);
  readDockerTls(r, out.tls);
  r.read("api_version", out.api_version);
  r.read("request_timeout_ms", out.request_timeout_ms);
  r.rejectUnknown();
  requireAtLeast(out.request_timeout_ms, 100, "docker.request_timeout_ms");
  resolveDockerHost(*node, socket_path, out);
  common::EngineHost host;
  try {
    host = common::parseEngineHost(out.host);
  } catch (const std::invalid_argument& e) {
    ObjectReader::fail("docker.host", e.what());
  }
  out.host = host.uri();
  if (!host.isTcp()) {
    if (!out.tls.empty()) {
      ObjectReader::fail("docker.tls", "applies only to tcp:// engines, and docker.host is " +
                                           out.host + "; remove docker.tls");
    }
    return;
  }
  requireTlsFile(out.tls.ca_file, "ca_file", out.host);
  requireTlsFile(out.tls.cert_file, "cert_file", out.host);
  requireTlsFile(out.tls.key_file, "key_file", out.host);
}

void readSandbox(ObjectReader& parent, SandboxConfig& out) {
  const json* node = parent.child("sandbox");
  if (!node) return;
  ObjectReader r(*node, "sandbox");
  r.read("image", out.image);
  r.read("runtime", out.runtime);
  r.read("platform", out.platform);
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
  r.read("agent_channel", out.agent_channel);
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
  if (out.agent_channel != "socket" && out.agent_channel != "attach") {
    ObjectReader::fail("sandbox.agent_channel", "must be \"socket\" or \"attach\"");
  }
  if (out.runtime != "runsc" && out.runtime != "runc") {
    ObjectReader::fail("sandbox.runtime", "must be \"runsc\" or \"runc\"");
  }
  if (!out.platform.empty() && out.platform != "systrap" && out.platform != "ptrace" &&
      out.platform != "kvm") {
    ObjectReader::fail("sandbox.platform",
                       "must be \"systrap\", \"ptrace\" or \"kvm\" (or left out: the engine's "
                       "runsc as scripts/setup.sh registered it)");
  }
  if (!out.platform.empty() && out.runtime != "runsc") {
    ObjectReader::fail("sandbox.platform", "is gVisor's platform: it needs sandbox.runtime runsc");
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

}  // namespace config
