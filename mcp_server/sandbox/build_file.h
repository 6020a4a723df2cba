// The restricted Dockerfile dialect of the `dockerfile` argument, parsed into a plan that our own
// builder (docker/image_builder.h) runs step by step under gVisor. A model wrote the text, so
// everything that reaches outside the sandbox is refused here, before any engine call:
//   FROM <image>        exactly one, first; the image must already be on the engine (no pulls)
//   RUN <cmd> | RUN [..] each step in its own gVisor container, network none, sandbox limits
//   ENV, WORKDIR, USER, LABEL   image configuration ($VAR / ${VAR} expanded from ENV)
// ADD and COPY are refused (no build context; URLs are never fetched), and so is every other
// instruction (ARG, VOLUME, ONBUILD, SHELL, ...), flags (RUN --mount, FROM --platform) and
// multi-stage builds. LABEL keys under "sandbox-mcp." are reserved for the server.
// Pure: no I/O. Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandbox {

enum class BuildOp { kRun, kEnv, kWorkdir, kUser, kLabel };

struct BuildStep {
  BuildOp op = BuildOp::kRun;
  int line = 0;                                            // 1-based, for error messages
  std::vector<std::string> argv;                           // kRun: the command to execute
  std::vector<std::pair<std::string, std::string>> pairs;  // kEnv, kLabel (unexpanded)
  std::string value;                                       // kWorkdir, kUser (unexpanded)
};

struct BuildPlan {
  std::string from;  // the base image reference as written
  std::vector<BuildStep> steps;
  [[nodiscard]] std::size_t runCount() const noexcept;
};

inline constexpr std::size_t kMaxDockerfileBytes = std::size_t{64} * 1024;
inline constexpr std::string_view kReservedLabelPrefix = "sandbox-mcp.";

// Throws SandboxError naming the line and saying what to write instead.
[[nodiscard]] BuildPlan parseBuildFile(std::string_view text, std::size_t max_steps);

// Largest value ENV, LABEL, WORKDIR or USER may expand to, and largest image config (all ENV and
// LABEL entries together): "ENV A=$A$A$A..." repeated would otherwise grow without bound.
inline constexpr std::size_t kMaxExpandedBytes = std::size_t{64} * 1024;
inline constexpr std::size_t kMaxImageConfigBytes = std::size_t{256} * 1024;

// Expands $NAME and ${NAME} from `env` ("NAME=value" entries; unknown names expand to nothing);
// "\$" is a literal '$'. Throws SandboxError past kMaxExpandedBytes. Pure.
[[nodiscard]] std::string expandVariables(std::string_view text,
                                          const std::vector<std::string>& env);

}  // namespace sandbox
