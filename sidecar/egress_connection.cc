#include "sidecar/egress_connection.h"

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "sidecar/egress_http.h"
#include "sidecar/request_framing.h"
#include "sidecar/sidecar_log.h"
#include "sidecar/tls_client_hello.h"
#include "sidecar/tunnel.h"

namespace sidecar {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

constexpr std::size_t kMaxLingerBytes = std::size_t{64} * 1024;
constexpr std::chrono::milliseconds kLinger{1000};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Hop-by-hop fields (RFC 9110 7.6.1) and the proxy's own: never sent upstream. Fields the
// Connection header names are hop-by-hop too, except Host and Content-Length: the upstream must
// frame and route the request as the proxy did (without its length, the body would be read as a
// second request, with a Host nobody checked).
bool hopByHop(const std::string& name, const std::vector<std::string>& connection_tokens) {
  static const std::vector<std::string> kFields = {
      "connection", "keep-alive",        "proxy-connection", "proxy-authorization", "te",
      "trailer",    "transfer-encoding", "upgrade",          "proxy-authenticate"};
  if (std::find(kFields.begin(), kFields.end(), name) != kFields.end()) return true;
  if (name == "host" || name == "content-length") return false;
  return std::find(connection_tokens.begin(), connection_tokens.end(), name) !=
         connection_tokens.end();
}

// The plain-HTTP head goes up as written (less hop-by-hop fields): one Host, the one checked
// against the rules, and a body framed as the proxy frames it (by its Content-Length).
std::optional<std::string> plainHeadRefusal(const http::request_header<>& head) {
  if (head.count(http::field::host) > 1) {
    return "the request has more than one Host field; send one, naming the URL's host";
  }
  return framingRefusal(head);
}

std::string authorityOf(const policy::Url& url) {
  const bool v6 = url.host_kind == policy::HostKind::kIpv6;
  return (v6 ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port);
}

}  // namespace

EgressShared::EgressShared(net::io_context& io, std::shared_ptr<const policy::EgressPolicy> rules_,
                           std::shared_ptr<AuditLog> audit_, std::vector<policy::Endpoint> denied_,
                           std::string session_, EgressLimits limits_)
    : ioc(io),
      rules(std::move(rules_)),
      audit(std::move(audit_)),
      denied(std::move(denied_)),
      session(std::move(session_)),
      limits(limits_),
      resolvers(1, 8, "egress resolver", &log()),
      bytes_left(std::make_shared<TunnelBudget>(TunnelBudget{limits_.max_bytes})) {}

EgressConnection::EgressConnection(UnixSocket sandbox, std::shared_ptr<EgressShared> shared)
    : sandbox_(std::move(sandbox)),
      shared_(std::move(shared)),
      upstream_(sandbox_.get_executor()),
      deadline_(sandbox_.get_executor()) {
  ++shared_->open;
}

EgressConnection::~EgressConnection() {
  --shared_->open;
  shared_->live.erase(this);
}

void EgressConnection::start() {
  shared_->live[this] = weak_from_this();
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(shared_->limits.max_header_bytes));
  armDeadline(shared_->limits.head_timeout, "no complete request head");
  http::async_read_header(
      sandbox_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, std::size_t) { self->onHead(ec); });
}

void EgressConnection::close() {
  if (!recorded_) record("error", "the egress proxy stopped", 0);
  closeSockets();
}

void EgressConnection::closeSockets() {
  error_code ignored;
  deadline_.cancel();
  sandbox_.close(ignored);
  upstream_.close(ignored);
}

void EgressConnection::armDeadline(std::chrono::milliseconds after, std::string what,
                                   bool answered) {
  deadline_.expires_after(after);
  deadline_.async_wait(
      [self = shared_from_this(), after, answered, what = std::move(what)](error_code ec) {
        if (ec || self->relaying_ || self->recorded_) return;
        const std::string reason = what + " within " + std::to_string(after.count()) + " ms";
        if (!answered) {
          error_code ignored;
          self->sandbox_.cancel(ignored);  // a head read may be pending: one read at a time
          return self->refuse(504, reason, "error");
        }
        self->record("error", reason, 200);  // the tunnel was promised: no HTTP answer fits now
        self->closeSockets();
      });
}

void EgressConnection::onHead(const error_code& ec) {
  if (recorded_) return;
  if (ec == http::error::header_limit) {
    return refuse(431, "the request head is larger than " +
                           std::to_string(shared_->limits.max_header_bytes) + " bytes");
  }
  if (ec == http::error::end_of_stream || ec == net::error::eof ||
      ec == net::error::operation_aborted || ec == net::error::connection_reset) {
    recorded_ = true;  // nothing to answer: the sandbox left before a whole head
    return closeSockets();
  }
  if (ec) return refuse(400, "not an HTTP proxy request: " + ec.message());
  const auto& head = parser_->get();
  method_ = std::string(head.method_string());
  target_text_ = std::string(head.target());
  if (shared_->open > shared_->limits.max_connections) {
    return refuse(503,
                  "this session has " + std::to_string(shared_->limits.max_connections) +
                      " egress connections open, the most it may; close some, then retry",
                  "error");
  }
  if (shared_->bytes_left->left == 0) {
    return refuse(403, "this session has moved its egress budget of " +
                           std::to_string(shared_->limits.max_bytes) +
                           " bytes; a new session gets a new one");
  }
  const bool has_body = parser_->chunked() || parser_->content_length().value_or(0) > 0;
  request_ =
      classifyProxyRequest(*shared_->rules, method_, target_text_,
                           std::string_view(head[http::field::host]), has_body, shared_->denied);
  if (request_.refused()) return refuse(static_cast<unsigned>(request_.status), request_.reason);
  if (request_.kind == ProxyRequest::Kind::kAbsolute) {
    if (auto why = plainHeadRefusal(head)) return refuse(400, *why);
  }
  if (request_.kind == ProxyRequest::Kind::kAbsolute && parser_->chunked()) {
    return refuse(411,
                  "a chunked request body is not relayed over plain HTTP; send a "
                  "Content-Length, or use https (CONNECT)");
  }
  armDeadline(shared_->limits.connect_timeout, "the upstream did not answer");
  auto self = shared_from_this();
  const bool queued = shared_->resolvers.submit([self] {
    auto pinned =
        resolveAndPinEgress(*self->request_.rule, self->request_.target, self->shared_->denied);
    net::post(self->sandbox_.get_executor(),
              [self, pinned = std::move(pinned)] { self->onPinned(pinned); });
  });
  if (!queued) refuse(503, "the egress proxy is stopping", "error");
}

void EgressConnection::onPinned(const PinnedAddress& pinned) {
  if (recorded_) return;
  if (pinned.lookup_failed) return refuse(502, pinned.decision.reason, "error");
  if (!pinned.decision.allowed()) return refuse(403, pinned.decision.reason);
  pinned_address_ = pinned.address;
  error_code ec;
  const auto address = net::ip::make_address(pinned.address, ec);
  if (ec) return refuse(502, "cannot use the address " + pinned.address, "error");
  upstream_.async_connect(
      net::ip::tcp::endpoint(address, request_.target.port),
      [self = shared_from_this()](error_code connect_ec) { self->onConnected(connect_ec); });
}

void EgressConnection::onConnected(const error_code& ec) {
  if (recorded_) return;
  if (ec) {
    return refuse(502,
                  "cannot connect to " + authorityOf(request_.target) + " (" + pinned_address_ +
                      "): " + ec.message(),
                  "error");
  }
  error_code ignored;
  upstream_.set_option(net::ip::tcp::no_delay(true), ignored);
  if (request_.kind == ProxyRequest::Kind::kAbsolute) return forwardPlainRequest();
  static const std::string kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  armDeadline(shared_->limits.head_timeout, "no TLS ClientHello", /*answered=*/true);
  net::async_write(sandbox_, net::buffer(kEstablished),
                   [self = shared_from_this()](error_code write_ec, std::size_t) {
                     if (write_ec) {
                       self->record("error", "the sandbox left: " + write_ec.message(), 200);
                       return self->closeSockets();
                     }
                     self->readHello();
                   });
}

void EgressConnection::readHello() {
  // Bytes the client sent right behind its CONNECT head belong to the tunnel.
  const auto leftover = buffer_.data();
  hello_.append(static_cast<const char*>(leftover.data()), leftover.size());
  buffer_.consume(leftover.size());
  onHello();
}

void EgressConnection::onHello() {
  if (recorded_) return;
  const auto scan = scanClientHello(hello_);
  if (scan.status == ClientHelloScan::Status::kNeedMore && hello_.size() < kMaxClientHelloBytes) {
    sandbox_.async_read_some(net::buffer(scratch_),
                             [self = shared_from_this()](error_code ec, std::size_t n) {
                               if (ec) {
                                 self->record("error",
                                              "the sandbox closed the tunnel before its TLS "
                                              "ClientHello: " +
                                                  ec.message(),
                                              200);
                                 return self->closeSockets();
                               }
                               self->hello_.append(self->scratch_.data(), n);
                               self->onHello();
                             });
    return;
  }
  std::string why;
  if (scan.status == ClientHelloScan::Status::kInvalid) {
    why = "the tunnel to " + authorityOf(request_.target) +
          " must start with a TLS ClientHello (the proxy carries TLS only): " + scan.error;
  } else if (scan.status == ClientHelloScan::Status::kNeedMore) {
    why = "the first TLS record is not a complete ClientHello";
  } else {
    why = serverNameMismatch(scan, request_.target.host,
                             request_.target.host_kind != policy::HostKind::kDomain);
  }
  if (!why.empty()) {
    record("deny", why, 200);  // the 200 was sent; the tunnel closes before any byte went up
    return closeSockets();
  }
  if (shared_->secrets) {
    if (const auto* secret = shared_->secrets->find(request_.target.host, request_.target.port)) {
      return intercept(*secret);
    }
  }
  relay(std::move(hello_), std::uint64_t{1} << 62);
}

void EgressConnection::forwardPlainRequest() {
  const auto& head = parser_->get();
  const auto& url = request_.target;
  std::string out =
      method_ + " " + url.path + (url.query.empty() ? "" : "?" + url.query) + " HTTP/1.1\r\n";
  const auto tokens = connectionTokens(std::string_view(head[http::field::connection]));
  bool has_host = false;
  for (const auto& field : head) {
    const std::string name = lower(std::string_view(field.name_string()));
    if (hopByHop(name, tokens)) continue;
    has_host = has_host || name == "host";
    out.append(field.name_string()).append(": ").append(field.value()).append("\r\n");
  }
  if (!has_host) {
    out += "Host: " + (url.host_kind == policy::HostKind::kIpv6 ? "[" + url.host + "]" : url.host);
    if (url.port != 80) out += ":" + std::to_string(url.port);
    out += "\r\n";
  }
  out += "Connection: close\r\n\r\n";
  const std::uint64_t body = parser_->content_length().value_or(0);
  const std::uint64_t max_up = out.size() + body;
  const auto leftover = buffer_.data();
  const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(leftover.size(), body));
  out.append(static_cast<const char*>(leftover.data()), take);
  buffer_.consume(leftover.size());  // past the body: a second request, which is not relayed
  relay(std::move(out), max_up);
}

void EgressConnection::relay(std::string first_up, std::uint64_t max_up) {
  relaying_ = true;
  deadline_.cancel();
  TunnelLimits limits;
  limits.idle = shared_->limits.idle;
  limits.max_duration = shared_->limits.max_connection;
  limits.max_up = max_up;
  limits.budget = shared_->bytes_left;
  const unsigned status = request_.kind == ProxyRequest::Kind::kConnect ? 200 : 0;
  startTunnel(
      TunnelSocket(std::move(sandbox_)), TunnelSocket(std::move(upstream_)), std::move(first_up),
      limits, [self = shared_from_this(), status](const TunnelResult& result) {
        const bool clean = result.end == "closed";
        self->record(clean ? "allow" : "error",
                     clean ? self->request_.reason
                           : self->request_.reason + "; the connection ended: " + result.end,
                     status, result.up, result.down);
      });
}

// A host with secret headers: TLS ended here with a session-CA leaf, requests relayed with the
// headers set (tls_intercept.h). The audit line names the headers, never their values.
void EgressConnection::intercept(const SecretHost& secret) {
  relaying_ = true;
  deadline_.cancel();
  InterceptLimits limits;
  limits.idle = shared_->limits.idle;
  limits.max_duration = shared_->limits.max_connection;
  limits.budget = shared_->bytes_left;
  limits.max_header_bytes = shared_->limits.max_header_bytes;
  startIntercept(
      TunnelSocket(std::move(sandbox_)), std::move(hello_), TunnelSocket(std::move(upstream_)),
      {request_.target.host, request_.target.port}, secret.headers, shared_->intercept_tls, limits,
      [self = shared_from_this(), names = secret.headerNames()](const InterceptResult& result) {
        std::string reason = self->request_.reason + "; " + std::to_string(result.requests) +
                             " request(s), secret headers set: " + names;
        // A request refused inside the tunnel is a refusal like one at the CONNECT: counted as
        // denied, and listed in the tool result's warnings.
        if (!result.refusal.empty()) {
          return self->record("deny", reason + "; refused inside the tunnel: " + result.refusal,
                              result.status, result.up, result.down);
        }
        const bool clean = result.end == "closed";
        if (!clean) reason += "; the connection ended: " + result.end;
        self->record(clean ? "allow" : "error", reason, 200, result.up, result.down);
      });
}

void EgressConnection::refuse(unsigned status, const std::string& reason, const char* decision) {
  if (recorded_) return;
  record(decision, reason, status);
  deadline_.cancel();
  error_code ignored;
  upstream_.close(ignored);
  auto response = std::make_shared<std::string>(refusalResponse(status, reason));
  net::async_write(sandbox_, net::buffer(*response),
                   [self = shared_from_this(), response](error_code ec, std::size_t) {
                     if (ec) return self->closeSockets();
                     self->lingerThenClose();
                   });
}

// Closing a socket with unread bytes in it resets the connection, and the client may lose the
// answer it has not read yet: send end of file, then read (and drop) what the client still sends,
// for a moment.
void EgressConnection::lingerThenClose() {
  error_code ignored;
  sandbox_.shutdown(net::socket_base::shutdown_send, ignored);
  deadline_.expires_after(kLinger);
  deadline_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->closeSockets();
  });
  struct Drain {
    std::shared_ptr<EgressConnection> self;
    std::size_t drained = 0;
    void operator()(error_code ec, std::size_t n) {
      drained += n;
      if (ec || drained > kMaxLingerBytes) return self->closeSockets();
      self->sandbox_.async_read_some(net::buffer(self->scratch_), std::move(*this));
    }
  };
  sandbox_.async_read_some(net::buffer(scratch_), Drain{shared_from_this()});
}

void EgressConnection::record(const char* decision, const std::string& reason, unsigned status,
                              std::uint64_t up, std::uint64_t down) {
  if (recorded_) return;
  recorded_ = true;
  AuditRecord line;
  line.time = arrived_;
  line.session = shared_->session;
  line.kind = "egress";
  line.method = method_.empty() ? "-" : method_;
  line.url = request_.target.host.empty() ? target_text_
             : request_.kind == ProxyRequest::Kind::kAbsolute ||
                     (request_.refused() && method_ != "CONNECT")
                 ? request_.target.toString()
                 : authorityOf(request_.target);
  line.decision = decision;
  line.reason = reason;
  line.rule = request_.rule != nullptr ? request_.rule->id : std::string();
  line.status = status;
  line.bytes = down;
  line.bytes_up = up;
  line.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - started_)
                         .count();
  shared_->audit->write(line);
}

}  // namespace sidecar
