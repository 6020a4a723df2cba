// SidecarLauncher that runs sandbox-sidecar as a child process of the server (mcp.sidecar.mode
// "process"): no image and no engine round trip, but the relay shares the server's namespaces.
// The child's stdin is a pipe whose only writer is the server, and it runs with
// --exit-on-stdin-eof: when the server dies, even by SIGKILL, the relay exits too. The child
// inherits no descriptor above stderr and none of the server's environment (sidecarEnvironment).
// Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "sandbox/sidecar.h"

namespace sandbox {

class ProcessSidecarLauncher final : public SidecarLauncher {
 public:
  ProcessSidecarLauncher(std::string binary_path, std::int64_t start_timeout_ms);

  std::unique_ptr<Sidecar> launch(const SidecarSpec& spec) override;
  [[nodiscard]] std::string mode() const override { return "process"; }

 private:
  std::string binary_path_;
  std::int64_t start_timeout_ms_;
};

// The sandbox-sidecar command line for `spec`, with paths as the relay sees them under
// `directory_as_seen` (the host directory itself, or its mount point in a container).
[[nodiscard]] std::vector<std::string> sidecarArguments(const SidecarSpec& spec,
                                                        const std::string& directory_as_seen);

// The whole environment the relay process gets ("NAME=value"): a fixed PATH and locale, plus the
// sanitizer settings when the server has them. Never the server's secrets (SANDBOX_MCP_TOKEN).
[[nodiscard]] std::vector<std::string> sidecarEnvironment();

}  // namespace sandbox
