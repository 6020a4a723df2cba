// A session's door to allowlisted MCP servers: its private directory, the policy file the relay
// enforces, and the relay itself (sandbox::Sidecar). The sandbox sees only the socket directory,
// mounted read-only at /run/mcp. A relay that died (killed, crashed) is restarted on the
// session's next execution. Destroying the gateway stops the relay, then removes the directory.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "policy/egress.h"
#include "policy/policy.h"
#include "sandbox/runtime_dir.h"
#include "sandbox/sidecar.h"
#include "server/audit_tally.h"
#include "server/session_metrics.h"

namespace server {

inline constexpr const char* kMcpSocketMount = "/run/mcp";
inline constexpr const char* kMcpSocketEnv = "MCP_PROXY_SOCKET";

// mcp.audit_log: where every session's audit lines go when it ends (empty: nowhere), rotated once
// (to <path>.1, replacing it) before it would grow past max_bytes.
struct RetainedAuditLog {
  RetainedAuditLog(
      std::string path_ = {},  // NOLINT(google-explicit-constructor): a path reads well
      std::uint64_t max_bytes_ = std::uint64_t{64} * 1024 * 1024)
      : path(std::move(path_)), max_bytes(max_bytes_) {}
  std::string path;
  std::uint64_t max_bytes;
};

class McpGateway {
 public:
  // Writes the policy into `directory`; start() starts the relay. Throws sandbox::SandboxError.
  // A non-empty `retained_audit_log` receives the session's audit lines when it ends. A rule
  // that reaches one of `server_endpoints` (the server's own listeners) is refused here, and the
  // relay is told to refuse them after DNS too.
  // A non-empty `egress` also has the relay serve the session's egress proxy (its limits among
  // `limit_flags`); `policy` may then have no rules. A non-empty `secrets` (resolveSecrets) has
  // the relay set those headers, on MCP requests and through the proxy; `egress_upstream_ca`
  // is the proxy's extra trust for them, `mcp_upstream_ca` the MCP relay's for https servers.
  McpGateway(sandbox::SidecarLauncher& launcher,
             std::unique_ptr<sandbox::ScopedDirectory> directory, const std::string& session_id,
             std::shared_ptr<const policy::Policy> policy, std::vector<std::string> limit_flags,
             RetainedAuditLog retained_audit_log = {},
             const std::vector<policy::Endpoint>& server_endpoints = {},
             const SessionMetrics* metrics = nullptr,
             std::shared_ptr<const policy::EgressPolicy> egress = nullptr,
             const nlohmann::json& secrets = nlohmann::json::array(),
             const std::string& egress_upstream_ca = {}, const std::string& mcp_upstream_ca = {});
  ~McpGateway();
  McpGateway(const McpGateway&) = delete;
  McpGateway& operator=(const McpGateway&) = delete;

  // Starts the relay; returns once its socket accepts connections. Throws SandboxError.
  void start();

  // Host directory to mount at kMcpSocketMount (known before start()).
  [[nodiscard]] const std::string& socketDir() const noexcept { return spec_.socket_dir; }
  [[nodiscard]] const policy::Policy& policy() const noexcept { return *policy_; }
  // Whether the relay serves MCP servers (an mcp_allowlist) and an egress proxy.
  [[nodiscard]] bool servesMcp() const noexcept { return !policy_->rules.empty(); }
  [[nodiscard]] bool servesEgress() const noexcept { return egress_ != nullptr; }
  // Whether the relay sets secret headers for some hosts.
  [[nodiscard]] bool setsSecretHeaders() const noexcept { return !secret_hosts_.empty(); }
  // Whether the proxy ends TLS for some hosts (its rules reach a secret host) with a session CA
  // the sandbox must trust: ca-bundle.pem and egress-ca.pem in the socket directory.
  [[nodiscard]] bool interceptsTls() const noexcept { return intercepts_tls_; }
  // The egress proxy's socket, as the sandbox sees it under kMcpSocketMount's directory.
  [[nodiscard]] const std::string& egressSocketName() const noexcept {
    return spec_.egress_socket_name;
  }

  // Restarts a relay that is no longer running. Returns a notice for the caller when it did
  // (connections open in the sandbox were cut); throws SandboxError when it cannot restart.
  std::optional<std::string> ensureRunning();

  // {"allowlist", "sidecar": {"mode", "running", "restarts", "allowed", "denied", "errors",
  // "audit_dropped" (lines the size-capped audit log dropped)}, "secret_hosts" (["host:port"]),
  // and with egress "egress": {"allow", "allowed", "denied", "errors", "bytes_up", "bytes_down"}}
  [[nodiscard]] nlohmann::json stats();

  // Reads what the relay appended to its audit log since the last read, so the decisions are
  // counted (the metrics); stats() and the destructor do it too.
  void refreshCounts();
  // Egress requests refused since the last call, each "METHOD target: reason" (AuditTally).
  [[nodiscard]] std::vector<std::string> takeEgressRefusals();

 private:
  void refreshTally();  // mutex_ held
  void writeSecrets(const nlohmann::json& secrets, const std::string& upstream_ca);
  [[nodiscard]] std::uint64_t auditDropped() const;
  void retainAuditLog() noexcept;

  sandbox::SidecarLauncher& launcher_;
  std::unique_ptr<sandbox::ScopedDirectory> directory_;
  std::shared_ptr<const policy::Policy> policy_;
  std::shared_ptr<const policy::EgressPolicy> egress_;
  std::vector<std::string> secret_hosts_;  // "host:port" with secret headers (names, no values)
  bool intercepts_tls_ = false;
  sandbox::SidecarSpec spec_;
  RetainedAuditLog retained_audit_log_;
  std::mutex mutex_;
  std::unique_ptr<sandbox::Sidecar> sidecar_;
  int restarts_ = 0;
  AuditTally tally_;
  std::uint64_t audit_offset_ = 0;
  const SessionMetrics* metrics_;
  std::uint64_t counted_allowed_ = 0;  // what metrics_ has been told so far
  std::uint64_t counted_denied_ = 0;
  std::uint64_t counted_errors_ = 0;
  AuditTally::Egress counted_egress_;
};

// The policy a session's relay enforces: the call's list, narrowed by the operator's when the
// operator configured one; without an operator list, public hosts only
// (policy::requirePublicHosts). Cloud metadata is refused either way. Throws sandbox::SandboxError
// naming the entry that is not allowed and what the operator would have to configure.
[[nodiscard]] std::shared_ptr<const policy::Policy> effectivePolicy(
    const nlohmann::json& requested, const nlohmann::json& operator_allowlist);

// Throws policy::PolicyError naming the first rule that reaches a host no allowlist may open
// (cloud metadata, or one of `server_endpoints`).
void refuseForbidden(const policy::Policy& policy,
                     const std::vector<policy::Endpoint>& server_endpoints);

}  // namespace server
