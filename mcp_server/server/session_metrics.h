// What the session layer counts for GET /metrics: calls refused at a limit ("busy"), and how
// long new sessions take to reach their sandbox (from the warm pool or created cold). Without a
// registry it counts nothing (unit tests). Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "metrics/registry.h"

namespace server {

class SessionMetrics {
 public:
  // The limits a refusal names (its `limit` label).
  static constexpr const char* kSessionsLimit = "sessions";
  static constexpr const char* kSessionsPerClientLimit = "sessions_per_client";
  static constexpr const char* kExecutionsLimit = "executions";
  static constexpr const char* kExecutionsPerClientLimit = "executions_per_client";
  static constexpr const char* kBuildsLimit = "builds";

  explicit SessionMetrics(metrics::Registry* registry = nullptr);  // no-throw when null

  void refused(const char* limit) const;
  void created(bool from_pool, double seconds) const;
  void creationFailed() const;
  // Decisions of sessions' MCP sidecars (their audit logs), counted as the logs are read.
  void sidecarDecisions(std::uint64_t allowed, std::uint64_t denied, std::uint64_t errors) const;
  // The same for their egress proxies, with the bytes relayed each way.
  void egressDecisions(std::uint64_t allowed, std::uint64_t denied, std::uint64_t errors,
                       std::uint64_t bytes_up, std::uint64_t bytes_down) const;

 private:
  // Counters are looked up once here: the counting calls take no lock (refused() runs under the
  // session registry's lock, which /metrics' callbacks take too).
  metrics::Registry* registry_;
  std::map<std::string, metrics::Counter*, std::less<>> refusals_;
  metrics::Histogram* pooled_ = nullptr;
  metrics::Histogram* cold_ = nullptr;
  metrics::Counter* failed_ = nullptr;
  metrics::Counter* sidecar_allowed_ = nullptr;
  metrics::Counter* egress_allowed_ = nullptr;
  metrics::Counter* egress_denied_ = nullptr;
  metrics::Counter* egress_errors_ = nullptr;
  metrics::Counter* egress_up_ = nullptr;
  metrics::Counter* egress_down_ = nullptr;
  metrics::Counter* sidecar_denied_ = nullptr;
  metrics::Counter* sidecar_errors_ = nullptr;
};

}  // namespace server
