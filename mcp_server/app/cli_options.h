// Command-line parsing for sandbox-mcp. Pure: no I/O besides reading nothing; throws UsageError.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace app {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Mode { kStdio, kHttp, kDoctor, kHelp, kVersion };

struct CliOptions {
  Mode mode = Mode::kStdio;
  std::string http_address = "127.0.0.1";
  std::uint16_t http_port = 8765;
  std::string config_path;  // empty: built-in defaults
  std::string token_file;   // bearer token for HTTP; SANDBOX_MCP_TOKEN also works
  std::string tokens_file;  // principals and their tokens and quotas (config/principals.h)
  std::string log_level;    // overrides the config's log_level when set
};

[[nodiscard]] CliOptions parseCli(const std::vector<std::string>& args);
[[nodiscard]] const char* usageText();

}  // namespace app
