// The addresses the server itself listens on, so that no session's MCP relay may reach them
// (policy::decideForbiddenUrl / decideForbiddenAddress). Known only once the HTTP transport has
// bound its port; stdio servers have none. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace server {

class ServerEndpoints {
 public:
  void set(std::vector<policy::Endpoint> endpoints) {
    const std::lock_guard lock(mutex_);
    endpoints_ = std::move(endpoints);
  }
  [[nodiscard]] std::vector<policy::Endpoint> get() const {
    const std::lock_guard lock(mutex_);
    return endpoints_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<policy::Endpoint> endpoints_;
};

// Every address a client may use to reach a listener bound to `bind_host`:`port`: the bind
// address itself (a name is resolved), and for a wildcard bind (0.0.0.0, ::) every interface
// address too. Loopback and wildcard addresses stand for all local addresses (policy::Endpoint).
[[nodiscard]] std::vector<policy::Endpoint> listenerEndpoints(const std::string& bind_host,
                                                              std::uint16_t port);

}  // namespace server
