// Helpers shared by the sidecar relay tests (sidecar_relay_*_test.cc): the SidecarRelay fixture
// runs the sidecar server in-process on a temporary Unix socket in front of a test upstream on
// 127.0.0.1, and sends requests with libcurl as the sandboxed client would
// (CURLOPT_UNIX_SOCKET_PATH).
#pragma once

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sidecar/sidecar_server.h"
#include "test_upstream.h"

namespace relay_test {

using json = nlohmann::json;

struct Reply {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  [[nodiscard]] json bodyJson() const { return json::parse(body); }
  [[nodiscard]] std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct Call {
  std::string url;             // the URL curl uses; the request goes over the Unix socket
  std::string request_target;  // set: send this target instead (absolute-form)
  std::string method = "GET";
  std::vector<std::string> headers;
  std::string body;
  // Called with everything received so far; return false to hang up.
  std::function<bool(const std::string&)> on_data;
};

class SidecarRelay : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  [[nodiscard]] std::string origin() const {
    return "http://127.0.0.1:" + std::to_string(upstream_.port());
  }

  Reply perform(const Call& call);

  // Audit lines so far; waits briefly for `count` of them (the worker writes after answering).
  std::vector<json> auditLines(std::size_t count);

  sidecar_test::TestUpstream upstream_;
  std::uint16_t dead_port_ = 0;
  std::string dir_;
  sidecar::SidecarConfig config_;
  std::unique_ptr<sidecar::SidecarServer> server_;
};

}  // namespace relay_test
