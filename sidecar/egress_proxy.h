// The egress gateway: a forward proxy on its own Unix socket (the sandbox reaches it at
// 127.0.0.1:<port>, which its agent forwards here). Each connection carries one proxy request:
//  - `CONNECT host:port`: decided by the session's egress rules (policy/egress.h), the name
//    resolved and each address checked (policy::decideEgressAddress), the first allowed one
//    connected to (pinned: a second DNS answer cannot move it), `200`, then the first TLS record
//    must be a ClientHello whose SNI is the CONNECT host (tls_client_hello.h) before any byte
//    goes upstream; TLS then passes through unopened (tunnel.h).
//  - plain HTTP in absolute form: decided and pinned the same way, sent upstream in origin form
//    with `Connection: close`, its body bounded by Content-Length; the answer streams back and
//    the connection ends with it (nothing else the sandbox sends on it is relayed).
// A refusal is an HTTP error whose reason phrase and body say why; the connection then closes.
// Every connection is one audit line (kind "egress"). Limits: open connections, bytes of all
// connections together, idle time and a connection's whole life.
// With secret headers (secret_headers.h), an allowed CONNECT to a host they name is intercepted
// instead of passed through (tls_intercept.h): start() makes the session CA in memory (its name
// constraints permit those hosts only; the key never touches disk) and writes its certificate
// next to the socket for the sandbox to trust (egress_ca_files.h); stop() removes those files.
// Thread-safety: start() and stop() from one controlling thread; stop() is idempotent.
#pragma once

#include <memory>

#include "policy/egress.h"
#include "sidecar/audit_log.h"
#include "sidecar/secret_headers.h"
#include "sidecar/sidecar_config.h"

namespace sidecar {

class EgressProxy {
 public:
  // `secrets`: none (or no hosts) = nothing intercepted. config.egress_upstream_ca_file, when
  // set, is trusted for intercepted upstreams besides the system store.
  EgressProxy(const SidecarConfig& config, std::shared_ptr<const policy::EgressPolicy> rules,
              std::shared_ptr<AuditLog> audit,
              std::shared_ptr<const SecretHeaders> secrets = nullptr);
  ~EgressProxy();  // stop()
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  // With secrets: makes the session CA and writes egress-ca.pem and ca-bundle.pem into the
  // socket's directory. Then listens on config.egress_listen_path (a stale socket is replaced,
  // 0666) and serves on its own thread. Throws std::runtime_error saying what to fix.
  void start();
  // Stops accepting, cuts every open connection, joins the threads, unlinks the socket and the
  // CA files.
  void stop() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sidecar
