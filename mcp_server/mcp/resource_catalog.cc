#include "mcp/resource_catalog.h"

#include <stdexcept>

namespace mcp {

using nlohmann::json;

std::optional<std::map<std::string, std::string>> matchUriTemplate(const std::string& uri_template,
                                                                   const std::string& uri) {
  std::map<std::string, std::string> variables;
  std::size_t t = 0;
  std::size_t u = 0;
  while (t < uri_template.size()) {
    if (uri_template[t] != '{') {
      if (u >= uri.size() || uri[u] != uri_template[t]) return std::nullopt;
      ++t;
      ++u;
      continue;
    }
    const std::size_t close = uri_template.find('}', t);
    if (close == std::string::npos) return std::nullopt;
    const std::string name = uri_template.substr(t + 1, close - t - 1);
    t = close + 1;
    // The value runs to the next '/' or to the next literal character of the template.
    const char stop = t < uri_template.size() ? uri_template[t] : '\0';
    std::size_t end = u;
    while (end < uri.size() && uri[end] != '/' && (stop == '\0' || uri[end] != stop)) ++end;
    if (end == u) return std::nullopt;
    variables[name] = uri.substr(u, end - u);
    u = end;
  }
  if (u != uri.size()) return std::nullopt;
  return variables;
}

void ResourceCatalog::add(FixedResource resource) {
  const std::string uri = resource.descriptor.value("uri", "");
  if (uri.empty()) throw std::logic_error("a resource needs a uri");
  for (const FixedResource& known : fixed_) {
    if (known.descriptor["uri"] == uri) throw std::logic_error("resource registered twice: " + uri);
  }
  fixed_.push_back(std::move(resource));
}

void ResourceCatalog::add(TemplateResource resource) {
  const std::string uri_template = resource.descriptor.value("uriTemplate", "");
  if (uri_template.empty()) throw std::logic_error("a resource template needs a uriTemplate");
  for (const TemplateResource& known : templates_) {
    if (known.descriptor["uriTemplate"] == uri_template) {
      throw std::logic_error("resource template registered twice: " + uri_template);
    }
  }
  templates_.push_back(std::move(resource));
}

json ResourceCatalog::list() const {
  json out = json::array();
  for (const FixedResource& resource : fixed_) out.push_back(resource.descriptor);
  return out;
}

json ResourceCatalog::templates() const {
  json out = json::array();
  for (const TemplateResource& resource : templates_) out.push_back(resource.descriptor);
  return out;
}

std::optional<json> ResourceCatalog::read(const std::string& uri) const {
  for (const FixedResource& resource : fixed_) {
    if (resource.descriptor["uri"] == uri) return json{{"contents", resource.read(uri)}};
  }
  for (const TemplateResource& resource : templates_) {
    if (auto variables = matchUriTemplate(resource.descriptor["uriTemplate"], uri)) {
      return json{{"contents", resource.read(uri, *variables)}};
    }
  }
  return std::nullopt;
}

}  // namespace mcp
