// What no allowlist may open, not even the operator's: cloud metadata services (credentials of
// the machine) and the MCP server's own listeners (code that reaches them drives the server that
// hosts its sandbox). Checked before DNS on the URL and after DNS on every resolved address, so
// no spelling (127.1, [::ffff:127.0.0.1], localhost, a name that resolves there) gets through.
#include <array>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/internal.h"
#include "policy/policy.h"

namespace policy {
namespace {

// Names the metadata services answer on besides their addresses (GCP, AWS).
constexpr std::array<std::string_view, 5> kMetadataNames = {
    "metadata.google.internal", "metadata.goog", "metadata", "instance-data",
    "instance-data.ec2.internal"};

// The IPv4 address an IPv6 address carries (mapped, compatible, NAT64), else the address itself.
IpAddress fold(const IpAddress& address) {
  if (const std::optional<internal::Ipv4Bytes> v4 = internal::embeddedIpv4(address)) {
    return internal::makeIpv4(*v4);
  }
  return address;
}

bool isLocalAddress(const IpAddress& address) {
  const AddressClass value = classifyAddress(address);
  return value == AddressClass::kLoopback || value == AddressClass::kUnspecified;
}

bool reaches(const Endpoint& endpoint, const IpAddress& address, std::uint16_t port) {
  if (port != endpoint.port) return false;
  if (fold(address) == fold(endpoint.address)) return true;
  // Connecting to 0.0.0.0 or any 127/8 address lands on a loopback or wildcard listener.
  return isLocalAddress(endpoint.address) && isLocalAddress(address);
}

Decision deny(std::string reason) { return Decision{Verdict::kDeny, std::move(reason), {}}; }

std::string hostPort(const Url& url) {
  return (url.host_kind == HostKind::kIpv6 ? "[" + url.host + "]" : url.host) + ":" +
         std::to_string(url.port);
}

Decision denySelf(const Url& url, const Endpoint& endpoint) {
  return deny(hostPort(url) + " reaches this MCP server's own listener " + endpoint.toString() +
              "; never allowed, not even by the operator's mcp.allowlist (sandbox code would "
              "drive the server that hosts it)");
}

Decision denyMetadata(const Url& url, const std::string& what) {
  return deny(url.host + " is " + what +
              "; never allowed, not even by the operator's mcp.allowlist (it hands out the "
              "machine's credentials)");
}

}  // namespace

std::string Endpoint::toString() const {
  const std::string text = address.toString();
  return (address.v6 ? "[" + text + "]" : text) + ":" + std::to_string(port);
}

std::optional<Endpoint> parseEndpoint(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::nullopt;  // IPv6 needs brackets
  }
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535) {
    return std::nullopt;
  }
  const std::optional<IpAddress> address = parseIpAddress(host);
  if (!address) return std::nullopt;
  return Endpoint{*address, static_cast<std::uint16_t>(port)};
}

Decision decideForbiddenUrl(const Url& url, const std::vector<Endpoint>& server_endpoints) {
  if (url.host_kind == HostKind::kDomain) {
    for (const std::string_view name : kMetadataNames) {
      if (url.host == name) return denyMetadata(url, "a cloud metadata service");
    }
    if (internal::isLocalhostName(url.host)) {
      for (const Endpoint& endpoint : server_endpoints) {
        if (endpoint.port == url.port && isLocalAddress(endpoint.address)) {
          return denySelf(url, endpoint);
        }
      }
    }
    return Decision{Verdict::kAllow, url.host + " is not a forbidden host", {}};
  }
  const std::optional<IpAddress> address = parseIpAddress(url.host);
  if (!address) return deny("host '" + url.host + "' is not a valid IP literal");
  return decideForbiddenAddress(url, *address, server_endpoints);
}

Decision decideForbiddenAddress(const Url& url, const IpAddress& resolved,
                                const std::vector<Endpoint>& server_endpoints) {
  if (classifyAddress(resolved) == AddressClass::kMetadata) {
    return denyMetadata(url, "cloud metadata address " + resolved.toString());
  }
  for (const Endpoint& endpoint : server_endpoints) {
    if (reaches(endpoint, resolved, url.port)) return denySelf(url, endpoint);
  }
  return Decision{Verdict::kAllow, resolved.toString() + " is not a forbidden address", {}};
}

}  // namespace policy
