// Where a Docker engine listens (docker.host): "unix:///abs/path" or "tcp://HOST:PORT". Parsed
// strictly and purely, so the configuration (load-time validation) and the engine client (which
// connects) read the same grammar. The DOCKER_HOST environment variable is never consulted.
// Header-only; thread-safe (no shared state).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace common {

struct EngineHost {
  enum class Scheme { kUnix, kTcp };

  Scheme scheme = Scheme::kUnix;
  std::string path = "/var/run/docker.sock";  // kUnix: the socket's absolute path
  std::string host;                           // kTcp: DNS name, IPv4, or IPv6 without brackets
  std::uint16_t port = 0;                     // kTcp

  [[nodiscard]] static EngineHost unixSocket(std::string socket_path) {
    EngineHost out;
    out.path = std::move(socket_path);
    return out;
  }

  [[nodiscard]] bool isTcp() const noexcept { return scheme == Scheme::kTcp; }

  // The canonical spelling: unix:///path, tcp://host:port, tcp://[v6]:port.
  [[nodiscard]] std::string uri() const {
    if (!isTcp()) return "unix://" + path;
    const bool v6 = host.find(':') != std::string::npos;
    return "tcp://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  }
};

namespace engine_host_detail {

inline bool isHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-';
}

inline bool isHexOrColon(char c) {
  return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || (c >= '0' && c <= '9') || c == ':' ||
         c == '.';
}

[[noreturn]] inline void refuse(std::string_view text, const std::string& why) {
  std::string shown(text.substr(0, 200));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';  // NUL would end what()
  }
  throw std::invalid_argument("'" + shown + "' " + why);
}

inline std::uint16_t parsePort(std::string_view text, std::string_view port) {
  const bool digits =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  const unsigned long value = digits ? std::stoul(std::string(port)) : 0;
  if (!digits || value == 0 || value > 65535) {
    refuse(text,
           "must end with ':PORT', a port from 1 to 65535 (tcp://HOST:PORT, no path; dockerd's TLS "
           "port is usually 2376)");
  }
  return static_cast<std::uint16_t>(value);
}

}  // namespace engine_host_detail

// Throws std::invalid_argument saying what is wrong and what is accepted.
[[nodiscard]] inline EngineHost parseEngineHost(std::string_view text) {
  using engine_host_detail::refuse;
  constexpr std::string_view kUnix = "unix://";
  constexpr std::string_view kTcp = "tcp://";
  EngineHost out;
  if (text.substr(0, kUnix.size()) == kUnix) {
    const std::string_view path = text.substr(kUnix.size());
    if (path.empty() || path.front() != '/') {
      refuse(text, "needs an absolute socket path (unix:///var/run/docker.sock)");
    }
    // sockaddr_un holds 108 bytes including the terminating NUL.
    if (path.size() > 107 || path.find('\0') != std::string_view::npos) {
      refuse(text, "is not a usable Unix socket path (at most 107 bytes, no NUL)");
    }
    out.path = std::string(path);
    return out;
  }
  if (text.substr(0, kTcp.size()) != kTcp) {
    refuse(text, "must start with unix:// or tcp:// (ssh:// and other schemes are not supported)");
  }
  std::string_view rest = text.substr(kTcp.size());
  std::string_view host;
  if (!rest.empty() && rest.front() == '[') {  // [IPv6]:port
    const auto close = rest.find(']');
    if (close == std::string_view::npos) refuse(text, "has an unclosed '[' in its IPv6 address");
    host = rest.substr(1, close - 1);
    if (host.empty() || !std::all_of(host.begin(), host.end(), engine_host_detail::isHexOrColon)) {
      refuse(text, "has an invalid IPv6 address between '[' and ']'");
    }
    rest.remove_prefix(close + 1);
    if (rest.empty() || rest.front() != ':') refuse(text, "needs ':PORT' after the ']'");
  } else {
    const auto colon = rest.find(':');
    host = rest.substr(0, colon);
    if (host.empty() || !std::all_of(host.begin(), host.end(), engine_host_detail::isHostChar)) {
      refuse(text, "needs a host name or IP address (letters, digits, '.', '-'), then ':PORT'");
    }
    if (colon == std::string_view::npos) {
      refuse(text, "needs a port (tcp://HOST:PORT; dockerd's TLS port is usually 2376)");
    }
    rest.remove_prefix(colon);
  }
  rest.remove_prefix(1);  // the ':'
  out.scheme = EngineHost::Scheme::kTcp;
  out.path.clear();
  out.host = std::string(host);
  out.port = engine_host_detail::parsePort(text, rest);
  return out;
}

}  // namespace common
