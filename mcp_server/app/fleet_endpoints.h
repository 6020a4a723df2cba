// What a fleet asks a replica over HTTP, beside /mcp: GET /healthz (the process serves),
// GET /readyz (it can take new sessions: engine reachable, runtime, image and agent present, not
// draining; the warm pool's state shown) and GET /metrics (Prometheus text format). Load
// balancers, orchestrators and scrapers call these; the HTTP transport applies the same Host,
// Origin and bearer-token checks as on /mcp. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "metrics/registry.h"
#include "sandbox/backend.h"
#include "server/session_registry.h"
#include "transport/http_transport.h"

namespace app {

// The start-up checks every call depends on; a failed one makes the server not ready.
[[nodiscard]] bool isRequiredCheck(const std::string& name, const config::ServerConfig& config);

class FleetEndpoints {
 public:
  FleetEndpoints(const config::ServerConfig& config, sandbox::Backend& backend,
                 server::SessionRegistry& sessions, metrics::Registry& registry,
                 std::string instance_id);

  // Set once the drain begins: /readyz fails from then on.
  void beginDrain() noexcept { draining_ = true; }
  [[nodiscard]] bool draining() const noexcept { return draining_; }

  // The handlers for HttpTransportOptions::get_endpoints.
  [[nodiscard]] std::map<std::string, transport::PlainHandler> handlers();

  [[nodiscard]] transport::PlainResponse healthz() const;
  [[nodiscard]] transport::PlainResponse readyz();
  [[nodiscard]] transport::PlainResponse metrics() const;

 private:
  // The backend's checks, asked at most once per kChecksTtl: probes come every few seconds from
  // every balancer, and each check is a round trip to the engine.
  static constexpr std::chrono::seconds kChecksTtl{2};
  std::vector<sandbox::HealthCheck> checks();

  const config::ServerConfig& config_;
  sandbox::Backend& backend_;
  server::SessionRegistry& sessions_;
  metrics::Registry& registry_;
  const std::string instance_id_;
  std::atomic<bool> draining_{false};

  std::mutex checks_mutex_;  // one probe asks the engine at a time; the others wait for it
  std::chrono::steady_clock::time_point checked_at_{};
  std::vector<sandbox::HealthCheck> cached_checks_;
};

}  // namespace app
