#include "app/fleet_endpoints.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace app {

bool isRequiredCheck(const std::string& name, const config::ServerConfig& config) {
  if (name == "docker engine" || name == "default image" || name == "sandbox agent") return true;
  // Without runsc no session starts, unless the operator accepted runc.
  return name == "runsc runtime" && config.sandbox.runtime == "runsc" &&
         !config.sandbox.allow_runc_fallback;
}

FleetEndpoints::FleetEndpoints(const config::ServerConfig& config, sandbox::Backend& backend,
                               server::SessionRegistry& sessions, metrics::Registry& registry,
                               std::string instance_id)
    : config_(config),
      backend_(backend),
      sessions_(sessions),
      registry_(registry),
      instance_id_(std::move(instance_id)) {}

std::map<std::string, transport::PlainHandler> FleetEndpoints::handlers() {
  return {{"/healthz", [this] { return healthz(); }},
          {"/readyz", [this] { return readyz(); }},
          {"/metrics", [this] { return metrics(); }}};
}

transport::PlainResponse FleetEndpoints::healthz() const {
  return {200, "text/plain; charset=utf-8", draining_ ? "ok (draining)\n" : "ok\n", {}};
}

std::vector<sandbox::HealthCheck> FleetEndpoints::checks() {
  const std::lock_guard lock(checks_mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (cached_checks_.empty() || now - checked_at_ >= kChecksTtl) {
    try {
      cached_checks_ = backend_.healthChecks();
    } catch (const std::exception& e) {
      cached_checks_ = {{"docker engine", false, e.what()}};
    }
    checked_at_ = now;
  }
  return cached_checks_;
}

transport::PlainResponse FleetEndpoints::readyz() {
  nlohmann::json failed = nlohmann::json::array();
  nlohmann::json all = nlohmann::json::array();
  for (const auto& check : checks()) {
    all.push_back({{"name", check.name}, {"ok", check.ok}, {"detail", check.detail}});
    if (!check.ok && isRequiredCheck(check.name, config_)) failed.push_back(check.name);
  }
  const bool draining = draining_;
  const bool ready = !draining && failed.empty();
  const auto pool = sessions_.factory().poolStats();
  nlohmann::json body = {
      {"ready", ready},
      {"draining", draining},
      {"instance_id", instance_id_},
      {"failed", failed},
      {"checks", all},
      {"sessions", sessions_.size()},
      {"executions_running", sessions_.executionSlots().inUse()},
      {"pool",
       {{"size", pool.size},
        {"ready", pool.ready},
        {"claimed", pool.claimed},
        {"misses", pool.misses},
        {"failures", pool.failures},
        {"last_error", pool.last_error}}},
  };
  transport::PlainResponse response{
      ready ? 200U : 503U, "application/json", body.dump() + "\n", {}};
  if (draining) response.headers.emplace_back("Retry-After", "5");
  return response;
}

transport::PlainResponse FleetEndpoints::metrics() const {
  sessions_.refreshSidecarCounts();
  return {200, metrics::kContentType, registry_.render(), {}};
}

}  // namespace app
