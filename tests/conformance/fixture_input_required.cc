// Input-required (MRTR) tools of the conformance fixtures: each asks the client for input, then
// answers from the inputResponses and its own state (sealed by the MCP layer, which also drops
// requests for capabilities the client did not declare).
#include <string>

#include "fixtures.h"

namespace conformance {
namespace {

using tools::json;
using tools::Tool;
using tools::ToolContext;
using tools::ToolInputs;
using tools::ToolResult;

json sample(const std::string& prompt, int max_tokens) {
  return {{"method", "sampling/createMessage"},
          {"params",
           {{"messages",
             json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", prompt}}}}})},
            {"maxTokens", max_tokens}}}};
}

json roots() { return {{"method", "roots/list"}, {"params", json::object()}}; }

// responses[key].content[field] as text, or `fallback`.
std::string field(const json& responses, const std::string& key, const std::string& name,
                  const std::string& fallback = "unknown") {
  const json content = responses.value(key, json::object()).value("content", json::object());
  if (!content.is_object()) return fallback;
  const json value = content.value(name, json());
  return value.is_string() ? value.get<std::string>() : fallback;
}

std::size_t rootCount(const json& responses, const std::string& key) {
  const json list = responses.value(key, json::object()).value("roots", json::array());
  return list.is_array() ? list.size() : 0;
}

const ToolInputs& inputsOf(const ToolContext& ctx) {
  static const ToolInputs kNone;
  return ctx.inputs != nullptr ? *ctx.inputs : kNone;
}

std::string stateKind(const ToolInputs& inputs) {
  return inputs.state.is_object() ? inputs.state.value("kind", "") : "";
}

Tool tool(std::string name, std::string description,
          std::function<ToolResult(const ToolInputs&)> handler) {
  Tool out;
  out.spec.name = std::move(name);
  out.spec.description = std::move(description);
  out.spec.input_schema = {{"type", "object"}, {"properties", json::object()}};
  out.spec.output_schema = nullptr;
  out.handler = [handler = std::move(handler)](const json&, ToolContext& ctx) {
    return handler(inputsOf(ctx));
  };
  return out;
}

ToolResult multiRound(const ToolInputs& in) {
  const json& responses = in.responses;
  const int round = in.state.is_object() ? in.state.value("round", 0) : 0;
  if (round == 1 && responses.contains("step1")) {
    return ToolResult::inputRequired(
        {{"step2", elicitRequest("Step 2: What is your favorite color?", "color", "string")}},
        {{"round", 2}, {"name", field(responses, "step1", "name")}});
  }
  if (round == 2 && responses.contains("step2")) {
    return text("Multi-round complete for " + in.state.value("name", std::string("friend")) +
                " who likes " + field(responses, "step2", "color"));
  }
  return ToolResult::inputRequired(
      {{"step1", elicitRequest("Step 1: What is your name?", "name", "string")}}, {{"round", 1}});
}

}  // namespace

void registerInputRequiredTools(tools::ToolRegistry& registry) {
  registry.add(tool("test_input_required_result_elicitation",
                    "MRTR: returns InputRequiredResult with elicitation request",
                    [](const ToolInputs& in) {
                      if (in.responses.contains("user_name")) {
                        return text("Hello, " + field(in.responses, "user_name", "name") + "!");
                      }
                      return ToolResult::inputRequired(
                          {{"user_name", elicitRequest("What is your name?", "name", "string")}});
                    }));
  registry.add(tool("test_input_required_result_sampling",
                    "MRTR: returns InputRequiredResult with sampling request",
                    [](const ToolInputs& in) {
                      if (in.responses.contains("sample_request")) {
                        return text("Sampling result: " +
                                    field(in.responses, "sample_request", "text", "no response"));
                      }
                      return ToolResult::inputRequired(
                          {{"sample_request", sample("What is the capital of France?", 100)}});
                    }));
  registry.add(
      tool("test_input_required_result_list_roots",
           "MRTR: returns InputRequiredResult with roots/list request", [](const ToolInputs& in) {
             if (in.responses.contains("roots_request")) {
               return text("Found " + std::to_string(rootCount(in.responses, "roots_request")) +
                           " root(s)");
             }
             return ToolResult::inputRequired({{"roots_request", roots()}});
           }));
  registry.add(tool(
      "test_input_required_result_request_state",
      "MRTR: returns InputRequiredResult with requestState", [](const ToolInputs& in) {
        const json ok =
            in.responses.value("confirm", json::object()).value("content", json::object());
        if (stateKind(in) == "request-state" && ok.is_object() && ok.value("ok", false) == true) {
          return text("state-ok: requestState validated");
        }
        return ToolResult::inputRequired(
            {{"confirm", elicitRequest("Please confirm", "ok", "boolean")}},
            {{"kind", "request-state"}});
      }));
  registry.add(tool("test_input_required_result_multiple_inputs",
                    "MRTR: returns InputRequiredResult with multiple input requests",
                    [](const ToolInputs& in) {
                      const json& r = in.responses;
                      if (stateKind(in) == "multiple-inputs" && r.contains("user_name") &&
                          r.contains("greeting") && r.contains("client_roots")) {
                        return text("Name: " + field(r, "user_name", "name") +
                                    "; Greeting: " + field(r, "greeting", "text", "Hello there!") +
                                    "; Roots: " + std::to_string(rootCount(r, "client_roots")));
                      }
                      return ToolResult::inputRequired(
                          {{"user_name", elicitRequest("What is your name?", "name", "string")},
                           {"greeting", sample("Generate a greeting", 50)},
                           {"client_roots", roots()}},
                          {{"kind", "multiple-inputs"}});
                    }));
  registry.add(tool("test_input_required_result_multi_round",
                    "MRTR: multi-round InputRequiredResult workflow", multiRound));
  registry.add(tool("test_input_required_result_tampered_state",
                    "MRTR: integrity-protected requestState", [](const ToolInputs& in) {
                      if (stateKind(in) == "tamper-test" && in.responses.contains("confirm")) {
                        return text("integrity-ok: state verified");
                      }
                      return ToolResult::inputRequired(
                          {{"confirm", elicitRequest("Please confirm", "ok", "boolean")}},
                          {{"kind", "tamper-test"}});
                    }));
  registry.add(tool("test_input_required_result_capabilities",
                    "MRTR: respects client capabilities in inputRequests",
                    [](const ToolInputs& in) {
                      if (!in.responses.empty()) {
                        std::string keys;
                        for (const auto& [key, value] : in.responses.items()) {
                          keys += (keys.empty() ? "" : ",") + key;
                        }
                        return text("capabilities-ok: received " + keys);
                      }
                      // The MCP layer keeps only those the client declared a capability for.
                      return ToolResult::inputRequired(
                          {{"elicit_input", elicitRequest("Elicitation input", "value", "string")},
                           {"sample_input", sample("Sample request", 50)}},
                          {{"kind", "capabilities-test"}});
                    }));
}

}  // namespace conformance
