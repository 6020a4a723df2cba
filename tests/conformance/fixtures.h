// The fixtures the official MCP conformance suite calls (its reference is the TypeScript
// everything-server of github.com/modelcontextprotocol/conformance): tools, prompts, resources
// and completions with the names and shapes its scenarios expect. Served by conformance_server
// through the real MCP layer; nothing here touches a sandbox.
#pragma once

#include <string>
#include <utility>

#include "mcp/completions.h"
#include "mcp/prompt_catalog.h"
#include "mcp/resource_catalog.h"
#include "mcp/subscriptions.h"
#include "tools/tool_registry.h"

namespace conformance {

// A 1x1 PNG and a short 8 kHz WAV, base64.
inline constexpr const char* kPngBase64 =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg"
    "==";
inline constexpr const char* kWavBase64 =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YRAAAACAgICAgICAgICAgICAgICA";

// A tool result of `value` as its only text.
inline tools::ToolResult text(std::string value) {
  tools::ToolResult result;
  result.text = std::move(value);
  return result;
}

// An input request (MRTR, or a task's inputRequests) asking for one form field `field` of JSON
// Schema type `type`.
inline tools::json elicitRequest(const std::string& message, const std::string& field,
                                 const std::string& type) {
  return {{"method", "elicitation/create"},
          {"params",
           {{"message", message},
            {"requestedSchema",
             {{"type", "object"},
              {"properties", {{field, {{"type", type}}}}},
              {"required", tools::json::array({field})}}}}}};
}

// test_simple_text, test_image_content, test_audio_content, test_embedded_resource,
// test_multiple_content_types, test_error_handling, test_tool_with_progress,
// test_tool_with_logging.
void registerContentTools(tools::ToolRegistry& registry);
// 2026-07-28 diagnostics: test_missing_capability, test_streaming_elicitation,
// test_logging_tool, test_trigger_tool_change, test_trigger_prompt_change, test_header_param,
// json_schema_2020_12_tool.
void registerStatelessTools(tools::ToolRegistry& registry, mcp::Subscriptions& subscriptions);
// test_input_required_result_*: input-required results (MRTR).
void registerInputRequiredTools(tools::ToolRegistry& registry);
// 2025-11-25 tools that ask their client while they run: test_sampling, test_elicitation,
// test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums.
void registerClientRequestTools(tools::ToolRegistry& registry);
// The tasks extension's (io.modelcontextprotocol/tasks): greet (never a task), slow_compute,
// failing_job, protocol_error_job, confirm_delete, multi_input, test_tool_with_task.
void registerTaskTools(tools::ToolRegistry& registry);

void registerPrompts(mcp::PromptCatalog& prompts);
void registerResources(mcp::ResourceCatalog& resources);
void registerCompletions(mcp::Completions& completions);

}  // namespace conformance
