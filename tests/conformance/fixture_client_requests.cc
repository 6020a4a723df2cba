// 2025-11-25 tools of the conformance fixtures that ask their client while they run (sampling,
// elicitation), through ClientUpdates::askClient (the MCP layer sends the request on the call's
// stream and waits for the answer).
#include <string>

#include "fixtures.h"

namespace conformance {
namespace {

using tools::json;
using tools::Tool;
using tools::ToolContext;
using tools::ToolResult;

// Asks, and renders the answer with `render`; a client that cannot be asked gets a message.
ToolResult ask(ToolContext& ctx, const std::string& method, const json& params,
               const std::function<std::string(const json&)>& render) {
  try {
    const auto answer = ctx.updates.askClient(method, params);
    if (!answer) return text(method + " is not available: the client did not declare it");
    return text(render(*answer));
  } catch (const std::runtime_error& e) {
    return text(method + " failed: " + e.what());
  }
}

std::string elicitation(const json& answer, const std::string& prefix) {
  return prefix + "action=" + answer.value("action", std::string("?")) +
         ", content=" + answer.value("content", json::object()).dump();
}

Tool tool(std::string name, std::string description, json properties, json required,
          tools::ToolHandler handler) {
  Tool out;
  out.spec.name = std::move(name);
  out.spec.description = std::move(description);
  out.spec.input_schema = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) out.spec.input_schema["required"] = std::move(required);
  out.spec.output_schema = nullptr;
  out.handler = std::move(handler);
  return out;
}

json withDefaultsSchema() {
  return {{"type", "object"},
          {"properties",
           {{"name", {{"type", "string"}, {"description", "User name"}, {"default", "John Doe"}}},
            {"age", {{"type", "integer"}, {"description", "User age"}, {"default", 30}}},
            {"score", {{"type", "number"}, {"description", "User score"}, {"default", 95.5}}},
            {"status",
             {{"type", "string"},
              {"description", "User status"},
              {"enum", {"active", "inactive", "pending"}},
              {"default", "active"}}},
            {"verified",
             {{"type", "boolean"}, {"description", "Verification status"}, {"default", true}}}}},
          {"required", json::array()}};
}

json titled(const std::string& prefix, const std::vector<std::string>& titles) {
  json out = json::array();
  for (std::size_t i = 0; i < titles.size(); ++i) {
    out.push_back({{"const", prefix + std::to_string(i + 1)}, {"title", titles[i]}});
  }
  return out;
}

json enumsSchema() {
  const json options{"option1", "option2", "option3"};
  return {{"type", "object"},
          {"properties",
           {{"untitledSingle",
             {{"type", "string"}, {"description", "Select one option"}, {"enum", options}}},
            {"titledSingle",
             {{"type", "string"},
              {"description", "Select one option with titles"},
              {"oneOf", titled("value", {"First Option", "Second Option", "Third Option"})}}},
            {"legacyEnum",
             {{"type", "string"},
              {"description", "Select one option (legacy)"},
              {"enum", {"opt1", "opt2", "opt3"}},
              {"enumNames", {"Option One", "Option Two", "Option Three"}}}},
            {"untitledMulti",
             {{"type", "array"},
              {"description", "Select multiple options"},
              {"minItems", 1},
              {"maxItems", 3},
              {"items", {{"type", "string"}, {"enum", options}}}}},
            {"titledMulti",
             {{"type", "array"},
              {"description", "Select multiple options with titles"},
              {"minItems", 1},
              {"maxItems", 3},
              {"items",
               {{"anyOf", titled("value", {"First Choice", "Second Choice", "Third Choice"})}}}}}}},
          {"required", json::array()}};
}

}  // namespace

void registerClientRequestTools(tools::ToolRegistry& registry) {
  registry.add(tool(
      "test_sampling", "Tests server-initiated sampling (LLM completion request)",
      {{"prompt", {{"type", "string"}, {"description", "The prompt to send to the LLM"}}}},
      json::array({"prompt"}), [](const json& arguments, ToolContext& ctx) {
        const json params{
            {"messages",
             json::array(
                 {{{"role", "user"},
                   {"content", {{"type", "text"}, {"text", arguments.value("prompt", "")}}}}})},
            {"maxTokens", 100}};
        return ask(ctx, "sampling/createMessage", params, [](const json& answer) {
          const json content = answer.value("content", json::object());
          const json reply = content.is_object() ? content.value("text", json()) : json();
          return "LLM response: " + (reply.is_string() ? reply.get<std::string>() : "No response");
        });
      }));
  registry.add(
      tool("test_elicitation", "Tests server-initiated elicitation (user input request)",
           {{"message", {{"type", "string"}, {"description", "The message to show the user"}}}},
           json::array({"message"}), [](const json& arguments, ToolContext& ctx) {
             const json params{
                 {"message", arguments.value("message", "")},
                 {"requestedSchema",
                  {{"type", "object"},
                   {"properties",
                    {{"response", {{"type", "string"}, {"description", "User's response"}}}}},
                   {"required", json::array({"response"})}}}};
             return ask(ctx, "elicitation/create", params,
                        [](const json& answer) { return elicitation(answer, "User response: "); });
           }));
  registry.add(tool(
      "test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034",
      json::object(), json::array(), [](const json&, ToolContext& ctx) {
        const json params{{"message", "Please review and update the form fields with defaults"},
                          {"requestedSchema", withDefaultsSchema()}};
        return ask(ctx, "elicitation/create", params, [](const json& answer) {
          return elicitation(answer, "Elicitation completed: ");
        });
      }));
  registry.add(tool("test_elicitation_sep1330_enums",
                    "Tests elicitation with enum schema improvements per SEP-1330", json::object(),
                    json::array(), [](const json&, ToolContext& ctx) {
                      const json params{{"message", "Please select options from the enum fields"},
                                        {"requestedSchema", enumsSchema()}};
                      return ask(ctx, "elicitation/create", params, [](const json& answer) {
                        return elicitation(answer, "Elicitation completed: ");
                      });
                    }));
}

}  // namespace conformance
