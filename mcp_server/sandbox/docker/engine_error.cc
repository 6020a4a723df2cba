#include "sandbox/docker/engine_error.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "common/json_limits.h"

namespace sandbox::docker {
namespace {

bool containsNoCase(std::string_view haystack, std::string_view needle) {
  const auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                              [](char a, char b) {
                                return std::tolower(static_cast<unsigned char>(a)) ==
                                       std::tolower(static_cast<unsigned char>(b));
                              });
  return it != haystack.end();
}

std::string composeWhat(int status, const std::string& message, std::string_view request_line) {
  std::string what = "Docker engine: " + std::string(request_line) + " failed";
  if (status != 0) what += " with HTTP " + std::to_string(status);
  what += ": " + message;
  const std::string advice = engineAdvice(status, message, request_line);
  if (!advice.empty()) what += " (" + advice + ")";
  return what;
}

}  // namespace

EngineError::EngineError(int status, std::string message, std::string_view request_line)
    : SandboxError(composeWhat(status, message, request_line)),
      status_(status),
      message_(std::move(message)) {}

std::string engineAdvice(int status, std::string_view message, std::string_view request_line) {
  if (status == 0) {
    // TLS failures (tls_connection.cc) already say which file or name to check.
    if (containsNoCase(message, "docker.tls") || containsNoCase(message, "TLS")) return {};
    if (containsNoCase(message, "tcp://")) {
      return "is dockerd listening there (-H tcp://HOST:PORT --tlsverify) and reachable from "
             "this host? check docker.host";
    }
    if (containsNoCase(message, "no such file") || containsNoCase(message, "refused")) {
      return "is dockerd running? start it with scripts/setup.sh, or point the server at the "
             "right socket";
    }
    if (containsNoCase(message, "permission denied")) {
      return "run the server as a user in the 'docker' group, or as root";
    }
    if (containsNoCase(message, "timeout") || containsNoCase(message, "timed out")) {
      return "dockerd did not answer in time; check it with `docker info` and its log";
    }
    return "check that dockerd is running and its socket is reachable";
  }
  if (containsNoCase(message, "unknown runtime")) {
    return "register runsc in /etc/docker/daemon.json and restart dockerd (scripts/setup.sh "
           "does both)";
  }
  if (status == 404 &&
      (containsNoCase(message, "no such image") || containsNoCase(request_line, "/images/"))) {
    return "build it with docker/build-images.sh (images cannot be pulled here)";
  }
  if (status == 404 && containsNoCase(message, "no such container")) {
    return "the sandbox no longer exists; start a new session";
  }
  if (status == 409 && containsNoCase(message, "removal")) {
    return "the sandbox is already being removed";
  }
  if (status == 409 && containsNoCase(message, "is not running")) {
    return "the sandbox has stopped; start a new session";
  }
  if (status >= 500)
    return "dockerd reported an internal error; see its log (journalctl -u docker)";
  return {};
}

std::string engineMessageFromBody(std::string_view body) {
  const auto parsed = common::parseBoundedOrDiscarded(body);
  if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    return parsed["message"].get<std::string>();
  }
  std::string text(body);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (text.empty()) return "(empty reply)";
  return text;
}

}  // namespace sandbox::docker
