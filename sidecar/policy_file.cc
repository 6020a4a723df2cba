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

}  // namespace

std::shared_ptr<const policy::Policy> loadPolicyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the policy file " + path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  if (content.size() > kMaxPolicyFileBytes) {
    throw std::runtime_error("policy file " + path + " is larger than " +
                             std::to_string(kMaxPolicyFileBytes) + " bytes");
  }
  if (common::findExcessNesting(content) != std::string::npos) {
    throw std::runtime_error("policy file " + path + " nests JSON deeper than " +
                             std::to_string(common::kMaxJsonDepth) + " levels");
  }
  const auto entries = nlohmann::json::parse(content, nullptr, false);
  if (entries.is_discarded()) {
    throw std::runtime_error("policy file " + path + " is not valid JSON");
  }
  try {
    return policy::loadPolicy(entries);
  } catch (const std::exception& e) {
    throw std::runtime_error("policy file " + path + ": " + e.what());
  }
}

}  // namespace sidecar
