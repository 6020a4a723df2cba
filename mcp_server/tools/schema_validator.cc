#include "tools/schema_validator.h"

namespace tools {
namespace {

using nlohmann::json;

bool matchesType(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "null") return value.is_null();
  return false;
}

std::string typeName(const json& value) {
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  return value.type_name();
}

std::string shortDump(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::optional<std::string> checkType(const json& value, const json& schema,
                                     const std::string& path) {
  const auto it = schema.find("type");
  if (it == schema.end()) return std::nullopt;
  if (it->is_string()) {
    if (matchesType(value, it->get<std::string>())) return std::nullopt;
    const auto& type = it->get_ref<const std::string&>();
    const bool vowel = type == "integer" || type == "object" || type == "array";
    return path + ": must be " + (vowel ? "an " : "a ") + type + " (got " + typeName(value) + ")";
  }
  for (const auto& type : *it) {
    if (matchesType(value, type.get<std::string>())) return std::nullopt;
  }
  return path + ": must be one of the types " + it->dump() + " (got " + typeName(value) + ")";
}

std::optional<std::string> checkScalarBounds(const json& value, const json& schema,
                                             const std::string& path) {
  if (const auto e = schema.find("enum"); e != schema.end()) {
    bool found = false;
    for (const auto& option : *e) found = found || option == value;
    if (!found) return path + ": must be one of " + e->dump() + " (got " + shortDump(value) + ")";
  }
  if (value.is_number()) {
    const double number = value.get<double>();
    if (const auto m = schema.find("minimum"); m != schema.end() && number < m->get<double>()) {
      return path + ": must be >= " + m->dump() + " (got " + value.dump() + ")";
    }
    if (const auto m = schema.find("maximum"); m != schema.end() && number > m->get<double>()) {
      return path + ": must be <= " + m->dump() + " (got " + value.dump() + ")";
    }
  }
  if (value.is_string()) {
    const auto length = value.get_ref<const std::string&>().size();
    if (const auto m = schema.find("minLength"); m != schema.end() && length < m->get<size_t>()) {
      return path + ": must be at least " + m->dump() + " characters long";
    }
    if (const auto m = schema.find("maxLength"); m != schema.end() && length > m->get<size_t>()) {
      return path + ": must be at most " + m->dump() + " characters long (got " +
             std::to_string(length) + ")";
    }
  }
  return std::nullopt;
}

std::optional<std::string> checkObject(const json& value, const json& schema,
                                       const std::string& path) {
  if (const auto required = schema.find("required"); required != schema.end()) {
    for (const auto& name : *required) {
      if (!value.contains(name.get<std::string>())) {
        return path + ": missing required property \"" + name.get<std::string>() + "\"";
      }
    }
  }
  const json empty = json::object();
  const auto props_it = schema.find("properties");
  const json& properties = props_it == schema.end() ? empty : *props_it;
  const auto additional = schema.find("additionalProperties");
  for (const auto& [key, item] : value.items()) {
    const std::string item_path = path + "." + key;
    if (const auto p = properties.find(key); p != properties.end()) {
      if (auto error = validateAgainstSchema(item, *p, item_path)) return error;
    } else if (additional != schema.end()) {
      if (additional->is_boolean() && !additional->get<bool>()) {
        std::string known;
        for (const auto& [name, unused] : properties.items()) {
          known += (known.empty() ? "" : ", ") + name;
        }
        return item_path + ": unknown property (allowed: " + known + ")";
      }
      if (additional->is_object()) {
        if (auto error = validateAgainstSchema(item, *additional, item_path)) return error;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> validateAgainstSchema(const json& value, const json& schema,
                                                 const std::string& path) {
  if (auto error = checkType(value, schema, path)) return error;
  if (auto error = checkScalarBounds(value, schema, path)) return error;
  if (value.is_object()) return checkObject(value, schema, path);
  if (value.is_array()) {
    if (const auto m = schema.find("maxItems");
        m != schema.end() && value.size() > m->get<size_t>()) {
      return path + ": must have at most " + m->dump() + " items (got " +
             std::to_string(value.size()) + ")";
    }
    if (const auto items = schema.find("items"); items != schema.end()) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        const auto item_path = path + "[" + std::to_string(i) + "]";
        if (auto error = validateAgainstSchema(value[i], *items, item_path)) return error;
      }
    }
  }
  return std::nullopt;
}

}  // namespace tools
