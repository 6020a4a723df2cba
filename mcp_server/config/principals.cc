#include "config/principals.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "config/config.h"

namespace config {
namespace {

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw ConfigError("tokens file: " + where + " " + what);
}

bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::optional<std::int64_t> readLimit(const nlohmann::json& entry, const char* key,
                                      const std::string& where) {
  const auto it = entry.find(key);
  if (it == entry.end()) return std::nullopt;
  if (!it->is_number_integer() || it->get<std::int64_t>() < 1) {
    fail(where + "." + key, "must be an integer >= 1");
  }
  return it->get<std::int64_t>();
}

Principal readPrincipal(const nlohmann::json& entry, const std::string& where) {
  if (!entry.is_object()) fail(where, "must be an object with name and token");
  for (const auto& [key, value] : entry.items()) {
    if (key != "name" && key != "token" && key != "max_sessions" &&
        key != "max_concurrent_executions") {
      fail(where + "." + key,
           "is not a known setting (name, token, max_sessions, "
           "max_concurrent_executions)");
    }
  }
  Principal out;
  const auto name = entry.find("name");
  if (name == entry.end() || !name->is_string()) fail(where + ".name", "must be a string");
  out.name = name->get<std::string>();
  if (out.name.empty() || out.name.size() > 64 ||
      !std::all_of(out.name.begin(), out.name.end(), isNameChar)) {
    fail(where + ".name", "must be 1 to 64 letters, digits, '.', '_' or '-'");
  }
  const auto token = entry.find("token");
  if (token == entry.end() || !token->is_string()) fail(where + ".token", "must be a string");
  out.token = token->get<std::string>();
  if (out.token.size() < kMinTokenChars ||
      !std::all_of(out.token.begin(), out.token.end(), [](char c) { return c > ' ' && c < 127; })) {
    fail(where + ".token", "must be at least " + std::to_string(kMinTokenChars) +
                               " printable ASCII characters without spaces (e.g. `openssl rand "
                               "-hex 32`)");
  }
  out.max_sessions = readLimit(entry, "max_sessions", where);
  out.max_concurrent_executions = readLimit(entry, "max_concurrent_executions", where);
  return out;
}

}  // namespace

std::vector<Principal> principalsFromJson(const nlohmann::json& document) {
  if (!document.is_object() || !document.contains("principals") ||
      !document["principals"].is_array()) {
    fail("the document", "must be an object with a \"principals\" array");
  }
  for (const auto& [key, value] : document.items()) {
    if (key != "principals") fail(key, "is not a known setting");
  }
  std::vector<Principal> out;
  std::set<std::string> names;
  std::set<std::string> tokens;
  std::size_t index = 0;
  for (const auto& entry : document["principals"]) {
    const std::string where = "principals[" + std::to_string(index++) + "]";
    Principal principal = readPrincipal(entry, where);
    if (!names.insert(principal.name).second) {
      fail(where + ".name", "'" + principal.name + "' is named twice");
    }
    if (principal.name == "local" || principal.name == "default") {
      fail(where + ".name", "'" + principal.name +
                                "' is reserved (the principal without a token, and the one "
                                "--token-file token's)");
    }
    if (!tokens.insert(principal.token).second) {
      fail(where + ".token", "is the token of an earlier principal; each needs its own");
    }
    out.push_back(std::move(principal));
  }
  if (out.empty()) fail("principals", "is empty: name at least one principal");
  return out;
}

std::vector<Principal> loadPrincipalsFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot read --tokens-file " + path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error&) {
    // The parser's message quotes the text near the error: it could be a token.
    throw ConfigError("tokens file " + path + " is not valid JSON");
  }
  auto principals = principalsFromJson(document);
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && (info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    spdlog::warn("the tokens file {} is readable by group or others: chmod 600 it", path);
  }
  return principals;
}

}  // namespace config
