#include "mcp/prompt_catalog.h"

#include <stdexcept>

namespace mcp {

using nlohmann::json;

void PromptCatalog::add(Prompt prompt) {
  if (find(prompt.spec.name) != nullptr) {
    throw std::logic_error("prompt registered twice: " + prompt.spec.name);
  }
  prompts_.push_back(std::move(prompt));
}

json PromptCatalog::list() const {
  json prompts = json::array();
  for (const Prompt& prompt : prompts_) {
    json entry{{"name", prompt.spec.name}};
    if (!prompt.spec.title.empty()) entry["title"] = prompt.spec.title;
    if (!prompt.spec.description.empty()) entry["description"] = prompt.spec.description;
    if (!prompt.spec.arguments.empty()) {
      json arguments = json::array();
      for (const PromptArgument& argument : prompt.spec.arguments) {
        json item{{"name", argument.name}, {"required", argument.required}};
        if (!argument.description.empty()) item["description"] = argument.description;
        arguments.push_back(std::move(item));
      }
      entry["arguments"] = std::move(arguments);
    }
    prompts.push_back(std::move(entry));
  }
  return json{{"prompts", std::move(prompts)}};
}

const Prompt* PromptCatalog::find(const std::string& name) const {
  for (const Prompt& prompt : prompts_) {
    if (prompt.spec.name == name) return &prompt;
  }
  return nullptr;
}

std::string PromptCatalog::argumentsProblem(const Prompt& prompt, const json& arguments) {
  if (!arguments.is_null() && !arguments.is_object()) {
    return "params.arguments must be an object of strings";
  }
  for (const PromptArgument& argument : prompt.spec.arguments) {
    const bool given = arguments.is_object() && arguments.contains(argument.name);
    if (given && !arguments[argument.name].is_string()) {
      return "argument '" + argument.name + "' must be a string";
    }
    if (argument.required && !given) {
      return "prompt '" + prompt.spec.name + "' needs the argument '" + argument.name + "'";
    }
  }
  return {};
}

}  // namespace mcp
