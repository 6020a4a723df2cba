// Config settings about this server process among others: its instance id (fleets) and how it
// shuts down.
#include <cctype>
#include <cstdint>
#include <string>

#include "config/sections.h"

namespace config {

using nlohmann::json;

namespace {

// An instance id becomes a Docker label value and a directory name: letters, digits, '.', '_'
// and '-', starting with a letter or digit, at most 63 characters (a Kubernetes pod name fits).
bool validInstanceId(const std::string& id) {
  constexpr std::size_t kMaxChars = 63;
  if (id.empty() || id.size() > kMaxChars || std::isalnum(static_cast<unsigned char>(id[0])) == 0) {
    return false;
  }
  for (const char c : id) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

void readInstanceId(ObjectReader& root, std::string& out) {
  root.read("instance_id", out);
  if (!out.empty() && !validInstanceId(out)) {
    ObjectReader::fail("instance_id",
                       "must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or "
                       "digit (got '" +
                           out.substr(0, 80) + "')");
  }
}

void readShutdown(ObjectReader& parent, ShutdownConfig& out) {
  const json* node = parent.child("shutdown");
  if (!node) return;
  ObjectReader r(*node, "shutdown");
  r.read("grace_s", out.grace_s);
  r.rejectUnknown();
  constexpr std::int64_t kMaxGraceS = 3600;
  requireAtLeast(out.grace_s, 0, "shutdown.grace_s");
  if (out.grace_s > kMaxGraceS) {
    ObjectReader::fail("shutdown.grace_s", "must be <= " + std::to_string(kMaxGraceS));
  }
}

}  // namespace config
