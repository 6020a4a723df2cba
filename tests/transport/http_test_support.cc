#include "http_test_support.h"

#include <curl/curl.h>

#include <stdexcept>
#include <utility>

#include "../support/http_header_line.h"

namespace http_test {
namespace {

class CurlGlobal {
 public:
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  ~CurlGlobal() { curl_global_cleanup(); }
};
const CurlGlobal curl_global;

struct CurlState {
  Reply reply;
  const Call* call;
};

std::size_t onBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* state = static_cast<CurlState*>(user);
  state->reply.body.append(data, size * count);
  if (state->call->on_data) state->call->on_data(state->reply.body);
  return size * count;
}

std::size_t onHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto* state = static_cast<CurlState*>(user);
  const std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    state->reply.status_lines.push_back(line.substr(0, line.find_last_not_of("\r\n") + 1));
    return size * count;
  }
  if (auto header = test_support::parseHeaderLine(line)) {
    state->reply.headers[header->first] = std::move(header->second);
  }
  return size * count;
}

}  // namespace

Reply perform(std::uint16_t port, const Call& call) {
  CurlState state{{}, &call};
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + call.path;
  curl_slist* list = nullptr;
  for (const auto& h : call.headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOPROXY, "*");  // tests talk to loopback only
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 15L);
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, &onBody);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, &onHeader);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &state);
  if (call.method == "POST") {
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, call.body.data());
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(call.body.size()));
  } else if (call.method == "HEAD") {
    curl_easy_setopt(curl.get(), CURLOPT_NOBODY, 1L);  // else curl waits for the announced body
  } else {
    curl_easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, call.method.c_str());
  }
  const CURLcode rc = curl_easy_perform(curl.get());
  curl_slist_free_all(list);
  if (rc != CURLE_OK) throw std::runtime_error(std::string("curl: ") + curl_easy_strerror(rc));
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &state.reply.status);
  return state.reply;
}

json request(int id, const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json initializeRequest(bool fail) {
  return request(1, "initialize",
                 {{"protocolVersion", "2025-11-25"},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "test"}, {"version", "1"}}},
                  {"fail", fail}});
}

}  // namespace http_test
