#include "sidecar/target_resolver.h"

#include <algorithm>
#include <vector>

#include "sidecar/header_filter.h"

namespace sidecar {
namespace {

ResolvedTarget denied(std::string display_url, std::string reason) {
  ResolvedTarget result;
  result.display_url = std::move(display_url);
  result.decision.verdict = policy::Verdict::kDeny;
  result.decision.reason = std::move(reason);
  return result;
}

ResolvedTarget decide(const policy::Policy& policy, policy::Url url) {
  ResolvedTarget result;
  result.display_url = url.toString();
  result.decision = policy::decideUrl(policy, url);
  if (result.decision.allowed()) result.rule = policy::findRule(policy, url);
  if (result.rule == nullptr) result.decision.verdict = policy::Verdict::kDeny;  // never forward
  result.url = std::move(url);
  return result;
}

bool isAbsoluteForm(std::string_view target) {
  return target.size() > 7 && (iequals(target.substr(0, 7), "http://") ||
                               (target.size() > 8 && iequals(target.substr(0, 8), "https://")));
}

ResolvedTarget resolveOriginForm(const policy::Policy& policy, std::string_view target,
                                 std::string_view host) {
  const std::string display = "//" + std::string(host) + std::string(target);
  if (host.empty()) {
    return denied(display,
                  "origin-form request without a Host header; send the absolute URL as the "
                  "request target or add Host: host[:port]");
  }
  std::vector<std::string> tried;
  std::optional<policy::Url> first_parsed;
  bool origin_known = false;
  std::string parse_error;
  for (const auto& rule : policy.rules) {
    const std::string& scheme = rule.base.scheme;
    if (std::find(tried.begin(), tried.end(), scheme) != tried.end()) continue;
    tried.push_back(scheme);
    auto parsed = policy::parseUrl(scheme + ":" + display);
    if (!parsed.url) {
      parse_error = parsed.error;
      continue;
    }
    if (policy::findRule(policy, *parsed.url) != nullptr) return decide(policy, *parsed.url);
    // Prefer denying a URL whose origin some rule has: the reason then names the prefixes.
    const bool known_origin = std::any_of(
        policy.rules.begin(), policy.rules.end(),
        [&parsed](const policy::Rule& r) { return r.base.origin() == parsed.url->origin(); });
    if (!first_parsed || (known_origin && !origin_known)) {
      first_parsed = std::move(parsed.url);
      origin_known = known_origin;
    }
  }
  // No scheme matched: the policy's own denial says why (wrong path prefix, unknown origin).
  if (first_parsed) return decide(policy, std::move(*first_parsed));
  if (!parse_error.empty()) return denied(display, "cannot parse the target URL: " + parse_error);
  return denied(display, "the policy has no allowlist entries; every request is denied");
}

}  // namespace

ResolvedTarget resolveTarget(const policy::Policy& policy, std::string_view target,
                             std::string_view host_header) {
  if (isAbsoluteForm(target)) {
    auto parsed = policy::parseUrl(target);
    if (!parsed.url) {
      return denied(std::string(target), "cannot parse the target URL: " + parsed.error);
    }
    return decide(policy, std::move(*parsed.url));
  }
  if (!target.empty() && target.front() == '/') {
    return resolveOriginForm(policy, target, host_header);
  }
  return denied(std::string(target),
                "unsupported request target; send an absolute http(s) URL or a path with a Host "
                "header");
}

}  // namespace sidecar
