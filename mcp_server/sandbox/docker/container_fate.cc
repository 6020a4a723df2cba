#include "sandbox/docker/container_fate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "common/json_limits.h"
#include "sandbox/log.h"

namespace sandbox::docker {
namespace {

using Clock = std::chrono::system_clock;

constexpr std::chrono::milliseconds kLateOomGrace{1000};

// "seconds.nanoseconds", the precision the events API accepts for since/until.
std::string unixTimestampNow() {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  char text[48];
  std::snprintf(text, sizeof text, "%lld.%09lld", static_cast<long long>(ns / 1000000000),
                static_cast<long long>(ns % 1000000000));
  return text;
}

std::optional<ContainerFate> readFateOnce(EngineClient& engine, const std::string& container_id,
                                          std::int64_t since_unix) {
  const nlohmann::json filters = {
      {"container", {container_id}}, {"type", {"container"}}, {"event", {"oom", "die"}}};
  // With `until` in the past the engine answers from its event log and ends the reply.
  const auto reply = engine.request(Method::kGet, "/events?since=" + std::to_string(since_unix) +
                                                      "&until=" + unixTimestampNow() +
                                                      "&filters=" + urlEncode(filters.dump()));
  ContainerFate fate;
  bool died = false;
  std::size_t start = 0;
  while (start < reply.body.size()) {
    auto end = reply.body.find('\n', start);
    if (end == std::string::npos) end = reply.body.size();
    const auto event =
        common::parseBoundedOrDiscarded(std::string_view(reply.body).substr(start, end - start));
    start = end + 1;
    if (!event.is_object()) continue;
    const std::string action = event.value("Action", std::string());
    if (action == "oom") fate.oom_killed = true;
    if (action == "die") {
      died = true;
      const auto actor = event.value("Actor", nlohmann::json::object());
      const auto attributes = actor.value("Attributes", nlohmann::json::object());
      if (attributes.contains("exitCode") && attributes["exitCode"].is_string()) {
        fate.exit_code = std::atoi(attributes["exitCode"].get<std::string>().c_str());
      }
    }
  }
  if (!died) return std::nullopt;
  return fate;
}

}  // namespace

std::optional<ContainerFate> waitForContainerFate(EngineClient& engine,
                                                  const std::string& container_id,
                                                  std::int64_t since_unix,
                                                  std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  std::optional<ContainerFate> killed_without_oom;
  for (;;) {
    try {
      auto fate = readFateOnce(engine, container_id, since_unix);
      if (fate && (fate->oom_killed || fate->exit_code != 137)) return fate;
      if (fate && !killed_without_oom) {
        // The runtime's shim reports the cgroup's OOM asynchronously: under gVisor the "oom"
        // event can follow "die". A SIGKILL with no "oom" yet gets a short grace to tell the two
        // apart.
        killed_without_oom = fate;
        deadline = std::min(deadline, std::chrono::steady_clock::now() + kLateOomGrace);
      }
    } catch (const std::exception& e) {
      logger().warn("reading the fate of container {} failed: {}", container_id.substr(0, 12),
                    e.what());
      return killed_without_oom;
    }
    if (std::chrono::steady_clock::now() >= deadline) return killed_without_oom;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string describeFate(const ContainerFate& fate, std::int64_t memory_mib) {
  if (fate.oom_killed) {
    return "the sandbox was killed because it exceeded its memory limit of " +
           std::to_string(memory_mib) +
           " MiB; its state is lost. Start a new session and use less memory (or ask for a "
           "larger limit)";
  }
  if (fate.exit_code == 137) {
    // What the engine reported comes first; memory is only a guess here (under gVisor the engine
    // does not always learn of a cgroup OOM kill, see above).
    return "the sandbox was killed (SIGKILL, exit code 137) and the engine reported no "
           "out-of-memory kill: it was stopped from outside (its gVisor process killed, or the "
           "container removed) or hit its process limit; if it was using much memory, its "
           "limit of " +
           std::to_string(memory_mib) +
           " MiB may still be the cause. Its state is lost. Start a new session";
  }
  return "the sandbox's agent exited with code " + std::to_string(fate.exit_code) +
         "; its state is lost. Start a new session";
}

}  // namespace sandbox::docker
