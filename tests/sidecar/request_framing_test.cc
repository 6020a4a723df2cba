// Which request heads the proxy forwards with their own framing (sidecar/request_framing.h):
// one `chunked` Transfer-Encoding or one Content-Length value; anything an upstream could frame
// otherwise than Beast (a coding list, a quoted or unknown coding, repeated fields, a length
// list, both fields, Transfer-Encoding on HTTP/1.0) is refused with a reason. The heads are built
// directly: Beast's parser rejects some of these itself, the check must not rely on it.
#include "sidecar/request_framing.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

namespace http = boost::beast::http;

struct Row {
  std::vector<std::pair<http::field, std::string>> fields;
  unsigned version;
  std::string reason;  // a substring of the refusal; empty: forwarded
};

http::request_header<> headOf(const Row& row) {
  http::request_header<> head;
  head.method(http::verb::post);
  head.target("/store");
  head.version(row.version);
  head.set(http::field::host, "api.test");
  for (const auto& [name, value] : row.fields) head.insert(name, value);
  return head;
}

TEST(RequestFraming, ForwardsOnlyFramingEveryUpstreamReadsTheSameWay) {
  constexpr auto kTe = http::field::transfer_encoding;
  constexpr auto kCl = http::field::content_length;
  const std::vector<Row> rows = {
      {{}, 11, ""},
      {{}, 10, ""},
      {{{kTe, "chunked"}}, 11, ""},
      {{{kTe, "Chunked "}}, 11, ""},
      {{{kTe, "\tCHUNKED"}}, 11, ""},
      {{{kCl, "5"}}, 11, ""},
      {{{kCl, "0"}}, 10, ""},
      {{{kTe, "chunked, identity"}}, 11, "only \"chunked\""},
      {{{kTe, "gzip, chunked"}}, 11, "only \"chunked\""},
      {{{kTe, "gzip"}}, 11, "only \"chunked\""},
      {{{kTe, "identity"}}, 11, "only \"chunked\""},
      {{{kTe, "\"chunked\""}}, 11, "only \"chunked\""},
      {{{kTe, ""}}, 11, "only \"chunked\""},
      {{{kTe, "chunked"}, {kTe, "chunked"}}, 11, "more than one Transfer-Encoding"},
      {{{kTe, "gzip"}, {kTe, "chunked"}}, 11, "more than one Transfer-Encoding"},
      {{{kCl, "5, 5"}}, 11, "is a list"},
      {{{kCl, "5,5"}}, 11, "is a list"},
      {{{kCl, "5"}, {kCl, "5"}}, 11, "more than one Content-Length"},
      {{{kTe, "chunked"}, {kCl, "5"}}, 11, "both"},
      {{{kCl, "5"}, {kTe, "chunked"}}, 11, "both"},
      {{{kTe, "chunked"}}, 10, "HTTP/1.0"},
  };
  for (const auto& row : rows) {
    const auto head = headOf(row);
    std::string fields;
    for (const auto& [name, value] : row.fields) {
      const auto text = http::to_string(name);
      fields += std::string(text.data(), text.size()) + ": " + value + "; ";
    }
    SCOPED_TRACE("HTTP/" + std::to_string(row.version / 10) + "." +
                 std::to_string(row.version % 10) + " " + fields);
    const auto refusal = sidecar::framingRefusal(head);
    if (row.reason.empty()) {
      EXPECT_FALSE(refusal.has_value()) << refusal.value_or("");
      continue;
    }
    const std::string why = refusal.value_or("");
    EXPECT_NE(why.find(row.reason), std::string::npos) << "refused for: \"" << why << "\"";
  }
}

// Other fields never matter, whatever the Connection header names.
TEST(RequestFraming, OtherFieldsDoNotMatter) {
  http::request_header<> head;
  head.method(http::verb::get);
  head.target("/");
  head.version(11);
  head.set(http::field::connection, "transfer-encoding, content-length");
  head.set("X-Transfer-Encoding", "gzip");
  head.set(http::field::te, "trailers, gzip");
  EXPECT_FALSE(sidecar::framingRefusal(head).has_value());
}

}  // namespace
