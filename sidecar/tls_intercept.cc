#include "sidecar/tls_intercept.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "common/text.h"
#include "sidecar/egress_http.h"
#include "sidecar/header_filter.h"
#include "sidecar/request_framing.h"
#include "sidecar/sidecar_log.h"

namespace sidecar {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using boost::system::error_code;

constexpr std::chrono::milliseconds kShutdownGrace{500};
constexpr std::size_t kWatchBytes = 4096;  // the watch's read, the answer's first bytes
constexpr std::string_view kHttp11Alpn = "\x08http/1.1";

// Picks http/1.1 from the sandbox's ALPN list; without it, no ALPN (the client speaks HTTP/1.1
// or gives up, never h2 to a relay that only reads HTTP/1.1).
int selectHttp11(SSL* /*ssl*/, const unsigned char** out, unsigned char* out_length,
                 const unsigned char* in, unsigned in_length, void* /*arg*/) {
  const std::string_view offered(reinterpret_cast<const char*>(in), in_length);
  const auto at = offered.find(kHttp11Alpn);
  if (at == std::string_view::npos) return SSL_TLSEXT_ERR_NOACK;
  *out = in + at + 1;
  *out_length = static_cast<unsigned char>(kHttp11Alpn.size() - 1);
  return SSL_TLSEXT_ERR_OK;
}

void loadVerifyFile(ssl::context& context, const std::string& path) {
  error_code ec;
  context.load_verify_file(path, ec);
  if (ec) {
    throw std::runtime_error("cannot load the CA file " + path +
                             " to verify intercepted upstreams: " + ec.message());
  }
}

bool isHttpError(const error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category();
}

bool isEnd(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof ||
         ec == ssl::error::stream_truncated || ec == net::error::connection_reset;
}

// Drops hop-by-hop fields (Transfer-Encoding stays: the serializer frames the body by it, and a
// request's is checked by framingRefusal first), the fields the Connection header names (except
// those that frame the message) and Proxy-*.
template <class Fields>
void dropHopByHop(Fields& fields) {
  const auto named = connectionTokens(fields[http::field::connection]);
  std::vector<std::string> drop;
  for (const auto& field : fields) {
    const std::string_view name(field.name_string().data(), field.name_string().size());
    if (common::iequals(name, "transfer-encoding") || common::iequals(name, "content-length") ||
        common::iequals(name, "host")) {
      continue;
    }
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (isHopByHopHeader(name) || lower.rfind("proxy-", 0) == 0 ||
        std::find(named.begin(), named.end(), lower) != named.end()) {
      drop.push_back(std::move(lower));
    }
  }
  for (const auto& name : drop) fields.erase(name);
}

std::string authority(const InterceptTarget& target) {
  const bool v6 = target.host.find(':') != std::string::npos;
  return (v6 ? "[" + target.host + "]" : target.host) +
         (target.port == 443 ? std::string() : ":" + std::to_string(target.port));
}

class Intercept : public std::enable_shared_from_this<Intercept> {
 public:
  using Stream = ssl::stream<TunnelSocket>;

  Intercept(TunnelSocket sandbox, TunnelSocket upstream, InterceptTarget target,
            std::vector<SecretHeader> headers, std::shared_ptr<InterceptTls> tls,
            InterceptLimits limits, std::function<void(const InterceptResult&)> done)
      : tls_(std::move(tls)),
        sandbox_(std::move(sandbox), tls_->sandboxSide()),
        upstream_(std::move(upstream), tls_->upstreamSide()),
        timer_(sandbox_.get_executor()),
        deadline_(sandbox_.get_executor()),
        target_(std::move(target)),
        headers_(std::move(headers)),
        limits_(std::move(limits)),
        done_(std::move(done)) {}

  void start(std::string client_hello) {
    hello_ = std::move(client_hello);
    if (const std::string why = prepareTls(); !why.empty()) return finish(why);
    armTimer(limits_.idle);
    deadline_.expires_after(limits_.max_duration);
    deadline_.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->finish("time");
    });
    sandbox_.async_handshake(
        ssl::stream_base::server, net::buffer(hello_),
        [self = shared_from_this()](error_code ec, std::size_t) { self->onSandboxHandshake(ec); });
  }

 private:
  // The leaf for the sandbox side; SNI and the name to verify on the upstream side.
  std::string prepareTls() {
    std::shared_ptr<X509> leaf;
    try {
      leaf = tls_->ca().leafFor(target_.host);
    } catch (const std::exception& error) {
      return std::string("no certificate for the sandbox: ") + error.what();
    }
    leaf_ = leaf;
    SSL* sandbox_ssl = sandbox_.native_handle();
    if (SSL_use_certificate(sandbox_ssl, leaf.get()) != 1 ||
        SSL_use_PrivateKey(sandbox_ssl, tls_->ca().leafKey()) != 1) {
      return "cannot use the session CA's leaf certificate";
    }
    SSL* upstream_ssl = upstream_.native_handle();
    SSL_set_hostflags(upstream_ssl,
                      X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    const bool address = target_.host.find_first_not_of("0123456789.") == std::string::npos ||
                         target_.host.find(':') != std::string::npos;
    if (address) {
      if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(upstream_ssl), target_.host.c_str()) != 1) {
        return "cannot verify the upstream for the address " + target_.host;
      }
      return "";
    }
    if (SSL_set1_host(upstream_ssl, target_.host.c_str()) != 1 ||
        SSL_ctrl(upstream_ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(target_.host.c_str())) != 1) {  // SSL_set_tlsext_host_name
      return "cannot verify the upstream for the name " + target_.host;
    }
    return "";
  }

  void onSandboxHandshake(const error_code& ec) {
    if (finished_) return;
    if (ec) return finish("the sandbox's TLS handshake failed: " + ec.message());
    touch();
    sandbox_ready_ = true;
    upstream_.async_handshake(ssl::stream_base::client, [self = shared_from_this()](error_code e) {
      self->onUpstreamHandshake(e);
    });
  }

  void onUpstreamHandshake(const error_code& ec) {
    if (finished_) return;
    if (ec) {
      const long verify = SSL_get_verify_result(upstream_.native_handle());
      const std::string why = verify != X509_V_OK
                                  ? std::string("the upstream's certificate was refused: ") +
                                        X509_verify_cert_error_string(verify)
                                  : "the TLS handshake with the upstream failed: " + ec.message();
      log().info("egress intercept {}: {}", authority(target_), why);
      return answerAndClose(502, "cannot reach " + authority(target_) + " over TLS: " + why);
    }
    touch();
    watchUpstream();
    readRequest();
  }

  // The upstream's side is read at all times: between requests, bytes or an end mean the
  // upstream closed its idle keep-alive connection (or answers nothing asked, a 408), and the
  // sandbox's connection is closed too, so its client opens a new one for the next request
  // instead of getting a 502. During a request, the bytes are the answer's first, left in
  // upstream_buffer_ for the response parser.
  void watchUpstream() {
    watching_ = true;
    upstream_.async_read_some(upstream_buffer_.prepare(kWatchBytes),
                              [self = shared_from_this()](error_code ec, std::size_t n) {
                                self->onUpstreamWatch(ec, n);
                              });
  }

  void onUpstreamWatch(const error_code& ec, std::size_t n) {
    watching_ = false;
    // Aborted: this side closed the upstream (answerAndClose, finish), which says how it ended.
    if (finished_ || closing_ || ec == net::error::operation_aborted) return;
    upstream_buffer_.commit(n);
    if (!in_request_) {
      log().debug("egress intercept {}: the upstream {} between requests; closing",
                  authority(target_), ec ? "closed its connection" : "sent bytes nobody asked for");
      return finish("closed");
    }
    if (ec) upstream_end_ = ec;
    touch();
    if (awaiting_response_) readResponseHead();
  }

  void readRequest() {
    request_writer_.reset();  // it refers to the parser's message
    request_.emplace();
    request_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    request_->body_limit(boost::none);  // streamed, not held
    http::async_read_header(
        sandbox_, sandbox_buffer_, *request_,
        [self = shared_from_this()](error_code ec, std::size_t) { self->onRequestHead(ec); });
  }

  void onRequestHead(const error_code& ec) {
    if (finished_) return;
    if (ec == http::error::header_limit) {
      return answerAndClose(431, "the request head is larger than " +
                                     std::to_string(limits_.max_header_bytes) + " bytes");
    }
    if (isEnd(ec)) return finish("closed");
    if (isHttpError(ec)) return answerAndClose(400, "not an HTTP/1.1 request: " + ec.message());
    if (ec) return finish("reading from the sandbox: " + ec.message());
    touch();
    in_request_ = true;
    auto& head = request_->get();
    const std::string_view target(head.target().data(), head.target().size());
    if (head.method() == http::verb::connect || (target != "*" && !target.starts_with("/"))) {
      return answerAndClose(400, "inside the tunnel to " + authority(target_) +
                                     ", a request names a path (\"/...\"), not another target");
    }
    const std::string_view method(head.method_string().data(), head.method_string().size());
    if (echoesRequestHeaders(method)) {
      return answerAndClose(403, std::string(method) + " is not relayed to " + authority(target_) +
                                     ": its answer would echo the operator's secret headers");
    }
    // The sandbox's framing fields go up as written: none the upstream might read differently,
    // or the next request (the one with the secrets) could become this one's body.
    if (auto why = framingRefusal(head)) return answerAndClose(400, *why);
    head_request_ = head.method() == http::verb::head;
    keep_alive_ = request_->keep_alive();
    const bool expects_continue = common::iequals(head[http::field::expect], "100-continue");
    prepareRequest(head);
    request_writer_.emplace(head);
    log().debug("egress intercept {}: {} request {}", authority(target_),
                std::string_view(head.method_string().data(), head.method_string().size()),
                requests_ + 1);
    if (!expects_continue || request_->is_done()) return pumpRequest();
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    net::async_write(sandbox_, net::buffer(kContinue),
                     [self = shared_from_this()](error_code write_ec, std::size_t n) {
                       if (write_ec)
                         return self->finish("writing to the sandbox: " + write_ec.message());
                       self->result_.down += n;
                       if (!self->charge(n)) return self->finish("limit");
                       self->pumpRequest();
                     });
  }

  void prepareRequest(http::request<http::buffer_body>& head) {
    dropHopByHop(head);
    head.erase(http::field::expect);
    head.set(http::field::host, authority(target_));
    for (const auto& header : headers_) {
      head.erase(header.name);  // every field of that name, whatever its case
      head.insert(header.name, header.value);
    }
    head.keep_alive(keep_alive_);
  }

  void pumpRequest() {
    pump(sandbox_, sandbox_buffer_, *request_, *request_writer_, upstream_, result_.up,
         [](Intercept& self, const char* failed, const error_code& ec) {
           if (failed != nullptr) {
             if (std::string_view(failed) == "read") {
               return self.finish("reading a request body from the sandbox: " + ec.message());
             }
             return self.answerAndClose(502, "sending the request to " + authority(self.target_) +
                                                 " failed: " + ec.message());
           }
           ++self.requests_;
           self.result_.requests = self.requests_;
           self.readResponse();
         });
  }

  void readResponse() {
    response_writer_.reset();
    response_.emplace();
    response_->header_limit(static_cast<std::uint32_t>(limits_.max_response_header_bytes));
    response_->body_limit(boost::none);
    if (head_request_) response_->skip(true);
    awaiting_response_ = true;
    if (!watching_) readResponseHead();  // else the watch's read calls it when bytes come
  }

  void readResponseHead() {
    awaiting_response_ = false;
    if (upstream_end_) {
      return answerAndClose(502, "no answer from " + authority(target_) +
                                     ": the upstream closed the connection (" +
                                     upstream_end_->message() + ")");
    }
    http::async_read_header(
        upstream_, upstream_buffer_, *response_,
        [self = shared_from_this()](error_code ec, std::size_t) { self->onResponseHead(ec); });
  }

  void onResponseHead(const error_code& ec) {
    if (finished_) return;
    if (ec) {
      return answerAndClose(502, "no answer from " + authority(target_) + ": " + ec.message());
    }
    touch();
    auto& head = response_->get();
    const unsigned status = head.result_int();
    result_.status = status;
    if (status == 101) {
      return answerAndClose(502, authority(target_) + " switched protocols, which is not relayed");
    }
    const bool interim = status >= 100 && status < 200;
    const bool keep = !interim && keep_alive_ && response_->keep_alive() && !response_->need_eof();
    dropHopByHop(head);
    if (!interim) head.keep_alive(keep);
    keep_alive_ = interim ? keep_alive_ : keep;
    response_writer_.emplace(head);
    response_head_sent_ = true;
    const bool bodiless = head_request_ || interim || status == 204 || status == 304;
    if (!bodiless) return pumpResponse();
    http::async_write_header(
        sandbox_, *response_writer_,
        [self = shared_from_this(), interim](error_code write_ec, std::size_t n) {
          if (write_ec) {
            return self->finish("writing to the sandbox: " + write_ec.message());
          }
          self->result_.down += n;
          if (!self->charge(n)) return self->finish("limit");
          self->touch();
          if (interim) return self->readResponse();  // the real answer next
          self->answered();
        });
  }

  void pumpResponse() {
    pump(upstream_, upstream_buffer_, *response_, *response_writer_, sandbox_, result_.down,
         [](Intercept& self, const char* failed, const error_code& ec) {
           if (failed == nullptr) return self.answered();
           if (std::string_view(failed) == "read") {
             return self.finish("reading the answer from " + authority(self.target_) + ": " +
                                ec.message());
           }
           self.finish("writing to the sandbox: " + ec.message());
         });
  }

  // One answer complete: the next request, or the end.
  void answered() {
    if (finished_) return;
    response_head_sent_ = false;
    in_request_ = false;
    if (!keep_alive_) return finish("closed");
    if (upstream_buffer_.size() > 0) return onUpstreamWatch({}, 0);  // bytes after the answer
    watchUpstream();
    readRequest();
  }

  // Streams a message's body from `from` to `to` through body_, one read and one write at a
  // time; `next(self, failed, ec)` runs at the end: `failed` is nullptr, "read" or "write".
  template <bool kIsRequest>
  void pump(Stream& from, boost::beast::flat_buffer& buffer,
            http::parser<kIsRequest, http::buffer_body>& parser,
            http::serializer<kIsRequest, http::buffer_body>& writer, Stream& to,
            std::uint64_t& count,
            void (*next)(Intercept&, const char* failed, const error_code& ec)) {
    auto& body = parser.get().body();
    if (parser.is_done()) {
      body.data = nullptr;
      body.size = 0;
      body.more = false;
      return writeBody(from, buffer, parser, writer, to, count, next);
    }
    if (spent()) return finish("limit");
    body.data = body_.data();
    // Never more than the budget has left, so a read cannot overshoot it.
    requested_ =
        limits_.budget
            ? static_cast<std::size_t>(std::min<std::uint64_t>(body_.size(), limits_.budget->left))
            : body_.size();
    body.size = requested_;
    http::async_read_some(
        from, buffer, parser,
        [self = shared_from_this(), &from, &buffer, &parser, &writer, &to, &count, next](
            error_code ec, std::size_t) {
          if (self->finished_) return;
          if (ec == http::error::need_buffer) ec = {};
          if (ec) return next(*self, "read", ec);
          self->touch();
          auto& read_body = parser.get().body();
          const std::size_t got = self->requested_ - read_body.size;
          read_body.more = !parser.is_done();
          if (got == 0 && read_body.more) {  // framing only: a 0-byte chunk would end the body
            return self->pump(from, buffer, parser, writer, to, count, next);
          }
          // No bytes and no more: a null buffer, or the serializer writes "0\r\n\r\n" twice.
          read_body.data = got == 0 ? nullptr : self->body_.data();
          read_body.size = got;
          self->writeBody(from, buffer, parser, writer, to, count, next);
        });
  }

  template <bool kIsRequest>
  void writeBody(Stream& from, boost::beast::flat_buffer& buffer,
                 http::parser<kIsRequest, http::buffer_body>& parser,
                 http::serializer<kIsRequest, http::buffer_body>& writer, Stream& to,
                 std::uint64_t& count,
                 void (*next)(Intercept&, const char* failed, const error_code& ec)) {
    http::async_write(to, writer,
                      [self = shared_from_this(), &from, &buffer, &parser, &writer, &to, &count,
                       next](error_code ec, std::size_t n) {
                        if (self->finished_) return;
                        if (ec == http::error::need_buffer) ec = {};
                        count += n;
                        if (!self->charge(n)) return self->finish("limit");
                        if (ec) return next(*self, "write", ec);
                        self->touch();
                        if (!parser.is_done() && !writer.is_done()) {
                          return self->pump(from, buffer, parser, writer, to, count, next);
                        }
                        next(*self, nullptr, {});
                      });
  }

  // Answers the sandbox over its TLS (when there is one and no answer started), then ends.
  void answerAndClose(unsigned status, const std::string& reason) {
    if (finished_) return;
    if (!sandbox_ready_ || response_head_sent_) return finish(reason);
    result_.status = status;
    if (status < 500) result_.refusal = reason;
    auto answer = std::make_shared<std::string>(refusalResponse(status, reason));
    closing_ = true;
    error_code ignored;
    upstream_.lowest_layer().close(ignored);
    net::async_write(sandbox_, net::buffer(*answer),
                     [self = shared_from_this(), answer, reason](error_code ec, std::size_t n) {
                       self->result_.down += n;
                       (void)self->charge(n);
                       self->finish(ec ? reason + "; the sandbox left: " + ec.message() : reason);
                     });
  }

  void touch() { last_activity_ = std::chrono::steady_clock::now(); }

  // The session's byte budget (shared with its other tunnels): false once it is spent.
  [[nodiscard]] bool charge(std::uint64_t n) {
    if (!limits_.budget) return true;
    limits_.budget->left -= std::min(limits_.budget->left, n);
    return limits_.budget->left > 0;
  }
  [[nodiscard]] bool spent() const { return limits_.budget && limits_.budget->left == 0; }

  void armTimer(std::chrono::steady_clock::duration after) {
    timer_.expires_after(after);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->finished_) return;
      const auto quiet = std::chrono::steady_clock::now() - self->last_activity_;
      if (quiet >= self->limits_.idle) return self->finish("idle");
      self->armTimer(self->limits_.idle - quiet);
    });
  }

  // Ends once: the upstream is cut; the sandbox gets a TLS close_notify when it had a handshake
  // (bounded by kShutdownGrace), then `done` runs.
  void finish(const std::string& end) {
    if (finished_) return;
    finished_ = true;
    result_.end = end;
    if (end != "closed" && end != "idle") {
      log().debug("egress intercept {}: ended: {}", authority(target_), end);
    }
    error_code ignored;
    timer_.cancel();
    deadline_.cancel();
    upstream_.lowest_layer().close(ignored);
    if (!sandbox_ready_) return closeSandbox();
    timer_.expires_after(kShutdownGrace);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->closeSandbox();
    });
    sandbox_.async_shutdown([self = shared_from_this()](error_code) { self->closeSandbox(); });
  }

  void closeSandbox() {
    error_code ignored;
    timer_.cancel();
    sandbox_.lowest_layer().close(ignored);
    if (auto done = std::move(done_)) done(result_);
    done_ = nullptr;
  }

  std::shared_ptr<InterceptTls> tls_;
  Stream sandbox_;
  Stream upstream_;
  net::steady_timer timer_;
  net::steady_timer deadline_;  // limits_.max_duration
  const InterceptTarget target_;
  const std::vector<SecretHeader> headers_;
  const InterceptLimits limits_;
  std::function<void(const InterceptResult&)> done_;

  std::string hello_;
  std::shared_ptr<X509> leaf_;
  boost::beast::flat_buffer sandbox_buffer_;
  boost::beast::flat_buffer upstream_buffer_;
  std::optional<http::request_parser<http::buffer_body>> request_;
  std::optional<http::request_serializer<http::buffer_body>> request_writer_;
  std::optional<http::response_parser<http::buffer_body>> response_;
  std::optional<http::response_serializer<http::buffer_body>> response_writer_;
  std::array<char, std::size_t{64} * 1024> body_{};
  std::size_t requested_ = 0;  // of body_, by the read under way
  InterceptResult result_;
  unsigned requests_ = 0;
  std::chrono::steady_clock::time_point last_activity_ = std::chrono::steady_clock::now();
  bool sandbox_ready_ = false;
  bool head_request_ = false;
  bool keep_alive_ = true;
  bool response_head_sent_ = false;
  bool finished_ = false;
  bool closing_ = false;                    // answerAndClose's answer is on its way
  bool watching_ = false;                   // watchUpstream's read is under way
  bool in_request_ = false;                 // from a request's head to the end of its answer
  bool awaiting_response_ = false;          // readResponse waits for the watch's read
  std::optional<error_code> upstream_end_;  // how the watch's read ended during a request
};

}  // namespace

InterceptTls::InterceptTls(std::shared_ptr<SessionCa> ca, const std::string& extra_upstream_ca_file,
                           const std::string& upstream_ca_file)
    : ca_(std::move(ca)),
      sandbox_side_(ssl::context::tls_server),
      upstream_side_(ssl::context::tls_client) {
  for (auto* context : {&sandbox_side_, &upstream_side_}) {
    SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
    context->set_options(ssl::context::default_workarounds | ssl::context::no_compression);
  }
  SSL_CTX_set_options(sandbox_side_.native_handle(), SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_alpn_select_cb(sandbox_side_.native_handle(), selectHttp11, nullptr);
  upstream_side_.set_verify_mode(ssl::verify_peer);
  if (!upstream_ca_file.empty()) loadVerifyFile(upstream_side_, upstream_ca_file);
  if (!extra_upstream_ca_file.empty()) loadVerifyFile(upstream_side_, extra_upstream_ca_file);
  // Returns 0 on success (unlike the rest of OpenSSL).
  if (SSL_CTX_set_alpn_protos(upstream_side_.native_handle(),
                              reinterpret_cast<const unsigned char*>(kHttp11Alpn.data()),
                              static_cast<unsigned>(kHttp11Alpn.size())) != 0) {
    throw std::runtime_error("cannot set ALPN for intercepted upstreams");
  }
}

void startIntercept(TunnelSocket sandbox, std::string client_hello, TunnelSocket upstream,
                    InterceptTarget target, std::vector<SecretHeader> headers,
                    std::shared_ptr<InterceptTls> tls, InterceptLimits limits,
                    std::function<void(const InterceptResult&)> done) {
  auto intercept = std::make_shared<Intercept>(std::move(sandbox), std::move(upstream),
                                               std::move(target), std::move(headers),
                                               std::move(tls), std::move(limits), std::move(done));
  intercept->start(std::move(client_hello));
}

}  // namespace sidecar
