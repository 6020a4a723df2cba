// sandbox::Backend on the Docker Engine API: each sandbox is a container running the static
// sandbox-agent as PID 1 (bind-mounted read-only), normally under gVisor (runsc).
// Thread-safe: create() and the other calls may run concurrently.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/backend.h"
#include "sandbox/docker/built_images.h"
#include "sandbox/docker/engine_client.h"
#include "sandbox/docker/ownership.h"

namespace sandbox::docker {

struct DockerBackendOptions {
  std::string socket_path = "/var/run/docker.sock";
  std::string api_version = "v1.41";  // the engine here is 20.10
  std::string agent_path;             // host path of the static sandbox-agent binary
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds hello_timeout{15000};           // from start until the agent answers
  std::string default_image = "sandbox-mcp/python:latest";  // checked by healthChecks()
  std::string instance_id;                    // this server instance; empty: a random one
  std::map<std::string, std::string> labels;  // added to every container
  BuiltImageRetention built_images;           // garbage collection of built images
};

class DockerBackend final : public Backend {
 public:
  explicit DockerBackend(DockerBackendOptions options);
  ~DockerBackend() override;
  DockerBackend(const DockerBackend&) = delete;
  DockerBackend& operator=(const DockerBackend&) = delete;

  // Creates, attaches, starts and greets a container; on any failure it is removed again.
  std::unique_ptr<Sandbox> create(const SandboxSpec& spec) override;
  [[nodiscard]] bool imageExists(const std::string& image) override;
  [[nodiscard]] std::optional<ImageFacts> inspectImage(const std::string& image) override;
  // Our own builder (image_builder.h), never dockerd's /build; then garbage-collects.
  std::string buildImage(const BuildRequest& request) override;
  [[nodiscard]] std::vector<std::string> runtimes() override;
  // See ownership.h for the rule that decides what is an orphan. Also collects built images.
  int removeOrphans() override;
  // Removes built images past their retention (built_images.h); returns how many.
  int collectBuiltImages() noexcept;
  [[nodiscard]] std::vector<HealthCheck> healthChecks() override;

  [[nodiscard]] const std::string& instanceId() const noexcept { return options_.instance_id; }
  [[nodiscard]] EngineClient& engine() noexcept { return *engine_; }
  [[nodiscard]] std::shared_ptr<EngineClient> sharedEngine() const noexcept { return engine_; }
  // The labels that mark this server's containers (other containers it starts carry them too).
  [[nodiscard]] const std::map<std::string, std::string>& containerLabels() const noexcept {
    return ownership_labels_;
  }

 private:
  HealthCheck checkEngine();
  std::vector<HealthCheck> checkRuntime();
  HealthCheck checkImage();
  HealthCheck checkAgentBinary() const;

  DockerBackendOptions options_;
  std::shared_ptr<EngineClient> engine_;
  ProcessIdentity self_;
  std::map<std::string, std::string> ownership_labels_;
};

// First 16 hex digits of SHA-256(text), via OpenSSL EVP. Pure.
[[nodiscard]] std::string shortContentHash(std::string_view text);

}  // namespace sandbox::docker
