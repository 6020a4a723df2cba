// Resources a server offers beside the sandbox:// ones of its sessions: fixed resources (a URI
// and a reader) and URI templates whose simple {name} variables match one path segment each
// (RFC 6570 level 1). Register everything before serving; afterwards read-only and safe to use
// from any thread.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mcp {

// A resource's contents: ResourceContents objects ({"uri", "mimeType", "text" | "blob"}).
using ResourceReader = std::function<nlohmann::json(const std::string& uri)>;
using TemplateReader = std::function<nlohmann::json(
    const std::string& uri, const std::map<std::string, std::string>& variables)>;

struct FixedResource {
  nlohmann::json descriptor;  // the resources/list entry: uri, name, title, description, mimeType
  ResourceReader read;
};

struct TemplateResource {
  nlohmann::json descriptor;  // the resources/templates/list entry: uriTemplate, name, ...
  TemplateReader read;
};

class ResourceCatalog {
 public:
  // Throw std::logic_error for a duplicate URI / template, or a descriptor without one.
  void add(FixedResource resource);
  void add(TemplateResource resource);

  [[nodiscard]] bool empty() const noexcept { return fixed_.empty() && templates_.empty(); }
  [[nodiscard]] nlohmann::json list() const;       // resource descriptors, in order
  [[nodiscard]] nlohmann::json templates() const;  // template descriptors, in order
  // {"contents": [...]} for a URI this catalog has (fixed first, then the first matching
  // template), nullopt for one it does not.
  [[nodiscard]] std::optional<nlohmann::json> read(const std::string& uri) const;

 private:
  std::vector<FixedResource> fixed_;
  std::vector<TemplateResource> templates_;
};

// The variables of `uri` under `uri_template` ("test://template/{id}/data"), or nullopt when it
// does not match. Each variable matches one or more characters other than '/'. Pure.
[[nodiscard]] std::optional<std::map<std::string, std::string>> matchUriTemplate(
    const std::string& uri_template, const std::string& uri);

}  // namespace mcp
