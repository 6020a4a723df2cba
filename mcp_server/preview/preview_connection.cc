#include "preview/preview_connection.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>

#include "sandbox/backend.h"

namespace preview {
namespace {

namespace net = boost::asio;

std::string plainAnswer(const Refusal& answer) {
  std::string out = "HTTP/1.1 " + std::to_string(static_cast<unsigned>(answer.status)) + " " +
                    std::string(http::obsolete_reason(answer.status)) +
                    "\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n"
                    "X-Content-Type-Options: nosniff\r\n";
  for (const auto& [name, value] : answer.headers) out += name + ": " + value + "\r\n";
  return out + "Content-Length: " + std::to_string(answer.message.size()) +
         "\r\nConnection: close\r\n\r\n" + answer.message;
}

// A label is a capability: the log names its first 8 digits only.
std::string shortLabel(const std::string& label) { return label.substr(0, 8) + "…"; }

}  // namespace

PreviewConnection::PreviewConnection(PreviewContext& context, tcp::socket client)
    : context_(context),
      client_(std::move(client)),
      sandbox_(context.io),
      timer_(context.io) {
  boost::system::error_code ec;
  const auto remote = client_.remote_endpoint(ec);
  peer_ = ec ? "?" : remote.address().to_string() + ":" + std::to_string(remote.port());
  parser_.header_limit(static_cast<std::uint32_t>(context.config.max_head_bytes));
  ++context_.stats.open;
  ++context_.stats.connections_total;
}

PreviewConnection::~PreviewConnection() { --context_.stats.open; }

void PreviewConnection::start() {
  timer_.expires_after(std::chrono::milliseconds(context_.config.header_timeout_ms));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec && !self->admission_) self->refuse(http::status::request_timeout,
                                               "The request's head did not arrive in time.\n");
  });
  http::async_read_header(client_, head_buffer_, parser_,
                          [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                            self->onHead(ec);
                          });
}

void PreviewConnection::onHead(boost::system::error_code ec) {
  if (closed_) return;
  if (ec == http::error::header_limit) {
    ++context_.stats.refused_total;
    refuse(http::status::request_header_fields_too_large,
           "The request's head is larger than preview.max_head_bytes (" +
               std::to_string(context_.config.max_head_bytes) + ").\n");
    return;
  }
  if (ec == http::error::end_of_stream || ec == net::error::eof ||
      ec == net::error::operation_aborted) {
    close("closed before a request");
    return;
  }
 if (ec) {
    ++context_.stats.refused_total;
    refuse(http::status::bad_request, "Malformed request: " + ec.message() + ".\n");
    return;
  }
  auto decision = context_.gate.admit(parser_.get().base());
  if (auto* refusal = std::get_if<Refusal>(&decision)) {
    if (refusal->status != http::status::see_other) ++context_.stats.refused_total;
    answer(*refusal);
    return;
  }
  open(std::move(std::get<std::unique_ptr<PreviewGate::Admission>>(decision)));
}

void PreviewConnection::open(std::unique_ptr<PreviewGate::Admission> admission) {
  admission_ = std::move(admission);
  timer_.cancel();
  const auto grant = admission_->grant();
  net::post(context_.openers, [self = shared_from_this(), grant] {
    std::shared_ptr<server::SessionUse> use;
    common::UniqueFd stream;
    std::string failure;
    try {
      // A paused session is restored (making room under max_sessions), a frozen one thawed by
      // the open: the first request waits for it.
      auto session = self->context_.sessions.find(grant.owner, grant.session_id);
      if (session != grant.session.lock()) throw sandbox::SandboxError("the session ended");
      use = std::make_shared<server::SessionUse>(session);
      session->touch();
      stream = session->sandbox().openPort(grant.port);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    net::post(self->context_.io, [self, use = std::move(use), stream = std::move(stream),
                                  failure = std::move(failure)]() mutable {
      if (!failure.empty()) {
        ++self->context_.stats.failed_total;
        self->refuse(http::status::bad_gateway,
                     "The preview's port " + std::to_string(self->admission_->grant().port) +
                         " could not be reached: " + failure + "\n");
        return;
      }
      self->onOpened(std::move(stream), std::move(use));
    });
  });
}

std::string PreviewConnection::headBytes() const {
  const auto& head = parser_.get();
  std::string out;
  out.reserve(1024);
  out.append(head.method_string()).append(" ").append(head.target());
  out.append(" HTTP/")
      .append(std::to_string(head.version() / 10))
      .append(".")
      .append(std::to_string(head.version() % 10))
      .append("\r\n");
  for (const auto& field : head) {
    out.append(field.name_string()).append(": ").append(field.value()).append("\r\n");
  }
  out.append("\r\n");
  return out;
}

void PreviewConnection::onOpened(common::UniqueFd stream,
                                 std::shared_ptr<server::SessionUse> use) {
  if (closed_) return;  // the listener stopped meanwhile; `use` and `stream` go
  use_ = std::move(use);
  boost::system::error_code ec;
  sandbox_.assign(net::local::stream_protocol(), stream.release(), ec);
  if (ec) {
    refuse(http::status::bad_gateway, "The preview's stream could not be used: " + ec.message());
    return;
  }
  relaying_ = true;
  // The head as parsed (a canonical form: what the checks saw is what the sandbox gets), then
  // whatever the client sent after it.
  auto first = std::make_shared<std::string>(headBytes());
  const auto rest = head_buffer_.data();
  first->append(static_cast<const char*>(rest.data()), rest.size());
  head_buffer_.consume(rest.size());
  to_sandbox_.bytes += first->size();
  context_.stats.bytes_to_sandbox += first->size();
  (void)admission_->spend(first->size());
  tick();
  net::async_write(sandbox_, net::buffer(*first),
                   [self = shared_from_this(), first](boost::system::error_code wrote, std::size_t) {
                     if (wrote) {
                       self->close("the sandbox's server closed");
                       return;
                     }
                     self->pump(self->client_, self->sandbox_, self->to_sandbox_, true);
                   });
  pump(sandbox_, client_, from_sandbox_, false);
}

template <typename From, typename To>
void PreviewConnection::pump(From& from, To& to, Direction& direction, bool to_sandbox) {
  from.async_read_some(
      net::buffer(direction.buffer),
      [self = shared_from_this(), &from, &to, &direction, to_sandbox](
          boost::system::error_code ec, std::size_t n) {
        if (self->closed_) return;
        if (ec) {
          if (ec != net::error::eof) {
            self->close(to_sandbox ? "the browser's connection failed" : "the sandbox's side failed");
            return;
          }
          boost::system::error_code ignored;
          to.shutdown(net::socket_base::shutdown_send, ignored);  // the EOF, passed on
          self->onDirectionEnded(direction);
          return;
        }
        self->last_activity_ = Clock::now();
        direction.bytes += n;
        (to_sandbox ? self->context_.stats.bytes_to_sandbox
                    : self->context_.stats.bytes_from_sandbox) += n;
        if (!self->admission_->spend(n)) {
          self->close("the session's preview byte budget (preview.max_mib_per_session) is spent");
          return;
        }
        net::async_write(to, net::buffer(direction.buffer.data(), n),
                         [self, &from, &to, &direction, to_sandbox](boost::system::error_code wrote,
                                                                    std::size_t) {
                           if (self->closed_) return;
                           if (wrote) {
                             self->close(to_sandbox ? "the sandbox's server closed"
                                                    : "the browser went away");
                             return;
                           }
                           self->pump(from, to, direction, to_sandbox);
                         });
      });
}

void PreviewConnection::onDirectionEnded(Direction& direction) {
  direction.ended = true;
  if (to_sandbox_.ended && from_sandbox_.ended) close("closed");
}

void PreviewConnection::tick() {
  // Once a second: a connection whose grant ended (unexpose_port, its expiry, its session ended
  // or was lost) closes at once, and one that moved no byte for preview.idle_timeout_s too. The
  // connection holds its session in use, so the session cannot end by itself meanwhile: its end
  // is read from the registry.
  timer_.expires_after(kTick);
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->closed_) return;
    if (Clock::now() - self->last_activity_ >=
        std::chrono::seconds(self->context_.config.idle_timeout_s)) {
      self->close("idle past preview.idle_timeout_s");
      return;
    }
    if (!self->grantLive()) {
      self->close("its preview ended (unexposed, expired, or the session ended)");
      return;
    }
    self->tick();
  });
}

bool PreviewConnection::grantLive() const {
  const auto& grant = admission_->grant();
  if (!context_.sessions.previews().find(grant.label)) return false;
  try {
    return context_.sessions.find(grant.owner, grant.session_id,
                                  server::SessionRegistry::IfStarting::kRefuse,
                                  server::SessionRegistry::IfPaused::kLeave) ==
           grant.session.lock();
  } catch (const std::exception&) {
    return false;  // ended or lost
  }
}

void PreviewConnection::refuse(http::status status, std::string message) {
  answer(Refusal{status, std::move(message)});
}

void PreviewConnection::answer(const Refusal& reply) {
  if (closed_) return;
  outcome_ = std::to_string(static_cast<unsigned>(reply.status));
  timer_.cancel();
  auto bytes = std::make_shared<std::string>(plainAnswer(reply));
  relaying_ = false;
  // Bounded: a client that does not read its answer is closed at the header timeout.
  timer_.expires_after(std::chrono::milliseconds(context_.config.header_timeout_ms));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->close("did not read its answer");
  });
  net::async_write(client_, net::buffer(*bytes),
                   [self = shared_from_this(), bytes](boost::system::error_code, std::size_t) {
                     boost::system::error_code ignored;
                     self->client_.shutdown(net::socket_base::shutdown_send, ignored);
                     self->close(nullptr);
                   });
}

void PreviewConnection::close(const char* why) {
  if (closed_) return;
  closed_ = true;
  if (why != nullptr && outcome_.empty()) outcome_ = why;
  boost::system::error_code ignored;
  timer_.cancel();
  client_.close(ignored);
  sandbox_.close(ignored);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
  if (admission_) {
    const auto& grant = admission_->grant();
    spdlog::info("preview {} (session {}, port {}) from {}: {}; {} B in, {} B out, {} ms",
                 shortLabel(grant.label), grant.session_id, grant.port, peer_, outcome_,
                 to_sandbox_.bytes, from_sandbox_.bytes, ms.count());
  } else {
    spdlog::debug("preview connection from {}: {}, {} ms", peer_, outcome_, ms.count());
  }
  if (use_) (*use_)->touch();  // idle from now, not from when it opened
  use_.reset();
  admission_.reset();
}

}  // namespace preview
