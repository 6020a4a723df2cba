// Configuration of sandbox-sidecar (one struct, units in the field names) and its command line.
// Thread-safety: plain data; parseCommandLine is pure and reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.h"

namespace sidecar {

struct SidecarConfig {
  std::string listen_path;           // Unix socket to create (required)
  std::string policy_file;           // JSON array accepted by policy::loadPolicy (required)
  std::string audit_log_path = "-";  // one JSON line per request; "-" = stderr
  std::string session_id;            // copied into every audit line

  std::size_t max_header_bytes = std::size_t{16} * 1024;  // request and upstream response heads
  std::size_t max_body_bytes = std::size_t{1024} * 1024;  // request bodies (413 past it)
  // Upstream timeouts. There is no total deadline on purpose: MCP servers answer with SSE streams
  // that may stay open for as long as a tool runs. Instead an upstream that sends nothing for
  // upstream_idle_timeout_ms (before its headers or between two chunks) is cut off: 504 if the
  // client has not seen the response head yet, otherwise the stream is closed unfinished.
  std::int64_t upstream_connect_timeout_ms = 10'000;
  std::int64_t upstream_idle_timeout_ms = 60'000;
  // Client side: reading a request, and each write of the response (a client that stops reading
  // for this long is dropped and its upstream request cancelled).
  std::int64_t idle_timeout_ms = 30'000;
  std::size_t max_concurrent_requests = 16;  // past it: 503
  // Stop when stdin reaches end of file. The MCP server holds the other end of a pipe (process
  // mode) or of the container's attach stream (container mode), so when the server dies, even by
  // SIGKILL, its sidecars exit instead of lingering.
  bool exit_on_stdin_eof = false;
  // Never forwarded to, whatever the policy says (--deny-endpoint ADDR:PORT, repeatable): the MCP
  // server's own listeners. Checked on the URL and on every resolved address.
  std::vector<policy::Endpoint> denied_endpoints;
  // The audit log stops growing past this many bytes (--audit-log-max-bytes); see AuditLog.
  std::uint64_t audit_log_max_bytes = std::uint64_t{8} * 1024 * 1024;

  // The egress gateway (egress_proxy.h): a forward proxy on a second Unix socket, for the hosts
  // the rules file allows (a JSON array policy::loadEgressRules accepts). Off when empty.
  std::string egress_listen_path;
  std::string egress_rules_file;
  std::size_t egress_max_connections = 64;  // open at once; past it: 503
  // Bytes through all of the session's egress connections together, both ways; past it the
  // connection is cut and new ones get 403.
  std::uint64_t egress_max_bytes = std::uint64_t{8} * 1024 * 1024 * 1024;
  std::int64_t egress_idle_timeout_ms = 120'000;      // a connection where nothing moves
  std::int64_t egress_max_connection_ms = 3'600'000;  // a connection's whole life
  // Secret headers (--secrets FILE, secret_headers.h; 0600) for the hosts it names: the MCP relay
  // sets them on requests to those hosts, and the egress proxy intercepts CONNECTs to them with a
  // session CA made at start (tls_intercept.h). Off when empty.
  std::string secrets_file;
  // Extra PEM CA certificates the MCP relay trusts for https upstreams, besides the system store
  // (--upstream-ca FILE; an internal CA, a test CA). Optional.
  std::string upstream_ca_file;
  // Extra PEM CA certificates trusted for intercepted upstreams, besides the system store
  // (--egress-upstream-ca FILE; an operator's internal CA, a test CA). Optional; unused
  // without secrets.
  std::string egress_upstream_ca_file;
};

struct CommandLineResult {
  std::optional<SidecarConfig> config;  // set when the command line is valid
  std::string error;                    // otherwise: what is wrong and how to fix it
  bool help = false;                    // --help was given (config and error are empty)
};

// Parses `--listen PATH --policy FILE [--audit-log PATH] [--session ID] [--max-body-bytes N]
// [--max-header-bytes N] [--upstream-connect-timeout-ms N] [--upstream-idle-timeout-ms N]
// [--idle-timeout-ms N] [--max-concurrent-requests N] [--deny-endpoint ADDR:PORT]...
// [--audit-log-max-bytes N] [--egress-listen PATH --egress-rules FILE [--egress-max-connections N]
// [--egress-max-bytes N] [--egress-idle-timeout-ms N] [--egress-max-connection-ms N]
// [--egress-upstream-ca FILE]] [--secrets FILE] [--upstream-ca FILE] [--exit-on-stdin-eof]` (args
// excludes argv[0]).
[[nodiscard]] CommandLineResult parseCommandLine(const std::vector<std::string_view>& args);

[[nodiscard]] std::string usageText();

}  // namespace sidecar
