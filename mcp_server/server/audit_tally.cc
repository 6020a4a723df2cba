#include "server/audit_tally.h"

#include <nlohmann/json.hpp>

#include "common/json_limits.h"

namespace server {

void AuditTally::consume(std::string_view bytes) {
  while (!bytes.empty()) {
    const auto newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      partial_.append(bytes);
      return;
    }
    if (partial_.empty()) {
      countLine(bytes.substr(0, newline));
    } else {
      partial_.append(bytes.substr(0, newline));
      countLine(partial_);
      partial_.clear();
    }
    bytes.remove_prefix(newline + 1);
  }
}

void AuditTally::countLine(std::string_view line) {
  const auto record = common::parseBoundedOrDiscarded(line);
  if (!record.is_object()) return;  // not ours to judge: the relay writes whole lines
  const auto decision = record.value("decision", std::string());
  if (decision == "allow") {
    ++allowed_;
  } else if (decision == "deny") {
    ++denied_;
  } else if (decision == "error") {
    ++errors_;
  }
}

}  // namespace server
