// What the tool layer counts for GET /metrics: calls per tool by outcome, and their duration.
// An execution's outcome is its result's status (success, error, timeout, cancelled, ...); other
// tools count "ok" or "error". Without a registry it counts nothing (unit tests). Thread-safe.
#pragma once

#include <string>

#include "metrics/registry.h"
#include "tools/tool.h"

namespace tools {

class ToolMetrics {
 public:
  explicit ToolMetrics(metrics::Registry* registry = nullptr) : registry_(registry) {}

  void record(const std::string& tool, const ToolResult& result, double seconds) const;

 private:
  metrics::Registry* registry_;
};

}  // namespace tools
