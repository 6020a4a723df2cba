// sandbox-sidecar's server: an HTTP/1.1 listener on a Unix socket (Boost.Beast) that relays each
// request the policy allows. One io_context thread does all socket I/O; a worker pool with one
// thread per allowed concurrent request does the blocking part (DNS, libcurl).
// Thread-safety: start() and stop() from one controlling thread; stop() is idempotent.
#pragma once

#include <memory>
#include <string>

#include "policy/policy.h"
#include "sidecar/audit_log.h"
#include "sidecar/secret_headers.h"
#include "sidecar/sidecar_config.h"

namespace sidecar {

class SidecarServer {
 public:
  // `secrets` (may be null): headers set on relayed requests to the hosts its entries marked
  // `relay` name (SecretHeaders::forRelay; the others are the egress proxy's). Throws
  // std::runtime_error when config.upstream_ca_file cannot be read.
  SidecarServer(SidecarConfig config, std::shared_ptr<const policy::Policy> policy,
                std::shared_ptr<AuditLog> audit,
                const std::shared_ptr<const SecretHeaders>& secrets = nullptr);
  ~SidecarServer();  // stop()
  SidecarServer(const SidecarServer&) = delete;
  SidecarServer& operator=(const SidecarServer&) = delete;

  // Removes a stale socket file (refuses if another process still listens on it, or if the path
  // is not a socket), binds, makes the socket connectable by any user (0666: the sandbox runs as
  // another uid) and starts serving. Throws std::runtime_error saying what to fix.
  void start();
  // Stops accepting, drops open connections (cancelling their upstream requests), joins every
  // thread and unlinks the socket file.
  void stop() noexcept;

  [[nodiscard]] const std::string& socketPath() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sidecar
