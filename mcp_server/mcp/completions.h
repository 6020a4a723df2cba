// Argument completion (completion/complete): for a prompt's argument ("ref/prompt", its name) or
// a resource template's variable ("ref/resource", its uriTemplate), a source of candidate values;
// a request gets those that start with what the user typed, at most 100 (MCP's cap), in the
// source's order. Register everything before serving; afterwards read-only and thread-safe.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mcp {

// Candidates for one argument; `context` is params.context.arguments (other arguments already
// chosen; an empty object when none).
using CompletionSource = std::function<std::vector<std::string>(const nlohmann::json& context)>;

class Completions {
 public:
  // `ref_type` "ref/prompt" or "ref/resource"; `ref` the prompt name or the uriTemplate.
  void add(std::string ref_type, std::string ref, std::string argument, CompletionSource source);

  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
  // The completion/complete result for `params` ({"completion": {values, total, hasMore}});
  // an argument without a source completes to nothing. Throws jsonrpc::Error (-32602) for
  // malformed params.
  [[nodiscard]] nlohmann::json complete(const nlohmann::json& params) const;

 private:
  struct Entry {
    std::string ref_type;
    std::string ref;
    std::string argument;
    CompletionSource source;
  };
  std::vector<Entry> entries_;
};

}  // namespace mcp
