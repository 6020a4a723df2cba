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

void AuditTally::countEgressLine(const nlohmann::json& record, const std::string& decision) {
  const auto number = [&](const char* key) {
    const auto it = record.find(key);
    return it != record.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
  };
  egress_.bytes_up += number("up");
  egress_.bytes_down += number("bytes");
  const bool refused = decision == "deny" || (decision == "error" && number("status") >= 400);
  if (decision == "allow") ++egress_.allowed;
  if (decision == "deny") ++egress_.denied;
  if (decision == "error") ++egress_.errors;
  if (!refused) return;
  if (refusals_.size() >= kMaxRefusalsKept) {
    ++refusals_dropped_;
    return;
  }
  refusals_.push_back(record.value("method", std::string("?")) + " " +
                      record.value("url", std::string()) + ": " +
                      record.value("reason", std::string()));
}

std::vector<std::string> AuditTally::takeEgressRefusals() {
  std::vector<std::string> out(refusals_.begin(), refusals_.end());
  if (refusals_dropped_ > 0) {
    out.push_back("and " + std::to_string(refusals_dropped_) + " more (get_session_stats)");
  }
  refusals_.clear();
  refusals_dropped_ = 0;
  return out;
}

void AuditTally::countLine(std::string_view line) {
  const auto record = common::parseBoundedOrDiscarded(line);
  if (!record.is_object()) return;  // not ours to judge: the relay writes whole lines
  const auto decision = record.value("decision", std::string());
  if (record.value("kind", std::string()) == "egress") return countEgressLine(record, decision);
  if (decision == "allow") {
    ++allowed_;
  } else if (decision == "deny") {
    ++denied_;
  } else if (decision == "error") {
    ++errors_;
  }
}

}  // namespace server
