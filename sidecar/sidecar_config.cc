#include "sidecar/sidecar_config.h"

#include <sys/un.h>

#include <charconv>
#include <functional>
#include <map>

namespace sidecar {
namespace {

using Setter = std::function<std::string(SidecarConfig&, std::string_view)>;

// Parses a positive decimal integer; returns an error message naming the flag otherwise.
template <typename T>
std::string parsePositive(std::string_view flag, std::string_view text, T& out) {
  T value{};
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value <= 0) {
    return std::string(flag) + " expects a positive integer, got '" + std::string(text) + "'";
  }
  out = value;
  return {};
}

const std::map<std::string_view, Setter>& setters() {
  static const std::map<std::string_view, Setter> table = {
      {"--listen",
       [](SidecarConfig& c, std::string_view v) {
         c.listen_path = v;
         return std::string();
       }},
      {"--policy",
       [](SidecarConfig& c, std::string_view v) {
         c.policy_file = v;
         return std::string();
       }},
      {"--audit-log",
       [](SidecarConfig& c, std::string_view v) {
         c.audit_log_path = v;
         return std::string();
       }},
      {"--session",
       [](SidecarConfig& c, std::string_view v) {
         c.session_id = v;
         return std::string();
       }},
      {"--max-body-bytes",
       [](SidecarConfig& c, std::string_view v) {
         return parsePositive("--max-body-bytes", v, c.max_body_bytes);
       }},
      {"--max-header-bytes",
       [](SidecarConfig& c, std::string_view v) {
         return parsePositive("--max-header-bytes", v, c.max_header_bytes);
       }},
      {"--upstream-connect-timeout-ms",
       [](SidecarConfig& c, std::string_view v) {
         return parsePositive("--upstream-connect-timeout-ms", v, c.upstream_connect_timeout_ms);
       }},
      {"--upstream-idle-timeout-ms",
       [](SidecarConfig& c, std::string_view v) {
         return parsePositive("--upstream-idle-timeout-ms", v, c.upstream_idle_timeout_ms);
       }},
      {"--idle-timeout-ms",
       [](SidecarConfig& c, std::string_view v) {
         return parsePositive("--idle-timeout-ms", v, c.idle_timeout_ms);
       }},
      {"--deny-endpoint",
       [](SidecarConfig& c, std::string_view v) {
         const auto endpoint = policy::parseEndpoint(v);
         if (!endpoint) {
           return "--deny-endpoint expects ADDR:PORT (an IP address, IPv6 in brackets), got '" +
                  std::string(v) + "'";
         }
         c.denied_endpoints.push_back(*endpoint);
         return std::string();
       }},
      {"--audit-log-max-bytes",
       [](SidecarConfig& c, std::string_view v) {
         return parsePositive("--audit-log-max-bytes", v, c.audit_log_max_bytes);
       }},
      {"--egress-listen",
       [](SidecarConfig& c, std::string_view v) {
         c.egress_listen_path = v;
         return std::string();
       }},
      {"--egress-rules",
       [](SidecarConfig& c, std::string_view v) {
         c.egress_rules_file = v;
         return std::string();
       }},
      {"--egress-max-connections",
       [](SidecarConfig& c, std::string_view v) {
         return parsePositive("--egress-max-connections", v, c.egress_max_connections);
       }},
      {"--egress-max-bytes",
       [](SidecarConfig& c, std::string_view v) {
         return parsePositive("--egress-max-bytes", v, c.egress_max_bytes);
       }},
      {"--egress-idle-timeout-ms",
       [](SidecarConfig& c, std::string_view v) {
         return parsePositive("--egress-idle-timeout-ms", v, c.egress_idle_timeout_ms);
       }},
      {"--egress-max-connection-ms",
       [](SidecarConfig& c, std::string_view v) {
         return parsePositive("--egress-max-connection-ms", v, c.egress_max_connection_ms);
       }},
      {"--upstream-ca",
       [](SidecarConfig& c, std::string_view v) {
         c.upstream_ca_file = v;
         return std::string();
       }},
      {"--secrets",
       [](SidecarConfig& c, std::string_view v) {
         c.secrets_file = v;
         return std::string();
       }},
      {"--egress-upstream-ca",
       [](SidecarConfig& c, std::string_view v) {
         c.egress_upstream_ca_file = v;
         return std::string();
       }},
      {"--max-concurrent-requests",
       [](SidecarConfig& c, std::string_view v) {
         return parsePositive("--max-concurrent-requests", v, c.max_concurrent_requests);
       }},
  };
  return table;
}

std::string validate(const SidecarConfig& config) {
  if (config.listen_path.empty()) return "--listen PATH is required (the Unix socket to create)";
  if (config.policy_file.empty()) {
    return "--policy FILE is required (a JSON array of allowlist entries)";
  }
  if (config.listen_path.size() >= sizeof(sockaddr_un::sun_path)) {
    return "--listen path is " + std::to_string(config.listen_path.size()) +
           " bytes; Unix socket paths must be shorter than " +
           std::to_string(sizeof(sockaddr_un::sun_path)) + " bytes, pick a shorter directory";
  }
  if (config.audit_log_path.empty()) return "--audit-log needs a path, or '-' for stderr";
  if (config.egress_listen_path.empty() != config.egress_rules_file.empty()) {
    return "--egress-listen PATH and --egress-rules FILE go together (the egress proxy's socket "
           "and its rules); give both or neither";
  }
  if (config.egress_listen_path.size() >= sizeof(sockaddr_un::sun_path)) {
    return "--egress-listen path is too long for a Unix socket (" +
           std::to_string(config.egress_listen_path.size()) + " bytes); pick a shorter directory";
  }
  if (!config.egress_listen_path.empty() && config.egress_listen_path == config.listen_path) {
    return "--egress-listen must differ from --listen";
  }
  if (config.egress_listen_path.empty() && !config.egress_upstream_ca_file.empty()) {
    return "--egress-upstream-ca belongs to the egress proxy; give --egress-listen PATH "
           "--egress-rules FILE with it";
  }
  return {};
}

}  // namespace

CommandLineResult parseCommandLine(const std::vector<std::string_view>& args) {
  CommandLineResult result;
  SidecarConfig config;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view flag = args[i];
    if (flag == "--help" || flag == "-h") {
      result.help = true;
      return result;
    }
    if (flag == "--exit-on-stdin-eof") {
      config.exit_on_stdin_eof = true;
      continue;
    }
    const auto it = setters().find(flag);
    if (it == setters().end()) {
      result.error = "unknown argument '" + std::string(flag) + "'; see --help";
      return result;
    }
    if (i + 1 >= args.size()) {
      result.error = std::string(flag) + " needs a value";
      return result;
    }
    if (auto error = it->second(config, args[++i]); !error.empty()) {
      result.error = std::move(error);
      return result;
    }
  }
  if (auto error = validate(config); !error.empty()) {
    result.error = std::move(error);
    return result;
  }
  result.config = std::move(config);
  return result;
}

std::string usageText() {
  return "usage: sandbox-sidecar --listen PATH --policy FILE [--audit-log PATH|-] [--session ID]\n"
         "         [--max-body-bytes N] [--max-header-bytes N] [--upstream-connect-timeout-ms N]\n"
         "         [--upstream-idle-timeout-ms N] [--idle-timeout-ms N]\n"
         "         [--max-concurrent-requests N] [--deny-endpoint ADDR:PORT]...\n"
         "         [--audit-log-max-bytes N] [--secrets FILE] [--upstream-ca FILE]\n"
         "         [--exit-on-stdin-eof]\n"
         "         [--egress-listen PATH --egress-rules FILE [--egress-max-connections N]\n"
         "          [--egress-max-bytes N] [--egress-idle-timeout-ms N]\n"
         "          [--egress-max-connection-ms N]\n"
         "          [--egress-upstream-ca FILE]]\n"
         "Relays HTTP/1.1 on the Unix socket PATH to the MCP servers the policy FILE allows.\n"
         "With --egress-listen, also serves a forward proxy (CONNECT, and absolute-form HTTP)\n"
         "for the hosts the egress rules FILE allows. With --secrets, requests to the hosts it\n"
         "names get its headers: relayed MCP requests directly, CONNECTs by interception (a\n"
         "session CA).\n";
}

}  // namespace sidecar
