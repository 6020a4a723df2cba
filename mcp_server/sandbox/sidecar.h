// The MCP sidecar of a session: a sandbox-sidecar relay listening on a Unix socket in a host
// directory that the session's sandbox sees at /run/mcp. It is the sandbox's only way out, and
// only to the URLs its policy file allows (sidecar/README.md).
// A SidecarLauncher starts one per session (as a container or as a child process); dropping the
// Sidecar stops it. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sandbox {

struct SidecarSpec {
  std::string session_id;
  std::string directory;   // host directory holding the files below; the launcher may mount it
  std::string socket_dir;  // <directory>/sock: the only part the sandbox sees (at /run/mcp)
  std::string socket_name = "mcp.sock";
  std::string policy_file;     // <directory>/policy.json (policy::loadPolicy's JSON array)
  std::string audit_log_file;  // <directory>/audit.jsonl: one JSON line per decision
  // The egress proxy's rules (<directory>/egress.json); empty: the relay serves no proxy. Its
  // socket is <socket_dir>/<egress_socket_name>.
  std::string egress_rules_file;
  std::string egress_socket_name = "egress.sock";
  // Secret headers for named hosts (<directory>/secrets.json, 0600, the relay's own; the MCP relay
  // and the egress proxy set them) and extra CA certificates for the proxy's upstreams
  // (<directory>/upstream-ca.pem); empty: none.
  std::string secrets_file;
  // Extra CA certificates the MCP relay trusts for https servers (<directory>/mcp-upstream-ca.pem).
  std::string upstream_ca_file;
  std::string egress_upstream_ca_file;
  std::vector<std::string> limit_flags;  // e.g. {"--upstream-idle-timeout-ms", "60000"}
};

class Sidecar {
 public:
  virtual ~Sidecar() = default;  // stops the relay; never throws

  // False once the relay process has exited (killed, crashed). Cheap: no engine round trip.
  [[nodiscard]] virtual bool running() = 0;
  // "container 3f2a1b..." or "process 4242", for logs and get_session_stats.
  [[nodiscard]] virtual std::string describe() const = 0;
};

class SidecarLauncher {
 public:
  virtual ~SidecarLauncher() = default;

  // Starts a relay for `spec` and returns once its socket accepts connections. Throws
  // SandboxError saying what failed and what to do.
  virtual std::unique_ptr<Sidecar> launch(const SidecarSpec& spec) = 0;
  // "container" or "process".
  [[nodiscard]] virtual std::string mode() const = 0;
};

// Blocks until a Unix socket at `path` accepts a connection, `still_starting()` returns false,
// or `timeout_ms` passes. Returns whether it accepted.
[[nodiscard]] bool waitForSocket(const std::string& path, std::int64_t timeout_ms,
                                 const std::function<bool()>& still_starting);

// One non-blocking connect() attempt to the Unix socket at `path`.
[[nodiscard]] bool socketAccepts(const std::string& path);

}  // namespace sandbox
