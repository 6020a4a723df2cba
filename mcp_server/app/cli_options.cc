#include "app/cli_options.h"

#include <charconv>

namespace app {
namespace {

// "HOST:PORT", "[v6]:PORT" or ":PORT".
void parseListenAddress(const std::string& text, CliOptions& out) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) {
    throw UsageError("--http expects HOST:PORT, e.g. --http 127.0.0.1:8765 (got \"" + text + "\")");
  }
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    throw UsageError("--http: \"" + port_text + "\" is not a port number (0-65535)");
  }
  if (!host.empty()) out.http_address = host;
  out.http_port = static_cast<std::uint16_t>(port);
}

}  // namespace

const char* usageText() {
  return "usage: sandbox-mcp [--stdio | --http HOST:PORT] [--config FILE] [--token-file FILE]\n"
         "                   [--tokens-file FILE] [--log-level trace|debug|info|warn|error|off]\n"
         "       sandbox-mcp doctor [--config FILE]\n"
         "\n"
         "  --stdio            serve MCP over stdin/stdout (default; what Claude Desktop and\n"
         "                     Claude Code launch)\n"
         "  --http HOST:PORT   serve MCP Streamable HTTP at http://HOST:PORT/mcp\n"
         "                     (loopback only unless a bearer token is configured)\n"
         "  --config FILE      JSON configuration (see docs/configuration.md)\n"
         "  --token-file FILE  bearer token HTTP clients must send (or SANDBOX_MCP_TOKEN)\n"
         "  --tokens-file FILE principals: JSON {\"principals\": [{\"name\", \"token\",\n"
         "                     \"max_sessions\"?, \"max_concurrent_executions\"?}]}; each token\n"
         "                     is a principal with its own sandboxes and quotas\n"
         "  doctor             check the Docker engine, gVisor, images and the agent, then exit\n";
}

CliOptions parseCli(const std::vector<std::string>& args) {
  CliOptions out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError(arg + " needs a value");
      return args[++i];
    };
    if (arg == "--stdio") {
      out.mode = Mode::kStdio;
    } else if (arg == "--http") {
      out.mode = Mode::kHttp;
      parseListenAddress(value(), out);
    } else if (arg == "--config") {
      out.config_path = value();
    } else if (arg == "--token-file") {
      out.token_file = value();
    } else if (arg == "--tokens-file") {
      out.tokens_file = value();
    } else if (arg == "--log-level") {
      out.log_level = value();
    } else if (arg == "doctor") {
      out.mode = Mode::kDoctor;
    } else if (arg == "--help" || arg == "-h") {
      out.mode = Mode::kHelp;
    } else if (arg == "--version") {
      out.mode = Mode::kVersion;
    } else {
      throw UsageError("unknown argument \"" + arg + "\"");
    }
  }
  return out;
}

}  // namespace app
