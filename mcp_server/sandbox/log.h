// The sandbox component's spdlog logger (stderr, name "sandbox"). Thread-safe.
#pragma once

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>

namespace sandbox {

inline spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("sandbox")) return existing;
    auto created = spdlog::stderr_color_mt("sandbox");
    created->set_level(spdlog::get_level());
    return created;
  }();
  return *logger;
}

}  // namespace sandbox
