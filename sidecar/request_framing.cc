#include "sidecar/request_framing.h"

#include <string_view>

#include "common/text.h"

namespace sidecar {
namespace {

namespace http = boost::beast::http;

std::string_view trimBlanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::string_view valueOf(const http::request_header<>& head, http::field name) {
  const auto value = head[name];
  return {value.data(), value.size()};
}

}  // namespace

std::optional<std::string> framingRefusal(const http::request_header<>& head) {
  const std::size_t encodings = head.count(http::field::transfer_encoding);
  const std::size_t lengths = head.count(http::field::content_length);
  if (encodings > 1) {
    return "the request has more than one Transfer-Encoding field; send one: "
           "\"Transfer-Encoding: chunked\"";
  }
  if (lengths > 1) {
    return "the request has more than one Content-Length field; send one";
  }
  if (lengths == 1 &&
      valueOf(head, http::field::content_length).find(',') != std::string_view::npos) {
    return "the request's Content-Length is a list; send one number";
  }
  if (encodings == 0) return std::nullopt;
  if (lengths == 1) {
    return "the request has both Transfer-Encoding and Content-Length; send one of them";
  }
  if (head.version() < 11) {
    return "an HTTP/1.0 request cannot have a Transfer-Encoding; send a Content-Length, or use "
           "HTTP/1.1";
  }
  if (!common::iequals(trimBlanks(valueOf(head, http::field::transfer_encoding)), "chunked")) {
    return "the request's Transfer-Encoding is not relayed: only \"chunked\" alone is (send the "
           "body with \"Transfer-Encoding: chunked\" or a Content-Length)";
  }
  return std::nullopt;
}

}  // namespace sidecar
