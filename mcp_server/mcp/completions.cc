#include "mcp/completions.h"

#include "jsonrpc/errors.h"

namespace mcp {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxValues = 100;  // MCP: a completion carries at most 100 values

[[noreturn]] void malformed(const std::string& why) {
  throw jsonrpc::Error(jsonrpc::kInvalidParams, "completion/complete: " + why);
}

}  // namespace

void Completions::add(std::string ref_type, std::string ref, std::string argument,
                      CompletionSource source) {
  entries_.push_back({std::move(ref_type), std::move(ref), std::move(argument), std::move(source)});
}

json Completions::complete(const json& params) const {
  const json ref = params.value("ref", json());
  if (!ref.is_object() || !ref.value("type", json()).is_string()) {
    malformed(
        "params.ref must be {\"type\": \"ref/prompt\", \"name\"} or "
        "{\"type\": \"ref/resource\", \"uri\"}");
  }
  const std::string type = ref["type"];
  const char* key = type == "ref/prompt" ? "name" : type == "ref/resource" ? "uri" : nullptr;
  if (key == nullptr || !ref.value(key, json()).is_string()) {
    malformed("params.ref.type must be ref/prompt (with name) or ref/resource (with uri)");
  }
  const json argument = params.value("argument", json());
  if (!argument.is_object() || !argument.value("name", json()).is_string() ||
      !argument.value("value", json()).is_string()) {
    malformed("params.argument must be {\"name\": string, \"value\": string}");
  }
  const std::string name = argument["name"];
  const std::string typed = argument["value"];
  const json given = params.value("context", json::object());
  const json context = given.is_object() && given.value("arguments", json()).is_object()
                           ? given["arguments"]
                           : json::object();
  json values = json::array();
  std::size_t total = 0;
  for (const Entry& entry : entries_) {
    if (entry.ref_type != type || entry.ref != ref[key] || entry.argument != name) continue;
    for (const std::string& candidate : entry.source(context)) {
      if (!candidate.starts_with(typed)) continue;
      ++total;
      if (values.size() < kMaxValues) values.push_back(candidate);
    }
  }
  return json{{"completion",
               {{"values", std::move(values)}, {"total", total}, {"hasMore", total > kMaxValues}}}};
}

}  // namespace mcp
