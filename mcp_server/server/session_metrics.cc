#include "server/session_metrics.h"

#include <string_view>
#include <vector>

namespace server {
namespace {

constexpr const char* kRefusals = "sandbox_mcp_busy_refusals_total";
constexpr const char* kRefusalsHelp =
    "Calls refused because a limit was reached (limit: sessions, sessions_per_client, "
    "executions, executions_per_client, builds).";
constexpr const char* kCreate = "sandbox_mcp_session_create_seconds";
constexpr const char* kCreateHelp =
    "Time from a new session's request to its sandbox answering (source: pool or cold).";

std::vector<double> createBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

}  // namespace

SessionMetrics::SessionMetrics(metrics::Registry* registry) : registry_(registry) {
  if (registry_ == nullptr) return;
  // Registered up front so every series is scraped from the start, at 0.
  for (const char* limit : {kSessionsLimit, kSessionsPerClientLimit, kExecutionsLimit,
                            kExecutionsPerClientLimit, kBuildsLimit}) {
    refusals_.emplace(limit, &registry_->counter(kRefusals, kRefusalsHelp, {{"limit", limit}}));
  }
  pooled_ = &registry_->histogram(kCreate, kCreateHelp, createBuckets(), {{"source", "pool"}});
  cold_ = &registry_->histogram(kCreate, kCreateHelp, createBuckets(), {{"source", "cold"}});
  constexpr const char* kSidecar = "sandbox_mcp_sidecar_requests_total";
  constexpr const char* kSidecarHelp =
      "Requests from sandboxes to allowlisted MCP servers, by the sidecar's decision (allowed, "
      "denied by the policy, error: allowed, then failed upstream).";
  sidecar_allowed_ = &registry_->counter(kSidecar, kSidecarHelp, {{"decision", "allowed"}});
  sidecar_denied_ = &registry_->counter(kSidecar, kSidecarHelp, {{"decision", "denied"}});
  sidecar_errors_ = &registry_->counter(kSidecar, kSidecarHelp, {{"decision", "error"}});
  constexpr const char* kEgress = "sandbox_mcp_egress_requests_total";
  constexpr const char* kEgressHelp =
      "Connections from sandboxes through their egress proxy, by its decision (allowed, denied "
      "by the egress rules, error: a bad request, or allowed and then failed).";
  egress_allowed_ = &registry_->counter(kEgress, kEgressHelp, {{"decision", "allowed"}});
  egress_denied_ = &registry_->counter(kEgress, kEgressHelp, {{"decision", "denied"}});
  egress_errors_ = &registry_->counter(kEgress, kEgressHelp, {{"decision", "error"}});
  constexpr const char* kEgressBytes = "sandbox_mcp_egress_bytes_total";
  constexpr const char* kEgressBytesHelp =
      "Bytes through sandboxes' egress proxies (direction: up, from the sandbox; down, to it).";
  egress_up_ = &registry_->counter(kEgressBytes, kEgressBytesHelp, {{"direction", "up"}});
  egress_down_ = &registry_->counter(kEgressBytes, kEgressBytesHelp, {{"direction", "down"}});
  failed_ = &registry_->counter("sandbox_mcp_session_create_failures_total",
                                "New sessions whose sandbox could not be created.");
}

void SessionMetrics::refused(const char* limit) const {
  if (const auto it = refusals_.find(std::string_view(limit)); it != refusals_.end()) {
    it->second->inc();
  }
}

void SessionMetrics::created(bool from_pool, double seconds) const {
  if (registry_ != nullptr) (from_pool ? pooled_ : cold_)->observe(seconds);
}

void SessionMetrics::sidecarDecisions(std::uint64_t allowed, std::uint64_t denied,
                                      std::uint64_t errors) const {
  if (registry_ == nullptr) return;
  sidecar_allowed_->inc(static_cast<double>(allowed));
  sidecar_denied_->inc(static_cast<double>(denied));
  sidecar_errors_->inc(static_cast<double>(errors));
}

void SessionMetrics::egressDecisions(std::uint64_t allowed, std::uint64_t denied,
                                     std::uint64_t errors, std::uint64_t bytes_up,
                                     std::uint64_t bytes_down) const {
  if (registry_ == nullptr) return;
  egress_allowed_->inc(static_cast<double>(allowed));
  egress_denied_->inc(static_cast<double>(denied));
  egress_errors_->inc(static_cast<double>(errors));
  egress_up_->inc(static_cast<double>(bytes_up));
  egress_down_->inc(static_cast<double>(bytes_down));
}

void SessionMetrics::creationFailed() const {
  if (failed_ != nullptr) failed_->inc();
}

}  // namespace server
