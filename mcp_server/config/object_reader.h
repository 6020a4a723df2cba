// Reads the fields of one JSON object of the configuration, rejecting unknown keys so typos do not
// pass silently; every error names the field path ("config: sandbox.memory_mib must be >= 16").
// Private to config/ (fromJson and the section readers).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "config/config.h"

namespace config {

class ObjectReader {
 public:
  using json = nlohmann::json;

  ObjectReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {
    if (!object_.is_object()) fail(path_.empty() ? "the document" : path_, "must be an object");
  }

  template <typename T>
  void read(const char* key, T& out) {
    seen_.insert(key);
    const auto it = object_.find(key);
    if (it == object_.end()) return;
    try {
      out = it->template get<T>();
    } catch (const json::exception&) {
      fail(field(key), "has the wrong type (got " + it->dump() + ")");
    }
  }

  const json* child(const char* key) {
    seen_.insert(key);
    const auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  void rejectUnknown() const {
    for (const auto& [key, value] : object_.items()) {
      if (!seen_.count(key)) fail(field(key.c_str()), "is not a known setting");
    }
  }

  [[nodiscard]] std::string field(const char* key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    throw ConfigError("config: " + path + " " + what);
  }

 private:
  const json& object_;
  std::string path_;
  std::set<std::string> seen_;
};

inline void requireAtLeast(std::int64_t value, std::int64_t minimum, const std::string& path) {
  if (value < minimum) ObjectReader::fail(path, "must be >= " + std::to_string(minimum));
}

}  // namespace config
