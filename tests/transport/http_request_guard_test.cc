#include "transport/http_request_guard.h"

#include <gtest/gtest.h>

#include <boost/beast/http/message.hpp>
#include <string>
#include <vector>

#include "transport/origin_check.h"

namespace {

namespace http = boost::beast::http;
using transport::RequestGuardConfig;

http::request_header<> post(const char* target = "/mcp") {
  http::request_header<> request;
  request.method(http::verb::post);
  request.target(target);
  request.set(http::field::host, "127.0.0.1:8080");
  request.set(http::field::content_type, "application/json");
  request.set(http::field::accept, "application/json, text/event-stream");
  return request;
}

RequestGuardConfig config(std::string token = {}) {
  RequestGuardConfig result;
  result.path = "/mcp";
  result.token = std::move(token);
  result.allowed_origins = transport::defaultAllowedOrigins();
  result.require_loopback_host = true;
  return result;
}

http::status statusOf(const http::request_header<>& request, const RequestGuardConfig& cfg) {
  const auto rejection = transport::checkRequest(request, cfg);
  return rejection ? rejection->status : http::status::ok;
}

TEST(Unit, GuardAcceptsWellFormedPost) {
  EXPECT_EQ(statusOf(post(), config()), http::status::ok);
  auto with_query = post("/mcp?x=1");
  EXPECT_EQ(statusOf(with_query, config()), http::status::ok);
  auto charset = post();
  charset.set(http::field::content_type, "Application/JSON; charset=utf-8");
  EXPECT_EQ(statusOf(charset, config()), http::status::ok);
  auto no_accept = post();
  no_accept.erase(http::field::accept);
  EXPECT_EQ(statusOf(no_accept, config()), http::status::ok);  // lenient
}

TEST(Unit, GuardRejectsWithTheRightStatus) {
  auto wrong_path = post("/other");
  EXPECT_EQ(statusOf(wrong_path, config()), http::status::not_found);

  auto form = post();
  form.set(http::field::content_type, "application/x-www-form-urlencoded");
  EXPECT_EQ(statusOf(form, config()), http::status::unsupported_media_type);

  auto html = post();
  html.set(http::field::accept, "text/html");
  EXPECT_EQ(statusOf(html, config()), http::status::not_acceptable);

  // A POST's version is judged with its body (unsupportedVersion after parsing); DELETE's here.
  auto old_version = post();
  old_version.set("MCP-Protocol-Version", "2024-11-05");
  EXPECT_EQ(statusOf(old_version, config()), http::status::ok);
  ASSERT_TRUE(transport::unsupportedVersion(old_version));
  EXPECT_EQ(transport::unsupportedVersion(old_version)->status, http::status::bad_request);
  old_version.method(http::verb::delete_);
  EXPECT_EQ(statusOf(old_version, config()), http::status::bad_request);
  old_version.set("MCP-Protocol-Version", "2025-06-18");
  EXPECT_EQ(statusOf(old_version, config()), http::status::ok);
  EXPECT_FALSE(transport::unsupportedVersion(old_version));

  auto evil_origin = post();
  evil_origin.set(http::field::origin, "http://evil.example");
  EXPECT_EQ(statusOf(evil_origin, config()), http::status::forbidden);

  auto rebinding = post();
  rebinding.set(http::field::host, "evil.example:8080");
  EXPECT_EQ(statusOf(rebinding, config()), http::status::forbidden);
  auto public_bind = config("tok");
  public_bind.require_loopback_host = false;
  rebinding.set(http::field::authorization, "Bearer tok");
  EXPECT_EQ(statusOf(rebinding, public_bind), http::status::ok);
}

TEST(Unit, GuardMethodNotAllowedCarriesAllow) {
  auto get = post();
  get.method(http::verb::get);
  const auto rejection = transport::checkRequest(get, config());
  ASSERT_TRUE(rejection.has_value());
  EXPECT_EQ(rejection->status, http::status::method_not_allowed);
  ASSERT_EQ(rejection->headers.size(), 1u);
  EXPECT_EQ(rejection->headers[0].first, "Allow");
  EXPECT_EQ(rejection->headers[0].second, "POST, DELETE");

  auto del = post();
  del.method(http::verb::delete_);
  del.erase(http::field::content_type);
  EXPECT_EQ(statusOf(del, config()), http::status::ok);
}

TEST(Unit, GuardRequiresBearerTokenWhenConfigured) {
  const auto cfg = config("s3cr3t");
  auto request = post();
  const auto missing = transport::checkRequest(request, cfg);
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->status, http::status::unauthorized);
  ASSERT_FALSE(missing->headers.empty());
  EXPECT_EQ(missing->headers[0].first, "WWW-Authenticate");
  request.set(http::field::authorization, "Bearer wrong");
  EXPECT_EQ(statusOf(request, cfg), http::status::unauthorized);
  request.set(http::field::authorization, "Bearer s3cr3t");
  EXPECT_EQ(statusOf(request, cfg), http::status::ok);
}

// Which principal a request is: the tokens file's name for its token, "default" for the one
// --token-file token, "local" with no token configured; nothing for a wrong or missing token.
TEST(Unit, GuardAuthenticatesEachTokenAsItsPrincipal) {
  EXPECT_EQ(transport::authenticate(post(), config())->name, "local");
  EXPECT_FALSE(transport::authenticate(post(), config())->from_tokens_file);

  auto cfg = config(std::string(32, 'd'));
  cfg.principal_tokens = {{"alice", std::string(32, 'a')}, {"bob", std::string(32, 'b')}};
  const auto as = [&](const std::string& authorization) {
    auto request = post();
    if (!authorization.empty()) request.set(http::field::authorization, authorization);
    return transport::authenticate(request, cfg);
  };
  EXPECT_FALSE(as(""));
  EXPECT_FALSE(as("Bearer " + std::string(31, 'a')));
  EXPECT_FALSE(as("Basic " + std::string(32, 'a')));
  ASSERT_TRUE(as("Bearer " + std::string(32, 'a')));
  EXPECT_EQ(as("Bearer " + std::string(32, 'a'))->name, "alice");
  EXPECT_TRUE(as("bearer " + std::string(32, 'b'))->from_tokens_file);
  EXPECT_EQ(as("bearer " + std::string(32, 'b'))->name, "bob");
  EXPECT_EQ(as("Bearer " + std::string(32, 'd'))->name, "default");
  EXPECT_FALSE(as("Bearer " + std::string(32, 'd'))->from_tokens_file);
  auto refused = post();
  EXPECT_EQ(statusOf(refused, cfg), http::status::unauthorized);
}

// With previews on, a Host or Origin under preview.domain is sandbox content in a browser: it never
// reaches the MCP endpoint, whatever the Origin allowlist, the token or the loopback check say.
TEST(Unit, GuardRefusesPreviewHostsAndOrigins) {
  const std::string label = "0123456789abcdef0123456789abcdef";
  auto cfg = config("tok");
  cfg.preview_domain = "localhost";
  cfg.allowed_origins.push_back("http://" + label + ".localhost:8766");
  struct Row {
    const char* name;
    std::string host;
    std::string origin;  // empty: none sent
    bool preview;        // refused as a preview address
  };
  const std::vector<Row> rows = {
      {"a preview origin", "localhost:8080", "http://" + label + ".localhost:8766", true},
      {"a preview origin in upper case", "localhost:8080", "http://" + label + ".LOCALHOST:8766",
       true},
      {"a preview host", "x.localhost:8080", "", true},
      {"a preview host with a trailing dot", label + ".localhost.:8080", "", true},
      {"a nested preview host", "a.b.localhost", "", true},
      {"the domain itself", "localhost:8080", "", false},
      {"the domain itself as the origin", "localhost:8080", "http://localhost:8766", false},
      {"loopback address", "127.0.0.1:8080", "http://127.0.0.1:3000", false},
  };
  for (const auto& row : rows) {
    auto request = post();
    request.set(http::field::host, row.host);
    if (!row.origin.empty()) request.set(http::field::origin, row.origin);
    request.set(http::field::authorization, "Bearer tok");
    const auto rejection = transport::checkRequest(request, cfg);
    if (!row.preview) {
      EXPECT_FALSE(rejection) << row.name << ": " << rejection->message;
      continue;
    }
    ASSERT_TRUE(rejection) << row.name;
    EXPECT_EQ(rejection->status, http::status::forbidden) << row.name;
    EXPECT_NE(rejection->message.find("preview"), std::string::npos)
        << row.name << ": " << rejection->message;
  }

  // Off (no preview.domain), the same origin is whatever its allowlist says.
  cfg.preview_domain.clear();
  auto allowed = post();
  allowed.set(http::field::origin, "http://" + label + ".localhost:8766");
  allowed.set(http::field::authorization, "Bearer tok");
  EXPECT_EQ(statusOf(allowed, cfg), http::status::ok);
  // A server not bound to loopback takes any Host; with previews on, not a preview one.
  cfg.require_loopback_host = false;
  auto public_host = post();
  public_host.set(http::field::host, label + ".localhost:8080");
  public_host.set(http::field::authorization, "Bearer tok");
  EXPECT_EQ(statusOf(public_host, cfg), http::status::ok);
  cfg.preview_domain = "localhost";
  EXPECT_EQ(statusOf(public_host, cfg), http::status::forbidden);
}

}  // namespace
