// The pieces of the Prometheus text exposition format 0.0.4 that need care: numbers and escapes.
// https://prometheus.io/docs/instrumenting/exposition_formats/  Pure functions.
#pragma once

#include <string>
#include <string_view>

namespace metrics {

// The Content-Type header value for a scrape response in this format.
inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// A sample value or a bucket bound: "NaN", "+Inf", "-Inf"; integral values below 2^53 in
// magnitude as plain integers ("3", "1000000", never "1e+06"); anything else as the shortest text
// that reads back to the same double ("0.005", "1e-09", "1.5e+300").
[[nodiscard]] std::string formatValue(double value);

// A # HELP docstring: backslash -> "\\", newline -> "\n".
[[nodiscard]] std::string escapeHelp(std::string_view help);

// A label value: backslash -> "\\", double quote -> "\"", newline -> "\n".
[[nodiscard]] std::string escapeLabelValue(std::string_view value);

}  // namespace metrics
