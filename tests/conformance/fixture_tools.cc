// Content and diagnostic tools of the conformance fixtures.
#include <chrono>
#include <thread>

#include "fixtures.h"

namespace conformance {
namespace {

using tools::json;
using tools::Tool;
using tools::ToolContext;
using tools::ToolResult;

json noArguments() { return {{"type", "object"}, {"properties", json::object()}}; }

Tool tool(std::string name, std::string description, tools::ToolHandler handler) {
  Tool out;
  out.spec.name = std::move(name);
  out.spec.description = std::move(description);
  out.spec.input_schema = noArguments();
  out.spec.output_schema = nullptr;
  out.handler = std::move(handler);
  return out;
}

ToolResult content(json blocks) {
  ToolResult result;
  result.extra_content = std::move(blocks);
  return result;
}

json image() { return {{"type", "image"}, {"data", kPngBase64}, {"mimeType", "image/png"}}; }

json embedded(const std::string& uri, const std::string& mime, const std::string& body) {
  return {{"type", "resource"}, {"resource", {{"uri", uri}, {"mimeType", mime}, {"text", body}}}};
}

void pause() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

}  // namespace

void registerContentTools(tools::ToolRegistry& registry) {
  registry.add(
      tool("test_simple_text", "Tests simple text content response", [](const json&, ToolContext&) {
        return text("This is a simple text response for testing.");
      }));
  registry.add(tool("test_image_content", "Tests image content response",
                    [](const json&, ToolContext&) { return content(json::array({image()})); }));
  registry.add(
      tool("test_audio_content", "Tests audio content response", [](const json&, ToolContext&) {
        return content(
            json::array({{{"type", "audio"}, {"data", kWavBase64}, {"mimeType", "audio/wav"}}}));
      }));
  registry.add(tool("test_embedded_resource", "Tests embedded resource content response",
                    [](const json&, ToolContext&) {
                      return content(
                          json::array({embedded("test://embedded-resource", "text/plain",
                                                "This is an embedded resource content.")}));
                    }));
  registry.add(tool("test_multiple_content_types",
                    "Tests response with multiple content types (text, image, resource)",
                    [](const json&, ToolContext&) {
                      ToolResult result = text("Multiple content types test:");
                      result.extra_content = json::array(
                          {image(), embedded("test://mixed-content-resource", "application/json",
                                             json{{"test", "data"}, {"value", 123}}.dump())});
                      return result;
                    }));
  registry.add(
      tool("test_error_handling", "Tests error response handling", [](const json&, ToolContext&) {
        return ToolResult::failure("This tool intentionally returns an error for testing");
      }));
  registry.add(tool("test_tool_with_progress", "Tests tool that reports progress notifications",
                    [](const json&, ToolContext& ctx) {
                      for (const std::uint64_t step : {0U, 50U, 100U}) {
                        if (step != 0) pause();
                        ctx.updates.progressOf(
                            step, 100, "Completed step " + std::to_string(step) + " of 100");
                      }
                      return text("Progress reported: 0, 50 and 100 of 100");
                    }));
  registry.add(tool("test_tool_with_logging", "Tests tool that emits log messages during execution",
                    [](const json&, ToolContext& ctx) {
                      ctx.updates.log("conformance", "Tool execution started");
                      pause();
                      ctx.updates.log("conformance", "Tool processing data");
                      pause();
                      ctx.updates.log("conformance", "Tool execution completed");
                      return text("Tool with logging executed successfully");
                    }));
}

void registerStatelessTools(tools::ToolRegistry& registry, mcp::Subscriptions& subscriptions) {
  Tool needs_sampling = tool("test_missing_capability", "Test tool requiring sampling",
                             [](const json&, ToolContext&) { return text("Success"); });
  needs_sampling.spec.required_client_capabilities = {{"sampling", json::object()}};
  registry.add(std::move(needs_sampling));
  registry.add(tool("test_streaming_elicitation",
                    "Diagnostic tool validating response progress streams",
                    [](const json&, ToolContext& ctx) {
                      ctx.updates.progressOf(50, 100, "halfway");
                      return text("Streaming complete");
                    }));
  registry.add(tool("test_logging_tool", "Diagnostic logging validator tool",
                    [](const json&, ToolContext& ctx) {
                      ctx.updates.log("conformance", "Diagnostic trace logging activated");
                      return text("Logging evaluated");
                    }));
  registry.add(tool("test_trigger_tool_change", "Announces a tools/list change to listen streams",
                    [&subscriptions](const json&, ToolContext&) {
                      subscriptions.toolsChanged();
                      return text("Mutation triggered");
                    }));
  registry.add(tool("test_trigger_prompt_change",
                    "Announces a prompts/list change to listen streams",
                    [&subscriptions](const json&, ToolContext&) {
                      subscriptions.promptsChanged();
                      return text("Mutation triggered");
                    }));
  Tool header = tool("test_header_param", "Echoes a parameter clients send as Mcp-Param-Region",
                     [](const json& arguments, ToolContext&) {
                       return text("region: " + arguments.value("region", std::string("none")));
                     });
  header.spec.input_schema = {
      {"type", "object"},
      {"properties", {{"region", {{"type", "string"}, {"x-mcp-header", "Region"}}}}}};
  registry.add(std::move(header));
  // JSON Schema 2020-12 keywords tools/list must pass through untouched (SEP-1613, SEP-2106).
  Tool schema_2020_12 =
      tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features (SEP-1613)",
           [](const json& arguments, ToolContext&) {
             return text("JSON Schema 2020-12 tool called with: " + arguments.dump());
           });
  schema_2020_12.spec.input_schema = {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"type", "object"},
      {"$defs",
       {{"address",
         {{"$anchor", "addressDef"},
          {"type", "object"},
          {"properties", {{"street", {{"type", "string"}}}, {"city", {{"type", "string"}}}}}}}}},
      {"properties",
       {{"name", {{"type", "string"}}},
        {"address", {{"$ref", "#/$defs/address"}}},
        {"contactMethod", {{"type", "string"}, {"enum", {"phone", "email"}}}},
        {"phone", {{"type", "string"}}},
        {"email", {{"type", "string"}}}}},
      {"allOf",
       json::array(
           {{{"anyOf", json::array({{{"required", {"phone"}}}, {{"required", {"email"}}}})}}})},
      {"if",
       {{"properties", {{"contactMethod", {{"const", "phone"}}}}},
        {"required", json::array({"contactMethod"})}}},
      {"then", {{"required", json::array({"phone"})}}},
      {"else", {{"required", json::array({"email"})}}},
      {"additionalProperties", false}};
  registry.add(std::move(schema_2020_12));
}

}  // namespace conformance
