// One HTTP response header line as curl hands it to a header callback ("Name: value\r\n"): the
// name lower-cased and the value trimmed. Status lines ("HTTP/1.1 200 OK") and the blank line
// that ends the header give nothing. Shared by the tests' curl clients.
#pragma once

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace test_support {

inline std::optional<std::pair<std::string, std::string>> parseHeaderLine(std::string_view line) {
  if (line.rfind("HTTP/", 0) == 0) return std::nullopt;
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string value(line.substr(colon + 1));
  value.erase(0, value.find_first_not_of(' '));
  value.erase(value.find_last_not_of("\r\n ") + 1);
  return std::make_pair(std::move(name), std::move(value));
}

}  // namespace test_support
