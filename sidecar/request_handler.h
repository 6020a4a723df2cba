// The checklist one request goes through, on a worker thread: resolve the target, check the
// URL, resolve and pin the address, check the MCP body, set the secret headers, forward, audit.
// Every exit writes one audit line and gives the client an answer (unless it already left).
// Thread-safety: handleRequest is reentrant; HandlerContext is immutable and shared.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "sidecar/audit_log.h"
#include "sidecar/extra_ca.h"
#include "sidecar/header_filter.h"
#include "sidecar/response_sink.h"
#include "sidecar/secret_headers.h"
#include "sidecar/upstream_forwarder.h"

namespace sidecar {

struct HandlerContext {
  std::shared_ptr<const policy::Policy> policy;
  std::shared_ptr<AuditLog> audit;
  std::string session_id;
  UpstreamLimits upstream;
  std::vector<policy::Endpoint> denied_endpoints;  // the MCP server's own listeners
  // Headers set on requests to the hosts it names (may be null), replacing the sandbox's.
  std::shared_ptr<const SecretHeaders> secrets;
  // CA certificates trusted for https upstreams besides the system's (may be null).
  std::shared_ptr<const ExtraCaCertificates> upstream_ca;
};

struct InboundRequest {
  std::string method;
  std::string target;  // the request-target exactly as received
  HeaderList headers;
  std::string body;
  std::chrono::system_clock::time_point received_at;
  std::chrono::steady_clock::time_point received_steady;
};

void handleRequest(const HandlerContext& context, const InboundRequest& request,
                   ResponseSink& sink);

// The body of every answer the sidecar makes up itself: {"error": reason, "rule": rule_id}.
[[nodiscard]] std::string errorBody(const std::string& reason, const std::string& rule_id);

// Answers with `status` and errorBody, and audits it (decision "deny" or "error"). Used by the
// handler and by the connection for requests it refuses before a handler runs (413, 431, 503).
void answerLocally(const HandlerContext& context, const InboundRequest& request, ResponseSink& sink,
                   unsigned status, const std::string& decision, const std::string& reason,
                   const std::string& rule_id = {}, const std::string& url = {});

}  // namespace sidecar
