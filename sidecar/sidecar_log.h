// The "sidecar" spdlog logger, writing to stderr. Thread-safe (spdlog loggers are).
#pragma once

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>

namespace sidecar {

inline spdlog::logger& log() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("sidecar")) return existing;
    return spdlog::stderr_color_mt("sidecar");
  }();
  return *logger;
}

}  // namespace sidecar
