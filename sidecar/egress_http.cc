#include "sidecar/egress_http.h"

#include <cctype>

namespace sidecar {
namespace {

std::string reasonPhrase(std::string_view reason) {
  std::string phrase;
  for (const char c : reason.substr(0, 300)) {
    const auto byte = static_cast<unsigned char>(c);
    phrase += (byte >= 0x20 && byte < 0x7f) ? c : ' ';
  }
  if (reason.size() > 300) phrase += "...";
  return phrase;
}

const char* statusText(unsigned status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 411:
      return "Length Required";
    case 431:
      return "Request Header Fields Too Large";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Error";
  }
}

}  // namespace

std::string refusalResponse(unsigned status, std::string_view reason) {
  const std::string body = std::string(reason) + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + statusText(status) + ": " +
         reasonPhrase(reason) +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nX-Sandbox-Egress: refused\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

std::vector<std::string> connectionTokens(std::string_view value) {
  std::vector<std::string> tokens;
  std::string token;
  for (const char c : std::string(value) + ",") {
    if (c == ',') {
      if (!token.empty()) tokens.push_back(token);
      token.clear();
    } else if (c != ' ' && c != '\t') {
      token += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return tokens;
}

}  // namespace sidecar
