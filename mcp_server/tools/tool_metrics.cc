#include "tools/tool_metrics.h"

#include <vector>

namespace tools {
namespace {

std::vector<double> callBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
          0.5,    1,     2.5,    5,     10,   30,    60,   300};
}

// The status label: what the model was told. Bounded: a status is one of the tools' own words,
// never text from the sandbox (a status string longer than a word counts as "other").
std::string outcomeOf(const ToolResult& result) {
  constexpr std::size_t kMaxStatusChars = 16;
  const auto status = result.structured.find("status");
  if (status != result.structured.end() && status->is_string()) {
    const auto& text = status->get_ref<const std::string&>();
    return text.size() <= kMaxStatusChars ? text : "other";
  }
  return result.is_error ? "error" : "ok";
}

}  // namespace

void ToolMetrics::record(const std::string& tool, const ToolResult& result, double seconds) const {
  if (registry_ == nullptr) return;
  registry_
      ->counter("sandbox_mcp_tool_calls_total", "Tool calls by tool and outcome.",
                {{"tool", tool}, {"status", outcomeOf(result)}})
      .inc();
  registry_
      ->histogram("sandbox_mcp_tool_call_seconds",
                  "Duration of tool calls inside the server, by tool (an execution's includes "
                  "its run time).",
                  callBuckets(), {{"tool", tool}})
      .observe(seconds);
}

}  // namespace tools
