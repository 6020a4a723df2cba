// Runs a parsed, checked BuildPlan (sandbox/build_file.h) through the Engine API, never through
// dockerd's /build: the classic builder runs RUN steps under the daemon's default runtime (runc,
// as root, host kernel, default capabilities) and follows ADD URLs from the host. Here each RUN
// step is its own container under the build runtime (gVisor, registered without its root overlay
// so the step's changes reach the container's layer), network none, the sandbox's memory, CPU and
// pids limits, a small capability set (inside gVisor only), and the build's deadline; the step is
// then committed (POST /commit). ENV, WORKDIR, USER and LABEL only change the final image's
// config. Containers are always removed; a failed build removes the images it committed. A build
// stops when its cancel token fires (the running step's container is killed and removed).
// The result is tagged sandbox-mcp-build:<hash> and labelled (image_policy.h kLabelBuilt*), so
// the image policy and the garbage collector (built_images.h) recognise it.
// Thread-safe: build() may run concurrently (distinct containers and images).
#pragma once

#include <map>
#include <string>

#include "common/cancel_token.h"
#include "sandbox/backend.h"
#include "sandbox/docker/engine_client.h"

namespace sandbox::docker {

inline constexpr std::string_view kBuildRepository = "sandbox-mcp-build";
// Build containers are named kBuildContainerPrefix + random hex. (A name, not a label: commit
// copies a container's labels into the image, and from there onto every session's container.)
inline constexpr std::string_view kBuildContainerPrefix = "sandbox-mcp-build-";

// Capabilities a RUN step keeps, inside gVisor's own kernel (never on the host): what package
// installs and file set-up need as root (chown, overriding file modes, setuid to a package's
// user). Raw sockets, mknod, chroot, setfcap and the rest of Docker's default set are dropped.
inline constexpr std::array<std::string_view, 7> kBuildCapabilities = {
    "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID"};

// "<first 16 hex of sha256>" of the plan's content and its base image id.
[[nodiscard]] std::string buildContentHash(const BuildRequest& request);

class ImageBuilder {
 public:
  // `labels` go on every container the builder creates (ownership: orphans get swept).
  ImageBuilder(EngineClient& engine, std::map<std::string, std::string> labels)
      : engine_(engine), labels_(std::move(labels)) {}

  // Returns the tag; reuses an existing image of the same content (and marks it used). Throws
  // SandboxError when a step fails, at the deadline, and within a fraction of a second of
  // `cancel` firing: the running step's container is removed and nothing is committed.
  std::string build(const BuildRequest& request, const CancelToken& cancel);

 private:
  EngineClient& engine_;
  std::map<std::string, std::string> labels_;
};

}  // namespace sandbox::docker
