// Prompts, resources and completions of the conformance fixtures.
#include "fixtures.h"

namespace conformance {
namespace {

using nlohmann::json;

json userText(const std::string& text) {
  return {{"role", "user"}, {"content", {{"type", "text"}, {"text", text}}}};
}

mcp::Prompt prompt(std::string name, std::string title, std::string description,
                   std::vector<mcp::PromptArgument> arguments, mcp::PromptHandler handler) {
  return {{std::move(name), std::move(title), std::move(description), std::move(arguments)},
          std::move(handler)};
}

mcp::PromptResult messages(json list) {
  mcp::PromptResult result;
  result.messages = std::move(list);
  return result;
}

}  // namespace

void registerPrompts(mcp::PromptCatalog& prompts) {
  prompts.add(
      prompt("test_simple_prompt", "Simple Test Prompt", "A simple prompt without arguments", {},
             [](const json&, const tools::ToolInputs&) {
               return messages(json::array({userText("This is a simple prompt for testing.")}));
             }));
  prompts.add(prompt(
      "test_prompt_with_arguments", "Prompt With Arguments", "A prompt with required arguments",
      {{"arg1", "First test argument", true}, {"arg2", "Second test argument", true}},
      [](const json& arguments, const tools::ToolInputs&) {
        return messages(
            json::array({userText("Prompt with arguments: arg1='" + arguments.value("arg1", "") +
                                  "', arg2='" + arguments.value("arg2", "") + "'")}));
      }));
  prompts.add(
      prompt("test_prompt_with_embedded_resource", "Prompt With Embedded Resource",
             "A prompt that includes an embedded resource",
             {{"resourceUri", "URI of the resource to embed", true}},
             [](const json& arguments, const tools::ToolInputs&) {
               const json resource{{"uri", arguments.value("resourceUri", "")},
                                   {"mimeType", "text/plain"},
                                   {"text", "Embedded resource content for testing."}};
               return messages(json::array(
                   {{{"role", "user"}, {"content", {{"type", "resource"}, {"resource", resource}}}},
                    userText("Please process the embedded resource above.")}));
             }));
  prompts.add(
      prompt("test_prompt_with_image", "Prompt With Image", "A prompt that includes image content",
             {}, [](const json&, const tools::ToolInputs&) {
               const json image{{"type", "image"}, {"data", kPngBase64}, {"mimeType", "image/png"}};
               return messages(json::array({{{"role", "user"}, {"content", image}},
                                            userText("Please analyze the image above.")}));
             }));
  prompts.add(prompt(
      "test_input_required_result_prompt", "", "MRTR: prompt that requires elicitation input", {},
      [](const json&, const tools::ToolInputs& in) {
        const json answer = in.responses.value("user_context", json());
        if (answer.is_object()) {
          const json content = answer.value("content", json::object());
          const json context = content.is_object() ? content.value("context", json()) : json();
          return messages(json::array(
              {userText("Prompt with context: " +
                        (context.is_string() ? context.get<std::string>() : "unknown"))}));
        }
        mcp::PromptResult result;
        result.input_requests = {{"user_context",
                                  {{"method", "elicitation/create"},
                                   {"params",
                                    {{"message", "What context should the prompt use?"},
                                     {"requestedSchema",
                                      {{"type", "object"},
                                       {"properties", {{"context", {{"type", "string"}}}}},
                                       {"required", json::array({"context"})}}}}}}}};
        return result;
      }));
}

void registerResources(mcp::ResourceCatalog& resources) {
  resources.add(mcp::FixedResource{
      {{"uri", "test://static-text"},
       {"name", "static-text"},
       {"title", "Static Text Resource"},
       {"description", "A static text resource for testing"},
       {"mimeType", "text/plain"}},
      [](const std::string& uri) {
        return json::array({{{"uri", uri},
                             {"mimeType", "text/plain"},
                             {"text", "This is the content of the static text resource."}}});
      }});
  resources.add(mcp::FixedResource{
      {{"uri", "test://static-binary"},
       {"name", "static-binary"},
       {"title", "Static Binary Resource"},
       {"description", "A static binary resource (image) for testing"},
       {"mimeType", "image/png"}},
      [](const std::string& uri) {
        return json::array({{{"uri", uri}, {"mimeType", "image/png"}, {"blob", kPngBase64}}});
      }});
  resources.add(mcp::FixedResource{
      {{"uri", "test://watched-resource"},
       {"name", "watched-resource"},
       {"title", "Watched Resource"},
       {"description", "A resource clients may subscribe to"},
       {"mimeType", "text/plain"}},
      [](const std::string& uri) {
        return json::array(
            {{{"uri", uri}, {"mimeType", "text/plain"}, {"text", "Watched resource content"}}});
      }});
  resources.add(mcp::TemplateResource{
      {{"uriTemplate", "test://template/{id}/data"},
       {"name", "template"},
       {"title", "Resource Template"},
       {"description", "A resource template with parameter substitution"},
       {"mimeType", "application/json"}},
      [](const std::string& uri, const std::map<std::string, std::string>& variables) {
        const std::string id = variables.at("id");
        const json body{{"id", id}, {"templateTest", true}, {"data", "Data for ID: " + id}};
        return json::array(
            {{{"uri", uri}, {"mimeType", "application/json"}, {"text", body.dump()}}});
      }});
}

void registerCompletions(mcp::Completions& completions) {
  completions.add("ref/prompt", "test_prompt_with_arguments", "arg1", [](const json&) {
    return std::vector<std::string>{"paris", "park", "party", "test", "testing"};
  });
  completions.add("ref/resource", "test://template/{id}/data", "id", [](const json&) {
    return std::vector<std::string>{"1", "2", "3", "42"};
  });
}

}  // namespace conformance
