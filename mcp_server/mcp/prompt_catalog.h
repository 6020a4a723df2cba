// Prompts a server offers (prompts/list, prompts/get): each a registered unit, a PromptSpec plus
// a handler that renders the messages, or asks the client for input first (MCP 2026-07-28
// input-required results). Register everything before serving; afterwards read-only and safe to
// use from any thread.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/tool.h"

namespace mcp {

struct PromptArgument {
  std::string name;
  std::string description;
  bool required = false;
};

struct PromptSpec {
  std::string name;
  std::string title;
  std::string description;
  std::vector<PromptArgument> arguments;
};

// What a prompt renders: its messages (PromptMessage objects), or input requests to the client
// (then messages are ignored; `request_state` comes back sealed like a tool's).
struct PromptResult {
  nlohmann::json messages = nlohmann::json::array();
  std::string description;
  nlohmann::json input_requests = nlohmann::json::object();
  nlohmann::json request_state = nullptr;
};

// `arguments`: the string arguments, the required ones present (checked before the call).
using PromptHandler =
    std::function<PromptResult(const nlohmann::json& arguments, const tools::ToolInputs& inputs)>;

struct Prompt {
  PromptSpec spec;
  PromptHandler handler;
};

class PromptCatalog {
 public:
  // Throws std::logic_error when a prompt of that name is registered already.
  void add(Prompt prompt);

  [[nodiscard]] bool empty() const noexcept { return prompts_.empty(); }
  // The prompts/list result: {"prompts": [...]}, in registration order.
  [[nodiscard]] nlohmann::json list() const;
  // The prompt called `name`, or nullptr.
  [[nodiscard]] const Prompt* find(const std::string& name) const;
  // Why `arguments` (params.arguments of prompts/get; null: none) do not suit `prompt`: not an
  // object of strings, or a required one is missing. Empty: they do.
  [[nodiscard]] static std::string argumentsProblem(const Prompt& prompt,
                                                    const nlohmann::json& arguments);

 private:
  std::vector<Prompt> prompts_;
};

}  // namespace mcp
