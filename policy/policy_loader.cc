// loadPolicy: builds an immutable Policy from its JSON form, validating everything up front so
// deciding never meets a malformed rule. Errors name the entry: "allowlist[2].methods[0]: ...".
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace policy {
namespace {

using nlohmann::json;

std::string entryName(std::size_t index) { return "allowlist[" + std::to_string(index) + "]"; }

[[noreturn]] void reject(const std::string& where, const std::string& what) {
  throw PolicyError(where + ": " + what);
}

Url parseRuleUrl(const json& value, const std::string& where) {
  if (!value.is_string()) reject(where, "must be a URL string");
  const ParseResult parsed = parseUrl(value.get_ref<const std::string&>());
  if (!parsed.url) reject(where, parsed.error);
  if (!parsed.url->query.empty()) {
    reject(where, "an allowlist URL cannot carry a query; remove everything from '?'");
  }
  return *parsed.url;
}

std::vector<std::string> parseNameList(const json& value, const std::string& where) {
  if (!value.is_array()) reject(where, "must be an array of strings");
  std::vector<std::string> names;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string item_where = where + "[" + std::to_string(i) + "]";
    if (!value[i].is_string() || value[i].get_ref<const std::string&>().empty()) {
      reject(item_where, "must be a non-empty string");
    }
    const std::string& name = value[i].get_ref<const std::string&>();
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  if (names.empty()) reject(where, "must not be empty; omit the key to allow any");
  return names;
}

Rule parseObjectEntry(const json& entry, const std::string& where) {
  for (const auto& [key, value] : entry.items()) {
    if (key != "url" && key != "id" && key != "methods" && key != "tools") {
      reject(where, "unknown key '" + key + "' (expected url, id, methods, tools)");
    }
  }
  if (!entry.contains("url")) reject(where, "missing 'url'");
  Rule rule{where, parseRuleUrl(entry["url"], where + ".url"), {}, {}};
  if (entry.contains("id")) {
    if (!entry["id"].is_string() || entry["id"].get_ref<const std::string&>().empty()) {
      reject(where + ".id", "must be a non-empty string");
    }
    rule.id = entry["id"].get<std::string>();
  }
  if (entry.contains("methods")) rule.methods = parseNameList(entry["methods"], where + ".methods");
  if (entry.contains("tools")) rule.tools = parseNameList(entry["tools"], where + ".tools");
  if (!rule.tools.empty() && !rule.methods.empty() &&
      std::find(rule.methods.begin(), rule.methods.end(), "tools/call") == rule.methods.end()) {
    reject(where, "'tools' is set but 'methods' does not include tools/call");
  }
  return rule;
}

Rule parseEntry(const json& entry, std::size_t index) {
  const std::string where = entryName(index);
  if (entry.is_string()) return Rule{where, parseRuleUrl(entry, where), {}, {}};
  if (entry.is_object()) return parseObjectEntry(entry, where);
  reject(where, "must be a URL string or an object with 'url'");
}

}  // namespace

std::shared_ptr<const Policy> loadPolicy(const json& entries) {
  if (!entries.is_array()) throw PolicyError("allowlist: must be an array of URLs or objects");
  auto policy = std::make_shared<Policy>();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    Rule rule = parseEntry(entries[i], i);
    for (const Rule& earlier : policy->rules) {
      if (earlier.base == rule.base) {
        reject(entryName(i), "duplicates " + earlier.id + " (" + rule.base.toString() + ")");
      }
      if (earlier.id == rule.id) reject(entryName(i), "duplicate id '" + rule.id + "'");
    }
    policy->rules.push_back(std::move(rule));
  }
  return policy;
}

}  // namespace policy

namespace policy {

json toJson(const Policy& policy) {
  json entries = json::array();
  for (const Rule& rule : policy.rules) {
    json entry = {{"id", rule.id}, {"url", rule.base.toString()}};
    if (!rule.methods.empty()) entry["methods"] = rule.methods;
    // A tools list only means something when tools/call may be called at all (and loadPolicy
    // rejects it otherwise); narrowing can leave one behind, so it is dropped here.
    const bool calls_tools =
        rule.methods.empty() ||
        std::find(rule.methods.begin(), rule.methods.end(), "tools/call") != rule.methods.end();
    if (!rule.tools.empty() && calls_tools) entry["tools"] = rule.tools;
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace policy
