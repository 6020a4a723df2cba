// What a fleet asks a replica over HTTP, beside /mcp: GET /healthz (the process serves),
// GET /readyz (it can take new sessions: engine reachable, runtime, image and agent present, not
// draining; the warm pool's state shown) and GET /metrics (Prometheus text format). Load
// balancers, orchestrators and scrapers call these; the HTTP transport applies the same Host,
// Origin and bearer-token checks as on /mcp. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
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
  ~FleetEndpoints();  // stops the checker (waits for a check in flight)
  FleetEndpoints(const FleetEndpoints&) = delete;
  FleetEndpoints& operator=(const FleetEndpoints&) = delete;

  // Set once the drain begins: /readyz fails from then on.
  void beginDrain() noexcept { draining_ = true; }
  [[nodiscard]] bool draining() const noexcept { return draining_; }
  [[nodiscard]] const std::string& instanceId() const noexcept { return instance_id_; }

  // The handlers for HttpTransportOptions::get_endpoints.
  [[nodiscard]] std::map<std::string, transport::PlainHandler> handlers();

  [[nodiscard]] transport::PlainResponse healthz() const;
  [[nodiscard]] transport::PlainResponse readyz();
  [[nodiscard]] transport::PlainResponse metrics() const;

 private:
  // The backend's checks run on a thread of their own every kCheckEvery, from the first /readyz
  // on: a probe answers at once from the last result (probes come every few seconds from every
  // balancer, and a slow engine must not hold probe threads). A result older than kChecksStale
  // (the engine is not answering) makes the replica not ready.
  static constexpr std::chrono::seconds kCheckEvery{2};
  static constexpr std::chrono::seconds kChecksStale{10};
  struct Checked {
    std::vector<sandbox::HealthCheck> checks;
    std::chrono::steady_clock::time_point at{};
  };
  Checked lastChecks();
  void checkLoop();

  const config::ServerConfig& config_;
  sandbox::Backend& backend_;
  server::SessionRegistry& sessions_;
  metrics::Registry& registry_;
  const std::string instance_id_;
  std::atomic<bool> draining_{false};

  std::mutex checks_mutex_;
  std::condition_variable checks_wake_;
  Checked checked_;
  bool stopping_ = false;
  std::thread checker_;  // started by the first lastChecks()
};

}  // namespace app
