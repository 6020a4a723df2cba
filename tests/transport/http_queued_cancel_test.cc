// notifications/cancelled over HTTP for a request still waiting behind an earlier one with the
// same ordering key: the transport admits it on arrival and lets it run at once when cancelled.
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <strings.h>

#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "fake_endpoint.h"
#include "transport/http_transport.h"

namespace {

using transport_test::FakeFactory;
using transport_test::json;
using namespace std::chrono_literals;

// Reference-counted by libcurl, so harmless next to http_transport_test.cc's.
struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  ~CurlGlobal() { curl_global_cleanup(); }
};
const CurlGlobal curl_global;

struct Reply {
  long status = 0;
  std::string body;
  std::string session_id;  // the Mcp-Session-Id response header
};

std::size_t appendBody(char* data, std::size_t size, std::size_t count, void* user) {
  static_cast<Reply*>(user)->body.append(data, size * count);
  return size * count;
}

std::size_t readSessionHeader(char* data, std::size_t size, std::size_t count, void* user) {
  const std::string line(data, size * count);
  const std::string name = "mcp-session-id:";
  if (line.size() > name.size() && strncasecmp(line.c_str(), name.c_str(), name.size()) == 0) {
    std::string value = line.substr(name.size());
    value.erase(0, value.find_first_not_of(' '));
    value.erase(value.find_last_not_of("\r\n ") + 1);
    static_cast<Reply*>(user)->session_id = value;
  }
  return size * count;
}

Reply post(std::uint16_t port, const json& message, const std::string& session_id = {}) {
  Reply reply;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
  const std::string body = message.dump();
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Accept: application/json, text/event-stream");
  if (!session_id.empty()) {
    headers = curl_slist_append(headers, ("Mcp-Session-Id: " + session_id).c_str());
  }
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOPROXY, "*");
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 15L);
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, &appendBody);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &reply);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, &readSessionHeader);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &reply);
  const CURLcode rc = curl_easy_perform(curl.get());
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) throw std::runtime_error(std::string("curl: ") + curl_easy_strerror(rc));
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

json request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

template <typename Predicate>
bool eventually(Predicate done) {
  for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(10ms);
  return done();
}

TEST(Unit, HttpCancelledRequestDoesNotWaitBehindTheEarlierOneWithItsKey) {
  auto factory = std::make_shared<FakeFactory>();
  transport::HttpTransportOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  transport::HttpTransport server(factory, options);
  server.start();
  const std::uint16_t port = server.port();
  const std::string session =
      post(port, request(1, "initialize", {{"protocolVersion", "2025-11-25"}})).session_id;
  ASSERT_FALSE(session.empty());
  auto endpoint = factory->last();

  auto slow = std::async(std::launch::async, [&] {
    return post(port, request(2, "slow", {{"lane", "x"}}), session);
  });
  ASSERT_TRUE(eventually([&] { return endpoint->slow_started.load() == 1; }));
  auto queued = std::async(std::launch::async, [&] {
    return post(port, request(3, "queued", {{"lane", "x"}}), session);
  });
  ASSERT_TRUE(eventually([&] { return endpoint->admittedCount() == 1; }));
  const Reply cancel = post(
      port,
      {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 3}}}},
      session);
  EXPECT_EQ(cancel.status, 202);

  ASSERT_EQ(queued.wait_for(2s), std::future_status::ready) << "it waited for the slow request";
  EXPECT_EQ(json::parse(queued.get().body)["result"]["cancelled"], true);
  EXPECT_NE(slow.wait_for(0s), std::future_status::ready);
  endpoint->gate.open();
  EXPECT_EQ(json::parse(slow.get().body)["result"]["released"], true);
  server.stop();
}

}  // namespace
