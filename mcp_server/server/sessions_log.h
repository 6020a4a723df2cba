// The sessions' spdlog logger (name "sessions"), one instance for the registry and the factory.
// Thread-safe.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>

namespace server {

inline std::shared_ptr<spdlog::logger> log() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto existing = spdlog::get("sessions");
    return existing ? existing : spdlog::default_logger()->clone("sessions");
  }();
  return logger;
}

}  // namespace server
