#include "sidecar/upstream_forwarder.h"

#include <curl/curl.h>
#include <openssl/ssl.h>

#include <array>
#include <charconv>
#include <chrono>
#include <memory>
#include <new>
#include <string_view>

namespace sidecar {
namespace {

using Clock = std::chrono::steady_clock;

struct CurlDeleter {
  void operator()(CURL* handle) const noexcept { curl_easy_cleanup(handle); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;

class Slist {
 public:
  void append(const std::string& line) {
    curl_slist* head = curl_slist_append(list_.get(), line.c_str());
    if (head == nullptr) throw std::bad_alloc();
    static_cast<void>(list_.release());  // now owned through `head`
    list_.reset(head);
  }
  [[nodiscard]] curl_slist* get() const noexcept { return list_.get(); }

 private:
  std::unique_ptr<curl_slist, SlistDeleter> list_;
};

// State shared with the libcurl callbacks of one transfer (all on the calling thread).
struct Exchange {
  Exchange(ResponseSink& response_sink, const UpstreamLimits& upstream_limits, bool head)
      : sink(response_sink), limits(upstream_limits), head_request(head) {}

  ResponseSink& sink;
  const UpstreamLimits& limits;
  bool head_request;
  unsigned status = 0;
  HeaderList headers;
  std::size_t header_bytes = 0;
  bool head_sent = false;
  bool has_body = true;
  bool header_overflow = false;
  bool idle_timed_out = false;
  bool client_gone = false;
  std::uint64_t body_bytes = 0;
  Clock::time_point last_activity = Clock::now();
  curl_off_t last_downloaded = 0;
  curl_off_t last_uploaded = 0;
};

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' ||
                           text.back() == '\n')) {
    text.remove_suffix(1);
  }
  return text;
}

unsigned parseStatus(std::string_view status_line) {
  // "HTTP/1.1 200 OK" or "HTTP/2 200"
  const std::size_t space = status_line.find(' ');
  if (space == std::string_view::npos) return 0;
  const auto code = status_line.substr(space + 1, 3);
  unsigned value = 0;
  std::from_chars(code.data(), code.data() + code.size(), value);
  return value;
}

void sendHeadOnce(Exchange& exchange) {
  if (exchange.head_sent) return;
  exchange.head_sent = true;
  exchange.has_body = !exchange.head_request && exchange.status != 204 && exchange.status != 304;
  exchange.sink.sendHead(exchange.status,
                         filterResponseHeaders(exchange.headers, exchange.has_body),
                         exchange.has_body);
}

std::size_t onHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto& exchange = *static_cast<Exchange*>(user);
  const std::size_t length = size * count;
  exchange.last_activity = Clock::now();
  const std::string_view line(data, length);
  if (line.rfind("HTTP/", 0) == 0) {  // a new head (after a 1xx, the final one)
    exchange.status = parseStatus(line);
    exchange.headers.clear();
    exchange.header_bytes = length;
    return length;
  }
  exchange.header_bytes += length;
  if (exchange.header_bytes > exchange.limits.max_header_bytes) {
    exchange.header_overflow = true;
    return 0;  // aborts the transfer
  }
  const auto content = trim(line);
  if (content.empty()) {  // end of a head; 1xx heads are not relayed
    if (exchange.status >= 200) sendHeadOnce(exchange);
    return length;
  }
  if ((line.front() == ' ' || line.front() == '\t') && !exchange.headers.empty()) {
    exchange.headers.back().second += " " + std::string(content);  // obsolete line folding
    return length;
  }
  const std::size_t colon = content.find(':');
  if (colon != std::string_view::npos) {
    exchange.headers.emplace_back(std::string(trim(content.substr(0, colon))),
                                  std::string(trim(content.substr(colon + 1))));
  }
  return length;
}

std::size_t onBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto& exchange = *static_cast<Exchange*>(user);
  const std::size_t length = size * count;
  exchange.last_activity = Clock::now();
  sendHeadOnce(exchange);
  if (!exchange.has_body) return length;
  if (!exchange.sink.sendChunk(std::string(data, length))) {
    exchange.client_gone = true;
    return 0;  // aborts the transfer: the upstream sees its connection closed
  }
  exchange.body_bytes += length;
  return length;
}

// libcurl calls this at least once a second, also while nothing arrives.
int onProgress(void* user, curl_off_t /*download_total*/, curl_off_t downloaded,
               curl_off_t /*upload_total*/, curl_off_t uploaded) {
  auto& exchange = *static_cast<Exchange*>(user);
  if (exchange.sink.clientGone()) {
    exchange.client_gone = true;
    return 1;
  }
  const auto now = Clock::now();
  if (downloaded != exchange.last_downloaded || uploaded != exchange.last_uploaded) {
    exchange.last_downloaded = downloaded;
    exchange.last_uploaded = uploaded;
    exchange.last_activity = now;
    return 0;
  }
  if (now - exchange.last_activity > std::chrono::milliseconds(exchange.limits.idle_timeout_ms)) {
    exchange.idle_timed_out = true;
    return 1;
  }
  return 0;
}

// CURLOPT_SSL_CTX_FUNCTION: each new TLS connection's OpenSSL context, before it connects.
CURLcode addExtraCa(CURL* /*handle*/, void* ssl_ctx, void* certificates) {
  static_cast<const ExtraCaCertificates*>(certificates)
      ->addTo(SSL_CTX_get_cert_store(static_cast<SSL_CTX*>(ssl_ctx)));
  return CURLE_OK;
}

Slist buildHeaders(const ForwardRequest& request) {
  Slist list;
  for (const auto& [name, value] : request.headers) {
    // "Name;" is libcurl's spelling of a header with an empty value.
    list.append(value.empty() ? name + ";" : name + ": " + value);
  }
  list.append("Expect:");  // no 100-continue round trip: the body is already here
  if (!request.body.empty() && findHeader(request.headers, "Content-Type").empty()) {
    list.append("Content-Type:");  // do not invent application/x-www-form-urlencoded
  }
  return list;
}

void setMethod(CURL* handle, const ForwardRequest& request) {
  if (request.method == "GET" && request.body.empty()) {
    curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L);
    return;
  }
  if (request.method == "HEAD") {
    curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
    return;
  }
  curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request.body.data());
  }
}

void setPolicyOptions(CURL* handle, const UpstreamLimits& limits) {
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(handle, CURLOPT_PROXY, "");
  curl_easy_setopt(handle, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(limits.connect_timeout_ms));
  curl_easy_setopt(handle, CURLOPT_HTTP_CONTENT_DECODING, 0L);  // relay bodies byte for byte
}

ForwardResult outcomeOf(CURLcode code, const Exchange& exchange, const char* error_text,
                        const UpstreamLimits& limits) {
  ForwardResult result;
  result.head_sent = exchange.head_sent;
  result.status = exchange.status;
  result.body_bytes = exchange.body_bytes;
  using Outcome = ForwardResult::Outcome;
  if (code == CURLE_OK) {
    result.outcome = Outcome::kCompleted;
  } else if (exchange.client_gone) {
    result.outcome = Outcome::kClientGone;
    result.error = "the client closed the connection; the upstream request was cancelled";
  } else if (exchange.idle_timed_out) {
    result.outcome = Outcome::kTimedOut;
    result.error = "the upstream sent nothing for " + std::to_string(limits.idle_timeout_ms) +
                   " ms (upstream idle timeout)";
  } else if (exchange.header_overflow) {
    result.error = "the upstream response headers exceed " +
                   std::to_string(limits.max_header_bytes) + " bytes";
  } else if (code == CURLE_OPERATION_TIMEDOUT) {
    result.outcome = Outcome::kTimedOut;
    result.error = "connecting to the upstream timed out after " +
                   std::to_string(limits.connect_timeout_ms) + " ms";
  } else {
    result.error = std::string("upstream request failed: ") + curl_easy_strerror(code);
    if (error_text[0] != '\0') result.error += std::string(" (") + error_text + ")";
  }
  return result;
}

// One libcurl handle per worker thread, reset before each request: its connection cache keeps
// upstream connections alive between requests (a TCP connect per call would cost more than the
// relay itself). A kept connection goes to an address the policy allowed when it was opened.
CURL* workerHandle() {
  thread_local const CurlHandle handle(curl_easy_init());
  if (!handle) throw std::bad_alloc();
  curl_easy_reset(handle.get());
  return handle.get();
}

}  // namespace

ForwardResult forwardUpstream(const ForwardRequest& request, const UpstreamLimits& limits,
                              ResponseSink& sink) {
  CURL* curl = workerHandle();
  Exchange exchange(sink, limits, request.method == "HEAD");
  std::array<char, CURL_ERROR_SIZE> error_text{};
  const std::string url = request.url.toString();
  const Slist headers = buildHeaders(request);
  Slist pins;
  if (!request.curl_resolve.empty()) {
    // The handle's DNS cache outlives the request: drop an earlier pin for this host:port first.
    const auto port_end = request.curl_resolve.find(':', request.curl_resolve.find(':') + 1);
    pins.append("-" + request.curl_resolve.substr(0, port_end));
    pins.append(request.curl_resolve);
  }

  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  setPolicyOptions(curl, limits);
  if (pins.get() != nullptr) curl_easy_setopt(curl, CURLOPT_RESOLVE, pins.get());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  setMethod(curl, request);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text.data());
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &onHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &onBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &onProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  if (request.extra_ca != nullptr) {
    curl_easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, &addExtraCa);
    curl_easy_setopt(curl, CURLOPT_SSL_CTX_DATA, request.extra_ca);
  }

  const CURLcode code = curl_easy_perform(curl);
  if (code == CURLE_OK) sendHeadOnce(exchange);  // a head-only answer curl saw no blank line for
  auto result = outcomeOf(code, exchange, error_text.data(), limits);
  if (result.outcome == ForwardResult::Outcome::kCompleted) {
    if (exchange.has_body) sink.endStream();
  } else if (result.head_sent && result.outcome != ForwardResult::Outcome::kClientGone) {
    sink.abortStream();
  }
  return result;
}

}  // namespace sidecar
