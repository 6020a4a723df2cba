// Helpers shared by the agent protocol tests (protocol_*_test.cc): the last line of an output and
// a substring check on a JSON string.
#pragma once

#include <string>

#include "agent_client.h"

namespace agent_test {

inline std::string lastLine(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  const auto newline = trimmed.rfind('\n');
  return newline == std::string::npos ? trimmed : trimmed.substr(newline + 1);
}

inline bool contains(const json& value, const std::string& needle) {
  return value.get<std::string>().find(needle) != std::string::npos;
}

}  // namespace agent_test
