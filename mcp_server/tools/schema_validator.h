// Validates tool arguments against the subset of JSON Schema our tools publish (type, properties,
// required, additionalProperties, enum, minimum/maximum, minLength/maxLength, items). Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tools {

// Returns nullopt when `value` conforms, else one message naming the offending path, e.g.
// "arguments.timeout: must be <= 600 (got 900)".
[[nodiscard]] std::optional<std::string> validateAgainstSchema(const nlohmann::json& value,
                                                               const nlohmann::json& schema,
                                                               const std::string& path);

}  // namespace tools
