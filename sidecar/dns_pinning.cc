#include "sidecar/dns_pinning.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

namespace sidecar {
namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const noexcept { freeaddrinfo(info); }
};

PinnedAddress lookupFailed(std::string reason) {
  PinnedAddress result;
  result.lookup_failed = true;
  result.decision.verdict = policy::Verdict::kDeny;
  result.decision.reason = std::move(reason);
  return result;
}

// getaddrinfo's answer, each address once, in its order; nullopt (and `error`) when it fails.
std::optional<std::vector<policy::IpAddress>> lookUp(const policy::Url& url, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const int rc = getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &raw);
  const std::unique_ptr<addrinfo, AddrInfoDeleter> list(raw);
  if (rc != 0) {
    error = "cannot resolve host '" + url.host + "': " + gai_strerror(rc);
    return std::nullopt;
  }
  std::vector<policy::IpAddress> addresses;
  for (const addrinfo* it = list.get(); it != nullptr; it = it->ai_next) {
    auto address = policy::ipAddressFromSockaddr(it->ai_addr);
    if (address && std::find(addresses.begin(), addresses.end(), *address) == addresses.end()) {
      addresses.push_back(*address);
    }
  }
  if (addresses.empty()) {
    error = "host '" + url.host + "' resolved to no address";
    return std::nullopt;
  }
  return addresses;
}

// The addresses a connection to `url` may go to: the literal itself, or what DNS answers.
std::optional<std::vector<policy::IpAddress>> addressesOf(const policy::Url& url,
                                                          std::string& error) {
  if (url.host_kind == policy::HostKind::kDomain) return lookUp(url, error);
  auto literal = policy::parseIpAddress(url.host);
  if (!literal) {
    error = "host '" + url.host + "' is not a valid IP literal";
    return std::nullopt;
  }
  return std::vector<policy::IpAddress>{*literal};
}

// The first address `decide` allows, in the resolver's order; otherwise the first refusal (the
// address a client would have used).
template <typename Decide>
PinnedAddress pinFirst(const std::string& rule_id, const policy::Url& url,
                       const std::vector<policy::IpAddress>& addresses, Decide decide) {
  PinnedAddress result;
  result.decision.verdict = policy::Verdict::kDeny;
  result.decision.rule_id = rule_id;
  result.decision.reason = "host '" + url.host + "' resolved to no address";
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    policy::Decision decision = decide(addresses[i]);
    decision.rule_id = rule_id;
    if (decision.allowed() || i == 0) {
      result.decision = std::move(decision);
      result.address = addresses[i].toString();
    }
    if (result.decision.allowed()) return result;
  }
  return result;
}

}  // namespace

std::string curlResolveEntry(const policy::Url& url, const policy::IpAddress& address) {
  const std::string text = address.toString();
  return url.host + ":" + std::to_string(url.port) + ":" + (address.v6 ? "[" + text + "]" : text);
}

PinnedAddress pinFirstAllowed(const policy::Rule& rule, const policy::Url& url,
                              const std::vector<policy::IpAddress>& addresses,
                              const std::vector<policy::Endpoint>& denied) {
  auto result = pinFirst(rule.id, url, addresses, [&](const policy::IpAddress& address) {
    auto decision = policy::decideForbiddenAddress(url, address, denied);
    return decision.allowed() ? policy::decideAddress(rule, url, address) : decision;
  });
  if (result.decision.allowed() && url.host_kind == policy::HostKind::kDomain) {
    result.curl_resolve = curlResolveEntry(url, *policy::parseIpAddress(result.address));
  }
  return result;
}

PinnedAddress resolveAndPin(const policy::Rule& rule, const policy::Url& url,
                            const std::vector<policy::Endpoint>& denied) {
  std::string error;
  const auto addresses = addressesOf(url, error);
  if (!addresses) return lookupFailed(std::move(error));
  return pinFirstAllowed(rule, url, *addresses, denied);
}

PinnedAddress pinFirstAllowedEgress(const policy::EgressRule& rule, const policy::Url& target,
                                    const std::vector<policy::IpAddress>& addresses,
                                    const std::vector<policy::Endpoint>& denied) {
  return pinFirst(rule.id, target, addresses, [&](const policy::IpAddress& address) {
    return policy::decideEgressAddress(rule, target, address, denied);
  });
}

PinnedAddress resolveAndPinEgress(const policy::EgressRule& rule, const policy::Url& target,
                                  const std::vector<policy::Endpoint>& denied) {
  std::string error;
  const auto addresses = addressesOf(target, error);
  if (!addresses) return lookupFailed(std::move(error));
  return pinFirstAllowedEgress(rule, target, *addresses, denied);
}

}  // namespace sidecar
