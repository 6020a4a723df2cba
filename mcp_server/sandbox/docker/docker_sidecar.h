// SidecarLauncher that runs each session's sandbox-sidecar in its own runc container
// (mcp.sidecar.mode "container", the default): read-only root, every capability dropped,
// no-new-privileges, an unprivileged user, small memory and pids limits, on the configured
// network ("host" by default, so loopback upstreams are reachable). The session directory is
// mounted at /session and the server's own sandbox-sidecar binary over the image's, so the relay
// always matches the server. The server holds the container's stdin through an attach
// connection; the relay runs with --exit-on-stdin-eof and the engine removes the container when
// it exits, so a server that dies leaves no relay behind.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "sandbox/docker/engine_client.h"
#include "sandbox/sidecar.h"

namespace sandbox::docker {

inline constexpr const char* kSidecarSessionMount = "/session";
inline constexpr const char* kSidecarBinaryPath = "/usr/local/bin/sandbox-sidecar";

struct DockerSidecarOptions {
  std::string image = "sandbox-mcp/sidecar:latest";
  std::string network = "host";
  std::string user = "65534:65534";
  std::string binary_path;  // host path of sandbox-sidecar, mounted read-only
  std::int64_t memory_mib = 64;
  std::int64_t pids_limit = 64;
  std::int64_t start_timeout_ms = 10000;
  std::map<std::string, std::string> labels;  // ownership labels (see ownership.h)
};

class DockerSidecarLauncher final : public SidecarLauncher {
 public:
  DockerSidecarLauncher(std::shared_ptr<EngineClient> engine, DockerSidecarOptions options);

  std::unique_ptr<Sidecar> launch(const SidecarSpec& spec) override;
  [[nodiscard]] std::string mode() const override { return "container"; }

 private:
  std::shared_ptr<EngineClient> engine_;
  DockerSidecarOptions options_;
};

// The POST /containers/create body for a session's relay. Pure.
[[nodiscard]] nlohmann::json sidecarContainerBody(const SidecarSpec& spec,
                                                  const DockerSidecarOptions& options);

}  // namespace sandbox::docker
