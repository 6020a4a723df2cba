#include "server/server_endpoints.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

namespace server {
namespace {

std::vector<policy::IpAddress> resolve(const std::string& host) {
  std::string literal = host;
  if (literal.size() >= 2 && literal.front() == '[' && literal.back() == ']') {
    literal = literal.substr(1, literal.size() - 2);
  }
  if (auto address = policy::parseIpAddress(literal)) return {*address};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &raw) != 0) return {};
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(raw, freeaddrinfo);
  std::vector<policy::IpAddress> out;
  for (const addrinfo* it = list.get(); it != nullptr; it = it->ai_next) {
    if (auto address = policy::ipAddressFromSockaddr(it->ai_addr)) out.push_back(*address);
  }
  return out;
}

std::vector<policy::IpAddress> interfaceAddresses() {
  ifaddrs* raw = nullptr;
  if (getifaddrs(&raw) != 0) return {};
  const std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> list(raw, freeifaddrs);
  std::vector<policy::IpAddress> out;
  for (const ifaddrs* it = list.get(); it != nullptr; it = it->ifa_next) {
    if (auto address = policy::ipAddressFromSockaddr(it->ifa_addr)) out.push_back(*address);
  }
  return out;
}

}  // namespace

std::vector<policy::Endpoint> listenerEndpoints(const std::string& bind_host, std::uint16_t port) {
  std::vector<policy::IpAddress> addresses = resolve(bind_host);
  const bool wildcard = std::any_of(addresses.begin(), addresses.end(), [](const auto& address) {
    return policy::classifyAddress(address) == policy::AddressClass::kUnspecified;
  });
  if (wildcard) {
    for (const auto& address : interfaceAddresses()) addresses.push_back(address);
  }
  std::vector<policy::Endpoint> endpoints;
  for (const auto& address : addresses) {
    const policy::Endpoint endpoint{address, port};
    if (std::find(endpoints.begin(), endpoints.end(), endpoint) == endpoints.end()) {
      endpoints.push_back(endpoint);
    }
  }
  return endpoints;
}

}  // namespace server
