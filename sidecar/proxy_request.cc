#include "sidecar/proxy_request.h"

#include <utility>

namespace sidecar {
namespace {

ProxyRequest refuse(int status, std::string reason) {
  ProxyRequest out;
  out.status = status;
  out.reason = std::move(reason);
  return out;
}

// host[:port] as a Host header writes it for `url` (the port only when not the default).
bool sameAuthority(const policy::Url& url, std::string_view host_header) {
  const auto parsed =
      policy::parseUrl(std::string(url.scheme) + "://" + std::string(host_header) + "/");
  return parsed.url && parsed.url->path == "/" && parsed.url->host == url.host &&
         parsed.url->port == url.port;
}

ProxyRequest decided(ProxyRequest::Kind kind, const policy::EgressPolicy& rules,
                     const policy::Url& target, const std::vector<policy::Endpoint>& endpoints) {
  const auto decision = policy::decideEgress(rules, target, endpoints);
  ProxyRequest out;
  out.target = target;
  out.reason = decision.reason;
  if (!decision.allowed()) {
    out.status = 403;
    return out;
  }
  out.kind = kind;
  out.rule = policy::findEgressRule(rules, target);
  return out;
}

}  // namespace

ProxyRequest classifyProxyRequest(const policy::EgressPolicy& rules, std::string_view method,
                                  std::string_view target, std::string_view host_header,
                                  bool has_body,
                                  const std::vector<policy::Endpoint>& server_endpoints) {
  if (method == "CONNECT") {
    if (has_body) return refuse(400, "a CONNECT request carries no body");
    const auto parsed = policy::parseConnectTarget(target);
    if (!parsed.url) {
      return refuse(400, "CONNECT " + std::string(target) + ": " + parsed.error);
    }
    if (!host_header.empty() && !sameAuthority(*parsed.url, host_header)) {
      return refuse(400, "the Host header (" + std::string(host_header) +
                             ") names another authority than the CONNECT target");
    }
    return decided(ProxyRequest::Kind::kConnect, rules, *parsed.url, server_endpoints);
  }
  if (target.starts_with("/") || target == "*") {
    return refuse(400,
                  "this is the sandbox's egress proxy: send requests through it as a proxy "
                  "(HTTP_PROXY / HTTPS_PROXY are set in the sandbox), with an absolute URL or "
                  "CONNECT");
  }
  const auto parsed = policy::parseUrl(target);
  if (!parsed.url) return refuse(400, std::string(target) + ": " + parsed.error);
  if (parsed.url->scheme != "http") {
    return refuse(400,
                  "https:// goes through CONNECT (the proxy never opens TLS): use "
                  "HTTPS_PROXY, which clients do by themselves");
  }
  if (!host_header.empty() && !sameAuthority(*parsed.url, host_header)) {
    return refuse(400, "the Host header (" + std::string(host_header) +
                           ") names another authority than the request's URL");
  }
  return decided(ProxyRequest::Kind::kAbsolute, rules, *parsed.url, server_endpoints);
}

}  // namespace sidecar
