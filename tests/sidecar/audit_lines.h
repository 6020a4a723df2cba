// The sidecar tests' view of an audit log: its JSON lines, waiting a little for some that are
// still to come (a line is written when a request or connection ends, on the relay's own thread).
#pragma once

#include <chrono>
#include <cstddef>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace sidecar_test {

// The lines of `path` once there are at least `count`, or what is there after `within`.
inline std::vector<nlohmann::json> waitForAuditLines(
    const std::string& path, std::size_t count,
    std::chrono::milliseconds within = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  std::vector<nlohmann::json> lines;
  for (;;) {
    lines.clear();
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    if (lines.size() >= count || std::chrono::steady_clock::now() >= deadline) return lines;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace sidecar_test
