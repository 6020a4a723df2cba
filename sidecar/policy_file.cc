#include "sidecar/policy_file.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "common/json_limits.h"

namespace sidecar {
namespace {

// The server writes the file (operator list narrowed by the call's list); anything larger or
// deeper was not written by it.
constexpr std::size_t kMaxPolicyFileBytes = std::size_t{4} * 1024 * 1024;

// The file's JSON, bounded in size and depth; `what` names the file in errors.
nlohmann::json readJsonFile(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the " + what + " " + path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  if (content.size() > kMaxPolicyFileBytes) {
    throw std::runtime_error(what + " " + path + " is larger than " +
                             std::to_string(kMaxPolicyFileBytes) + " bytes");
  }
  if (common::findExcessNesting(content) != std::string::npos) {
    throw std::runtime_error(what + " " + path + " nests JSON deeper than " +
                             std::to_string(common::kMaxJsonDepth) + " levels");
  }
  auto entries = nlohmann::json::parse(content, nullptr, false);
  if (entries.is_discarded()) throw std::runtime_error(what + " " + path + " is not valid JSON");
  return entries;
}

}  // namespace

std::shared_ptr<const policy::Policy> loadPolicyFile(const std::string& path) {
  const auto entries = readJsonFile(path, "policy file");
  try {
    return policy::loadPolicy(entries);
  } catch (const std::exception& e) {
    throw std::runtime_error("policy file " + path + ": " + e.what());
  }
}

std::shared_ptr<const policy::EgressPolicy> loadEgressRulesFile(const std::string& path) {
  const auto entries = readJsonFile(path, "egress rules file");
  try {
    return std::make_shared<const policy::EgressPolicy>(policy::loadEgressRules(entries, "rules"));
  } catch (const std::exception& e) {
    throw std::runtime_error("egress rules file " + path + ": " + e.what());
  }
}

}  // namespace sidecar
