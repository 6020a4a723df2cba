#include "sidecar/policy_file.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace sidecar {

std::shared_ptr<const policy::Policy> loadPolicyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the policy file " + path);
  std::stringstream text;
  text << in.rdbuf();
  const auto entries = nlohmann::json::parse(text.str(), nullptr, false);
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
