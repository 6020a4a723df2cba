#include "sidecar/request_handler.h"

#include <nlohmann/json.hpp>

#include "sidecar/dns_pinning.h"
#include "sidecar/mcp_body_check.h"
#include "sidecar/target_resolver.h"

namespace sidecar {
namespace {

constexpr unsigned kForbidden = 403;
constexpr unsigned kBadGateway = 502;
constexpr unsigned kGatewayTimeout = 504;

AuditRecord startRecord(const HandlerContext& context, const InboundRequest& request,
                        const std::string& url) {
  AuditRecord record;
  record.time = request.received_at;
  record.session = context.session_id;
  record.method = request.method;
  record.url = url.empty() ? request.target : url;
  return record;
}

void finishRecord(const HandlerContext& context, AuditRecord& record,
                  const InboundRequest& request) {
  record.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - request.received_steady)
                           .count();
  context.audit->write(record);
}

void denyWithJsonRpc(const HandlerContext& context, const InboundRequest& request,
                     ResponseSink& sink, const std::string& url, const McpBodyCheck& check) {
  const std::string body =
      check.error_response->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  sink.sendComplete(check.http_status, {}, "application/json", body);
  auto record = startRecord(context, request, url);
  record.decision = "deny";
  record.reason = check.decision.reason;
  record.rule = check.decision.rule_id;
  record.status = check.http_status;
  record.bytes = body.size();
  finishRecord(context, record, request);
}

// The operator's secret headers for the target, or nullptr. They travel only where nobody between
// the relay and the upstream reads them: over TLS, or to a loopback address.
struct SecretCheck {
  const SecretHost* entry = nullptr;
  std::string refusal;  // non-empty: the request must not go out
};

SecretCheck secretsFor(const HandlerContext& context, const std::string& method,
                       const policy::Url& url, const PinnedAddress& pin) {
  SecretCheck check;
  if (!context.secrets) return check;
  check.entry = context.secrets->find(url.host, url.port);
  if (check.entry == nullptr) return check;
  if (echoesRequestHeaders(method)) {
    check.refusal = method + " is not relayed to " + url.host + ":" + std::to_string(url.port) +
                    ": its answer would echo the operator's secret headers";
    check.entry = nullptr;
    return check;
  }
  if (url.scheme == "https") return check;
  const auto address = policy::parseIpAddress(pin.address);
  if (address && policy::classifyAddress(*address) == policy::AddressClass::kLoopback) {
    return check;
  }
  check.refusal = "the operator's secret headers for " + url.host + ":" + std::to_string(url.port) +
                  " go over https only, and this request is " + url.scheme + " to " + pin.address +
                  "; ask for https://" + url.host +
                  (url.port == 443 ? std::string() : ":" + std::to_string(url.port)) + " instead";
  check.entry = nullptr;
  return check;
}

// Each secret header replaces every field of its name the sandbox sent, whatever the case.
void setSecretHeaders(HeaderList& headers, const SecretHost& entry) {
  for (const auto& secret : entry.headers) {
    std::erase_if(headers, [&](const auto& field) { return iequals(field.first, secret.name); });
    headers.emplace_back(secret.name, secret.value);
  }
}

void forward(const HandlerContext& context, const InboundRequest& request, ResponseSink& sink,
             const ResolvedTarget& target, const PinnedAddress& pin) {
  const auto secrets = secretsFor(context, request.method, *target.url, pin);
  if (!secrets.refusal.empty()) {
    answerLocally(context, request, sink, kForbidden, "deny", secrets.refusal, target.rule->id,
                  target.display_url);
    return;
  }
  ForwardRequest upstream{*target.url, pin.curl_resolve, request.method,
                          filterRequestHeaders(request.headers), request.body};
  upstream.extra_ca = context.upstream_ca.get();
  if (secrets.entry != nullptr) setSecretHeaders(upstream.headers, *secrets.entry);
  const auto result = forwardUpstream(upstream, context.upstream, sink);
  using Outcome = ForwardResult::Outcome;
  if (!result.head_sent && result.outcome != Outcome::kCompleted &&
      result.outcome != Outcome::kClientGone) {
    const unsigned status = result.outcome == Outcome::kTimedOut ? kGatewayTimeout : kBadGateway;
    answerLocally(context, request, sink, status, "error", result.error, target.rule->id,
                  target.display_url);
    return;
  }
  auto record = startRecord(context, request, target.display_url);
  record.decision = "allow";
  record.rule = target.rule->id;
  record.reason = target.decision.reason + "; connected to " + pin.address;
  if (secrets.entry != nullptr)
    record.reason += "; secret headers set: " + secrets.entry->headerNames();
  if (result.outcome != Outcome::kCompleted) record.reason += "; " + result.error;
  record.status = result.head_sent ? result.status : 0;
  record.bytes = result.body_bytes;
  finishRecord(context, record, request);
}

}  // namespace

std::string errorBody(const std::string& reason, const std::string& rule_id) {
  return nlohmann::json{{"error", reason}, {"rule", rule_id}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void answerLocally(const HandlerContext& context, const InboundRequest& request, ResponseSink& sink,
                   unsigned status, const std::string& decision, const std::string& reason,
                   const std::string& rule_id, const std::string& url) {
  const std::string body = errorBody(reason, rule_id);
  sink.sendComplete(status, {}, "application/json", body);
  auto record = startRecord(context, request, url);
  record.decision = decision;
  record.reason = reason;
  record.rule = rule_id;
  record.status = status;
  record.bytes = body.size();
  finishRecord(context, record, request);
}

void handleRequest(const HandlerContext& context, const InboundRequest& request,
                   ResponseSink& sink) {
  if (request.method == "CONNECT") {
    answerLocally(context, request, sink, kForbidden, "deny",
                  "CONNECT tunnels are not supported: send plain HTTP requests with the target "
                  "URL, the sidecar makes the TLS connection");
    return;
  }
  const auto target =
      resolveTarget(*context.policy, request.target, findHeader(request.headers, "Host"));
  if (!target.decision.allowed()) {
    answerLocally(context, request, sink, kForbidden, "deny", target.decision.reason,
                  target.decision.rule_id, target.display_url);
    return;
  }
  if (const auto forbidden = policy::decideForbiddenUrl(*target.url, context.denied_endpoints);
      !forbidden.allowed()) {
    answerLocally(context, request, sink, kForbidden, "deny", forbidden.reason, target.rule->id,
                  target.display_url);
    return;
  }
  const auto pin = resolveAndPin(*target.rule, *target.url, context.denied_endpoints);
  if (!pin.decision.allowed()) {
    answerLocally(context, request, sink, pin.lookup_failed ? kBadGateway : kForbidden,
                  pin.lookup_failed ? "error" : "deny", pin.decision.reason, target.rule->id,
                  target.display_url);
    return;
  }
  if (ruleRestrictsMcp(*target.rule)) {
    const auto check =
        checkMcpBody(*target.rule, request.body, findHeader(request.headers, "Content-Encoding"));
    if (!check.decision.allowed()) {
      denyWithJsonRpc(context, request, sink, target.display_url, check);
      return;
    }
  }
  forward(context, request, sink, target, pin);
}

}  // namespace sidecar
