// Helpers shared by the Docker backend's integration tests (real dockerd, real agent): options
// and specs for test sandboxes, engine look-ups, and running code. Every container carries this
// process's pid label; docker_test_support.cc registers the sweep that fails the run if any is
// left behind.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/docker/docker_backend.h"
#include "sandbox/docker/docker_sandbox.h"

namespace docker_test {

using nlohmann::json;
using namespace sandbox;
using namespace sandbox::docker;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

inline constexpr const char* kImage = "sandbox-mcp/python:latest";

inline double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

inline std::string uniqueSuffix() {
  std::random_device device;
  return std::to_string(::getpid()) + "-" + std::to_string(device() % 1000000);
}

inline DockerBackendOptions options(const std::string& instance = "it-" + uniqueSuffix()) {
  DockerBackendOptions out;
  out.agent_path = SANDBOX_AGENT_PATH;
  out.instance_id = instance;
  return out;
}

inline SandboxSpec spec(const std::string& runtime = "runsc") {
  SandboxSpec out;
  out.image = kImage;
  out.runtime = runtime;
  out.limits.memory_mib = 512;
  out.limits.pids = 256;
  return out;
}

// GET /containers/{id}/json, or nullopt when the container no longer exists.
inline std::optional<json> inspect(EngineClient& engine, const std::string& id) {
  try {
    return engine.request(Method::kGet, "/containers/" + id + "/json").json();
  } catch (const EngineError& e) {
    if (e.isNotFound()) return std::nullopt;
    throw;
  }
}

inline bool goneWithin(EngineClient& engine, const std::string& id,
                       std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (!inspect(engine, id)) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

inline std::vector<std::string> containersOfThisProcess(EngineClient& engine) {
  const json filters = {{"label", {std::string(kLabelPid) + "=" + std::to_string(::getpid())}}};
  std::vector<std::string> ids;
  for (const auto& item :
       engine.request(Method::kGet, "/containers/json?all=1&filters=" + urlEncode(filters.dump()))
           .json()) {
    ids.push_back(item.at("Id").get<std::string>());
  }
  return ids;
}

inline ExecResult run(Sandbox& sandbox, ExecKind kind, const std::string& code,
                      std::chrono::milliseconds timeout = 20s) {
  CancelToken cancel;
  ExecRequest request;
  request.kind = kind;
  request.code = code;
  request.timeout = timeout;
  return sandbox.exec(request, cancel, nullptr);
}

inline ExecResult python(Sandbox& sandbox, const std::string& code) {
  return run(sandbox, ExecKind::kPython, code);
}

}  // namespace docker_test
