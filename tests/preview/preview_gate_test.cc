// What the preview listener decides from a connection's first request head, before any sandbox
// is touched. Each head is parsed from the raw bytes a client sends, with the parser the
// listener uses (request_parser<empty_body>), so a row shows what really reaches checkFraming.
#include "preview/preview_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <cctype>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fake_backend.h"
#include "server/session.h"

namespace {

using namespace std::chrono_literals;
namespace http = boost::beast::http;
using preview::PreviewGate;

// The head `raw` parses to, or the parser's error (the listener answers 400 "Malformed request"
// then, and checkFraming never sees it).
struct Parsed {
  std::optional<http::request_header<>> head;
  std::string error;
};

Parsed parse(std::string_view raw) {
  http::request_parser<http::empty_body> parser;
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(raw.data(), raw.size()), ec);
  if (ec) return {std::nullopt, ec.message()};
  if (!parser.is_header_done()) return {std::nullopt, "incomplete head"};
  return {parser.get().base(), ""};
}

http::request_header<> head(std::string_view raw) {
  auto parsed = parse(raw);
  EXPECT_TRUE(parsed.head) << parsed.error << " in: " << raw;
  return parsed.head ? *parsed.head : http::request_header<>{};
}

std::string get(const std::string& host) { return "GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n"; }

std::shared_ptr<server::Session> makeSession(std::atomic<int>& live, const std::string& id,
                                             const std::string& owner = "alice") {
  return std::make_shared<server::Session>(
      id, owner, server::SessionOptions{},
      std::make_unique<testing_support::FakeSandbox>("c-" + id, "python:3.12", live));
}

TEST(PreviewFraming, SmugglingAndRoutingShapesAreRefused) {
  enum class By { kParser, kFraming, kNone };
  struct Row {
    const char* name;
    std::string raw;
    By by;
    http::status status;  // for kFraming
  };
  const std::string host = "Host: 0123456789abcdef0123456789abcdef.localhost:8766\r\n";
  const Row rows[] = {
      {"a plain GET", "GET /index.html?x=1 HTTP/1.1\r\n" + host + "\r\n", By::kNone, {}},
      {"a POST with a length",
       "POST /api HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\n",
       By::kNone,
       {}},
      {"a chunked POST",
       "POST /api HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n",
       By::kNone,
       {}},
      {"chunked in upper case",
       "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: CHUNKED\r\n\r\n",
       By::kNone,
       {}},
      {"a WebSocket upgrade",
       "GET /ws HTTP/1.1\r\n" + host +
           "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
       By::kNone,
       {}},
      {"two Host headers", "GET / HTTP/1.1\r\n" + host + "Host: evil.example\r\n\r\n", By::kFraming,
       http::status::bad_request},
      {"two Host headers, other case", "GET / HTTP/1.1\r\n" + host + "hOST: a\r\n\r\n",
       By::kFraming, http::status::bad_request},
      {"no Host", "GET / HTTP/1.1\r\n\r\n", By::kFraming, http::status::bad_request},
      {"HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n", By::kFraming, http::status::bad_request},
      {"Transfer-Encoding then Content-Length",
       "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\n",
       By::kFraming, http::status::bad_request},
      {"Content-Length then Transfer-Encoding (the parser refuses it first)",
       "POST / HTTP/1.1\r\n" + host + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
       By::kParser,
       {}},
      {"chunked then Content-Length (the parser refuses it first)",
       "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
       By::kParser,
       {}},
      {"chunked, identity",
       "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked, identity\r\n\r\n", By::kFraming,
       http::status::not_implemented},
      {"identity, chunked",
       "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: identity, chunked\r\n\r\n", By::kFraming,
       http::status::not_implemented},
      {"xchunked", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: xchunked\r\n\r\n",
       By::kFraming, http::status::not_implemented},
      {"two Transfer-Encoding fields",
       "POST / HTTP/1.1\r\n" + host +
           "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
       By::kFraming, http::status::not_implemented},
      {"CONNECT", "CONNECT 127.0.0.1:22 HTTP/1.1\r\n" + host + "\r\n", By::kFraming,
       http::status::method_not_allowed},
      {"absolute-form target", "GET http://x/ HTTP/1.1\r\n" + host + "\r\n", By::kFraming,
       http::status::bad_request},
      {"asterisk-form target", "OPTIONS * HTTP/1.1\r\n" + host + "\r\n", By::kFraming,
       http::status::bad_request},
      {"authority-form target", "GET 127.0.0.1:22 HTTP/1.1\r\n" + host + "\r\n", By::kFraming,
       http::status::bad_request},
  };
  for (const auto& row : rows) {
    const auto parsed = parse(row.raw);
    if (row.by == By::kParser) {
      EXPECT_FALSE(parsed.head) << row.name;
      continue;
    }
    ASSERT_TRUE(parsed.head) << row.name << ": " << parsed.error;
    const auto refusal = preview::checkFraming(*parsed.head);
    if (row.by == By::kNone) {
      EXPECT_FALSE(refusal) << row.name << ": " << refusal->message;
      continue;
    }
    ASSERT_TRUE(refusal) << row.name;
    EXPECT_EQ(refusal->status, row.status) << row.name;
    EXPECT_FALSE(refusal->message.empty()) << row.name;
  }
}

class PreviewGateTest : public ::testing::Test {
 protected:
  PreviewGateTest() {
    cfg.listen = "127.0.0.1:8766";
    cfg.domain = "localhost";
    cfg.max_connections_per_session = 2;
    cfg.max_mib_per_session = 0;
  }

  std::string expose(const std::shared_ptr<server::Session>& session, std::uint16_t port = 8080,
                     std::chrono::seconds ttl = 60s) {
    const auto grant = table.expose(session, port, ttl, 8);
    EXPECT_TRUE(grant);
    return grant ? grant->label : std::string{};
  }
  // Made on first use, after a test has set cfg.
  PreviewGate& gate() {
    if (!gate_) gate_.emplace(cfg, table);
    return *gate_;
  }
  PreviewGate::Decision admit(const std::string& host) {
    auto request = head(get(host));
    return gate().admit(request);
  }

  static std::unique_ptr<PreviewGate::Admission> admitted(PreviewGate::Decision decision) {
    if (auto* refusal = std::get_if<preview::Refusal>(&decision)) {
      ADD_FAILURE() << "refused " << static_cast<int>(refusal->status) << ": " << refusal->message;
      return nullptr;
    }
    return std::move(std::get<std::unique_ptr<PreviewGate::Admission>>(decision));
  }
  static preview::Refusal refused(const PreviewGate::Decision& decision) {
    if (const auto* refusal = std::get_if<preview::Refusal>(&decision)) return *refusal;
    ADD_FAILURE() << "admitted";
    return {http::status::ok, ""};
  }

  std::atomic<int> live{0};
  server::PreviewTable::Clock::time_point now = server::PreviewTable::Clock::time_point{} + 1000h;
  server::PreviewTable table{[this] { return now; }};
  config::PreviewConfig cfg;
  std::optional<PreviewGate> gate_;
};

TEST_F(PreviewGateTest, ALiveLabelIsAdmittedWithItsGrant) {
  auto session = makeSession(live, "s-1", "principal:bob");
  const auto label = expose(session, 5173);
  const std::vector<std::string> hosts = {label + ".localhost:8766", label + ".localhost",
                                          label + ".localhost.:8766"};
  for (const auto& host : hosts) {
    auto admission = admitted(admit(host));
    ASSERT_TRUE(admission) << host;
    EXPECT_EQ(admission->grant().label, label);
    EXPECT_EQ(admission->grant().port, 5173);
    EXPECT_EQ(admission->grant().session_id, "s-1");
    EXPECT_EQ(admission->grant().owner, "principal:bob");
    EXPECT_EQ(admission->grant().session.lock(), session);
  }
}

TEST_F(PreviewGateTest, AnUpperCaseLabelInHostIsLowerCasedAndAdmitted) {
  auto session = makeSession(live, "s-1");
  const auto label = expose(session);
  std::string upper = label;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto admission = admitted(admit(upper + ".LOCALHOST:8766"));
  ASSERT_TRUE(admission);
  EXPECT_EQ(admission->grant().label, label);
}

TEST_F(PreviewGateTest, AHostOutsideTheDomainNamesTheListener) {
  auto session = makeSession(live, "s-1");
  const auto label = expose(session);
  const std::vector<std::string> hosts = {
      "localhost:8766",      "localhost",         "127.0.0.1:8766",
      "[::1]:8766",          "example.com",       label + ".localhost.evil.com",
      label + ".xlocalhost", label + "localhost", "user@" + label + ".localhost"};
  for (const auto& host : hosts) {
    const auto refusal = refused(admit(host));
    EXPECT_EQ(refusal.status, http::status::not_found) << host;
    EXPECT_NE(refusal.message.find("This is the preview listener"), std::string::npos)
        << host << ": " << refusal.message;
    EXPECT_NE(refusal.message.find("<label>.localhost"), std::string::npos) << refusal.message;
  }
}

// Unknown, expired, ended-with-its-session, unexposed, nested or misshapen: one answer, so that a
// guesser learns nothing of which.
TEST_F(PreviewGateTest, EveryDeadOrUnknownLabelGetsTheSameNotFound) {
  auto expiring = makeSession(live, "s-exp");
  auto ending = makeSession(live, "s-end");
  auto unexposing = makeSession(live, "s-unx");
  auto living = makeSession(live, "s-live");
  const auto expired = expose(expiring, 8080, 10s);
  const auto ended = expose(ending);
  const auto unexposed = expose(unexposing);
  const auto alive = expose(living);
  now += 10s;
  ending.reset();
  ASSERT_TRUE(table.unexpose(*unexposing, 8080));

  struct Row {
    const char* name;
    std::string host;
  };
  const Row rows[] = {
      {"never granted", "0123456789abcdef0123456789abcdef.localhost:8766"},
      {"expired", expired + ".localhost:8766"},
      {"its session ended", ended + ".localhost:8766"},
      {"unexposed", unexposed + ".localhost:8766"},
      {"a label nested under a live one", "x." + alive + ".localhost:8766"},
      {"a live label under a prefix", alive + ".x.localhost:8766"},
      {"not a label's shape", "www.localhost:8766"},
      {"one digit short", alive.substr(1) + ".localhost:8766"},
  };
  std::optional<std::string> text;
  for (const auto& row : rows) {
    const auto refusal = refused(admit(row.host));
    EXPECT_EQ(refusal.status, http::status::not_found) << row.name;
    if (!text) text = refusal.message;
    EXPECT_EQ(refusal.message, *text) << row.name;
  }
  EXPECT_NE(text->find("expose_port"), std::string::npos) << *text;
  EXPECT_TRUE(admitted(admit(alive + ".localhost:8766")));
}

TEST_F(PreviewGateTest, FramingIsCheckedBeforeTheLabel) {
  auto session = makeSession(live, "s-1");
  const auto label = expose(session);
  auto absolute =
      head("GET http://" + label + ".localhost/ HTTP/1.1\r\nHost: " + label + ".localhost\r\n\r\n");
  const auto refusal = refused(gate().admit(absolute));
  EXPECT_EQ(refusal.status, http::status::bad_request);
}

TEST_F(PreviewGateTest, ASessionHoldsAtMostMaxConnectionsPerSession) {
  auto session = makeSession(live, "s-1");
  auto other = makeSession(live, "s-2");
  const auto host = expose(session) + ".localhost:8766";
  const auto second_port = expose(session, 9090) + ".localhost:8766";
  const auto other_host = expose(other) + ".localhost:8766";

  auto first = admitted(admit(host));
  auto second = admitted(admit(second_port));  // the bound is per session, not per port
  ASSERT_TRUE(first && second);
  const auto full = refused(admit(host));
  EXPECT_EQ(full.status, http::status::service_unavailable);
  EXPECT_NE(full.message.find("max_connections_per_session"), std::string::npos) << full.message;
  EXPECT_NE(full.message.find("2 connections"), std::string::npos) << full.message;
  EXPECT_TRUE(admitted(admit(other_host))) << "another session has its own places";

  first.reset();
  auto third = admitted(admit(host));
  EXPECT_TRUE(third) << "releasing an admission frees its place";
  EXPECT_EQ(refused(admit(host)).status, http::status::service_unavailable);
}

TEST_F(PreviewGateTest, ASessionsBytesAreBoundedByMaxMibPerSession) {
  cfg.max_mib_per_session = 1;
  auto session = makeSession(live, "s-1");
  auto other = makeSession(live, "s-2");
  const auto host = expose(session) + ".localhost:8766";
  const auto other_host = expose(other) + ".localhost:8766";
  {
    auto first = admitted(admit(host));
    auto second = admitted(admit(host));
    ASSERT_TRUE(first && second);
    EXPECT_TRUE(first->spend(512 * 1024));
    EXPECT_TRUE(second->spend(512 * 1024)) << "exactly the budget is still within it";
    EXPECT_FALSE(second->spend(1)) << "the session's connections share one budget";
    EXPECT_FALSE(first->spend(0)) << "spent stays spent";
  }
  const auto refusal = refused(admit(host));
  EXPECT_EQ(refusal.status, http::status::too_many_requests);
  EXPECT_NE(refusal.message.find("max_mib_per_session"), std::string::npos) << refusal.message;
  EXPECT_NE(refusal.message.find("1 MiB"), std::string::npos) << refusal.message;

  auto fresh = admitted(admit(other_host));
  ASSERT_TRUE(fresh) << "another session has its own budget";
  EXPECT_TRUE(fresh->spend(1024));
}

TEST_F(PreviewGateTest, NoByteBoundWhenMaxMibPerSessionIsZero) {
  auto session = makeSession(live, "s-1");
  auto admission = admitted(admit(expose(session) + ".localhost"));
  ASSERT_TRUE(admission);
  EXPECT_TRUE(admission->spend(std::uint64_t{1} << 40));
  EXPECT_TRUE(admission->spend(std::uint64_t{1} << 40));
}

// A session that ends and a new one under the same owner and id (session ids may be chosen by
// the caller) starts with a fresh tally: a spent budget does not carry over.
TEST_F(PreviewGateTest, ANewSessionUnderAnEndedOnesIdStartsAfresh) {
  cfg.max_mib_per_session = 1;
  auto before = makeSession(live, "s-1");
  {
    auto admission = admitted(admit(expose(before) + ".localhost"));
    ASSERT_TRUE(admission);
    EXPECT_FALSE(admission->spend(2 * 1024 * 1024));
  }
  before.reset();
  auto after = makeSession(live, "s-1");
  auto admission = admitted(admit(expose(after) + ".localhost"));
  ASSERT_TRUE(admission);
  EXPECT_TRUE(admission->spend(1024));
}

// An admission of an ended session, still open when a new session takes the same owner and id (a
// lost sandbox comes back under its id), never releases a place of the new session's count.
TEST_F(PreviewGateTest, AnOldSessionsAdmissionDoesNotFreeANewSessionsPlace) {
  auto before = makeSession(live, "s-1");
  auto old_admission = admitted(admit(expose(before) + ".localhost"));
  ASSERT_TRUE(old_admission);
  before.reset();
  auto after = makeSession(live, "s-1");
  const auto host = expose(after) + ".localhost";
  auto first = admitted(admit(host));
  auto second = admitted(admit(host));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(refused(admit(host)).status, http::status::service_unavailable);
  old_admission.reset();
  EXPECT_EQ(refused(admit(host)).status, http::status::service_unavailable)
      << "the new session now holds 3 connections with max_connections_per_session 2";
}

}  // namespace
