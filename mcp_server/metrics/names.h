// Name rules of the Prometheus data model, checked when a metric is registered. Pure.
#pragma once

#include <string_view>

namespace metrics {

// [a-zA-Z_:][a-zA-Z0-9_:]*
[[nodiscard]] bool isValidMetricName(std::string_view name) noexcept;

// [a-zA-Z_][a-zA-Z0-9_]* and not starting with "__" (reserved for Prometheus itself).
[[nodiscard]] bool isValidLabelName(std::string_view name) noexcept;

}  // namespace metrics
