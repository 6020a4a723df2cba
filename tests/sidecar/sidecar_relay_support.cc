#include "sidecar_relay_support.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "../support/http_header_line.h"
#include "audit_lines.h"
#include "sidecar/audit_log.h"

namespace relay_test {
namespace {

// libcurl's global state, set up before the first test's client and torn down at exit.
class CurlGlobal {
 public:
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  ~CurlGlobal() { curl_global_cleanup(); }
  CurlGlobal(const CurlGlobal&) = delete;
  CurlGlobal& operator=(const CurlGlobal&) = delete;
};

struct CurlState {
  Reply reply;
  const Call* call = nullptr;
};

std::size_t onBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* state = static_cast<CurlState*>(user);
  state->reply.body.append(data, size * count);
  if (state->call->on_data && !state->call->on_data(state->reply.body)) return 0;
  return size * count;
}

std::size_t onHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto* state = static_cast<CurlState*>(user);
  if (auto header = test_support::parseHeaderLine(std::string_view(data, size * count))) {
    state->reply.headers[header->first] = std::move(header->second);
  }
  return size * count;
}

}  // namespace

void SidecarRelay::SetUp() {
  static const CurlGlobal curl_global;
  char dir_template[] = "/tmp/sidecar-relay-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  dir_ = dir_template;
  dead_port_ = sidecar_test::unusedPort();
  const std::string origin = "http://127.0.0.1:" + std::to_string(upstream_.port());
  const json entries = json::array({origin + "/ok",
                                    json{{"url", origin + "/restricted"},
                                         {"id", "restricted"},
                                         {"methods", {"initialize", "tools/list", "tools/call"}},
                                         {"tools", {"echo"}}},
                                    "http://127.0.0.1:" + std::to_string(dead_port_) + "/down"});
  config_.listen_path = dir_ + "/mcp.sock";
  config_.policy_file = "(inline)";
  config_.audit_log_path = dir_ + "/audit.log";
  config_.session_id = "test-session";
  config_.max_body_bytes = 4096;
  config_.upstream_connect_timeout_ms = 2000;
  config_.upstream_idle_timeout_ms = 1000;
  config_.idle_timeout_ms = 5000;
  config_.max_concurrent_requests = 4;
  server_ = std::make_unique<sidecar::SidecarServer>(
      config_, policy::loadPolicy(entries), sidecar::AuditLog::open(config_.audit_log_path));
  server_->start();
}

void SidecarRelay::TearDown() {
  server_.reset();
  std::remove(config_.audit_log_path.c_str());
  rmdir(dir_.c_str());
}

Reply SidecarRelay::perform(const Call& call) {
  CurlState state;
  state.call = &call;
  CURL* curl = curl_easy_init();
  curl_slist* headers = nullptr;
  for (const auto& header : call.headers) headers = curl_slist_append(headers, header.c_str());
  curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, config_.listen_path.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, call.url.c_str());
  if (!call.request_target.empty()) {
    curl_easy_setopt(curl, CURLOPT_REQUEST_TARGET, call.request_target.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, call.method.c_str());
  if (!call.body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(call.body.size()));
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, call.body.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 15'000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &onBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &onHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &state);
  state.reply.code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &state.reply.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return state.reply;
}

std::vector<json> SidecarRelay::auditLines(std::size_t count) {
  return sidecar_test::waitForAuditLines(config_.audit_log_path, count);
}

}  // namespace relay_test
