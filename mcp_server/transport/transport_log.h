// The "transport" spdlog logger. It writes to stderr: in stdio mode stdout carries only JSON-RPC.
// Thread-safe (created once, spdlog loggers are thread-safe).
#pragma once

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>

namespace transport {

inline spdlog::logger& log() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("transport")) return existing;
    return spdlog::stderr_color_mt("transport");
  }();
  return *logger;
}

}  // namespace transport
