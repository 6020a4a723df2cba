// Why a container stopped. With AutoRemove the container may be gone before anyone inspects
// it, so the reason is read from the engine's event log (the "oom" and "die" events, which the
// engine keeps in memory) rather than from inspect. Thread-safe (stateless).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "sandbox/docker/engine_client.h"

namespace sandbox::docker {

struct ContainerFate {
  int exit_code = 0;
  bool oom_killed = false;
};

// Polls the engine's events since `since_unix` until the container's "die" event shows up or
// `wait` passes; nullopt when it has not died (yet). Never throws.
[[nodiscard]] std::optional<ContainerFate> waitForContainerFate(EngineClient& engine,
                                                                const std::string& container_id,
                                                                std::int64_t since_unix,
                                                                std::chrono::milliseconds wait);

// A sentence for the user, e.g. "the sandbox was killed because it exceeded its memory limit of
// 512 MiB". Pure.
[[nodiscard]] std::string describeFate(const ContainerFate& fate, std::int64_t memory_mib);

}  // namespace sandbox::docker
