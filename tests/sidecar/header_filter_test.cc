#include "sidecar/header_filter.h"

#include <gtest/gtest.h>

namespace {

using sidecar::HeaderList;

bool has(const HeaderList& headers, const std::string& name) {
  return !sidecar::findHeader(headers, name).empty();
}

TEST(HeaderFilter, RequestDropsHopByHopProxyAndCurlOwnedFields) {
  const HeaderList in = {{"Host", "example.com"},
                         {"Connection", "keep-alive, X-Hop"},
                         {"X-Hop", "1"},
                         {"Keep-Alive", "timeout=5"},
                         {"Proxy-Authorization", "Basic x"},
                         {"proxy-connection", "close"},
                         {"TE", "trailers"},
                         {"Trailer", "X-T"},
                         {"Transfer-Encoding", "chunked"},
                         {"Upgrade", "websocket"},
                         {"Content-Length", "12"},
                         {"Expect", "100-continue"},
                         {"Authorization", "Bearer t"},
                         {"Mcp-Session-Id", "abc"},
                         {"Content-Type", "application/json"}};
  const auto out = sidecar::filterRequestHeaders(in);
  const HeaderList expected = {{"Authorization", "Bearer t"},
                               {"Mcp-Session-Id", "abc"},
                               {"Content-Type", "application/json"}};
  EXPECT_EQ(out, expected);
}

TEST(HeaderFilter, ResponseKeepsContentLengthOnlyWhenNotRechunked) {
  const HeaderList in = {{"Content-Length", "5"},
                         {"Transfer-Encoding", "chunked"},
                         {"Content-Type", "text/event-stream"},
                         {"Location", "http://127.0.0.1:1/x"}};
  const auto rechunked = sidecar::filterResponseHeaders(in, true);
  EXPECT_FALSE(has(rechunked, "Content-Length"));
  EXPECT_FALSE(has(rechunked, "Transfer-Encoding"));
  EXPECT_TRUE(has(rechunked, "Location"));
  const auto head_only = sidecar::filterResponseHeaders(in, false);
  EXPECT_EQ(sidecar::findHeader(head_only, "content-length"), "5");
}

TEST(HeaderFilter, HopByHopNamesAreCaseInsensitive) {
  EXPECT_TRUE(sidecar::isHopByHopHeader("CONNECTION"));
  EXPECT_TRUE(sidecar::isHopByHopHeader("proxy-authenticate"));
  EXPECT_TRUE(sidecar::isHopByHopHeader("transfer-encoding"));
  EXPECT_FALSE(sidecar::isHopByHopHeader("Proxy"));
  EXPECT_FALSE(sidecar::isHopByHopHeader("Content-Type"));
}

}  // namespace
