#include "metrics/names.h"

namespace metrics {
namespace {

bool isNameStart(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool isNameChar(char c) noexcept { return isNameStart(c) || (c >= '0' && c <= '9'); }

}  // namespace

bool isValidMetricName(std::string_view name) noexcept {
  if (name.empty() || !(isNameStart(name[0]) || name[0] == ':')) return false;
  for (const char c : name) {
    if (!isNameChar(c) && c != ':') return false;
  }
  return true;
}

bool isValidLabelName(std::string_view name) noexcept {
  if (name.empty() || !isNameStart(name[0]) || name.starts_with("__")) return false;
  for (const char c : name) {
    if (!isNameChar(c)) return false;
  }
  return true;
}

}  // namespace metrics
