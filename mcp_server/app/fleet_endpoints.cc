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

FleetEndpoints::~FleetEndpoints() {
  {
    const std::lock_guard lock(checks_mutex_);
    stopping_ = true;
  }
  checks_wake_.notify_all();
  if (checker_.joinable()) checker_.join();
}

FleetEndpoints::Checked FleetEndpoints::lastChecks() {
  std::unique_lock lock(checks_mutex_);
  if (!checker_.joinable() && !stopping_) {
    checker_ = std::thread([this] { checkLoop(); });
    // The first probe waits for the first result, briefly: a new replica is not ready before.
    checks_wake_.wait_for(lock, std::chrono::seconds(1),
                          [this] { return !checked_.checks.empty(); });
  }
  return checked_;
}

void FleetEndpoints::checkLoop() {
  std::unique_lock lock(checks_mutex_);
  while (!stopping_) {
    lock.unlock();
    Checked result;
    try {
      result.checks = backend_.healthChecks();
    } catch (const std::exception& e) {
      result.checks = {{"docker engine", false, e.what()}};
    }
    result.at = std::chrono::steady_clock::now();
    lock.lock();
    checked_ = std::move(result);
    checks_wake_.notify_all();
    checks_wake_.wait_for(lock, kCheckEvery, [this] { return stopping_; });
  }
}

transport::PlainResponse FleetEndpoints::readyz() {
  nlohmann::json failed = nlohmann::json::array();
  nlohmann::json all = nlohmann::json::array();
  const auto checked = lastChecks();
  const auto age = std::chrono::steady_clock::now() - checked.at;
  if (checked.checks.empty()) {
    failed.push_back("checks not done yet");
  } else if (age > kChecksStale) {
    failed.push_back("checks stale: the engine has not answered for " +
                     std::to_string(std::chrono::duration_cast<std::chrono::seconds>(age).count()) +
                     " s");
  }
  for (const auto& check : checked.checks) {
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
      {"checked_ms_ago",
       checked.checks.empty()
           ? nlohmann::json(nullptr)
           : nlohmann::json(std::chrono::duration_cast<std::chrono::milliseconds>(age).count())},
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
