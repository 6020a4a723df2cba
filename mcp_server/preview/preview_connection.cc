#include "preview/preview_connection.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <cstdio>

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

bool endOfStream(boost::system::error_code ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof ||
         ec == net::error::connection_reset;
}

}  // namespace

void OpenQueue::enqueue(const std::string& key, std::function<void()> start) {
  auto& opens = sessions_[key];
  if (opens.running < kOpensPerSession) {
    ++opens.running;
    start();
  } else {
    opens.waiting.push_back(std::move(start));
  }
}

void OpenQueue::finished(const std::string& key) {
  const auto it = sessions_.find(key);
  if (it == sessions_.end()) return;
  auto& opens = it->second;
  --opens.running;
  if (!opens.waiting.empty()) {
    auto next = std::move(opens.waiting.front());
    opens.waiting.pop_front();
    ++opens.running;
    next();
  } else if (opens.running <= 0) {
    sessions_.erase(it);
  }
}

PreviewConnection::PreviewConnection(PreviewContext& context, tcp::socket client)
    : context_(context), client_(std::move(client)), sandbox_(context.io), timer_(context.io) {
  boost::system::error_code ec;
  const auto remote = client_.remote_endpoint(ec);
  peer_ = ec ? "?" : remote.address().to_string() + ":" + std::to_string(remote.port());
  ++context_.stats.open;
  ++context_.stats.connections_total;
}

PreviewConnection::~PreviewConnection() { --context_.stats.open; }

void PreviewConnection::start(transport::ConnectionLimiter::Slot slot) {
  slot_ = std::move(slot);
  // Silent connections make room for new ones at the bound (slowloris from a shared address).
  slot_.markIdle([weak = weak_from_this(), &io = context_.io] {
    net::post(io, [weak] {
      if (auto self = weak.lock(); self && !self->admission_) {
        self->close("made room for a newer connection");
      }
    });
  });
  timer_.expires_after(std::chrono::milliseconds(context_.config.header_timeout_ms));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec && !self->admission_) {
      self->refuse(http::status::request_timeout, "The request's head did not arrive in time.\n");
    }
  });
  readHead();
}

void PreviewConnection::readHead() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(context_.config.max_head_bytes));
  parser_->body_limit(boost::none);  // bodies stream through; the session's byte budget counts
  http::async_read_header(
      client_, client_buffer_, *parser_,
      [self = shared_from_this()](boost::system::error_code ec, std::size_t) { self->onHead(ec); });
}

void PreviewConnection::onHead(boost::system::error_code ec) {
  if (closed_ || answering_) return;
  if (admission_) {  // a later request on a connection already relaying
    if (endOfStream(ec)) {
      boost::system::error_code ignored;
      sandbox_.shutdown(net::socket_base::shutdown_send, ignored);  // the EOF, passed on
      onSideEnded(true);
    } else if (ec) {
      close("a later request was malformed");
    } else if (auto refusal =
                   context_.gate.checkFollowing(parser_->get().base(), admission_->grant())) {
      // Answers of the sandbox to earlier requests may be on their way: no answer of the
      // listener's own can follow them. The request goes nowhere; the browser reads what the
      // sandbox still sends, then the end.
      outcome_ = refusal->status == http::status::misdirected_request
                     ? "a later request named another preview: not relayed"
                     : "a later request was refused: not relayed";
      boost::system::error_code ignored;
      sandbox_.shutdown(net::socket_base::shutdown_send, ignored);
      onSideEnded(true);
    } else {
      forwardHead();
    }
    return;
  }
  if (!slot_.markBusy()) {
    close("made room for a newer connection");
    return;
  }
  if (ec == http::error::header_limit) {
    ++context_.stats.refused_total;
    refuse(http::status::request_header_fields_too_large,
           "The request's head is larger than preview.max_head_bytes (" +
               std::to_string(context_.config.max_head_bytes) + ").\n");
  } else if (endOfStream(ec) || ec == net::error::operation_aborted) {
    close("closed before a request");
  } else if (ec) {
    ++context_.stats.refused_total;
    refuse(http::status::bad_request, "Malformed request: " + ec.message() + ".\n");
  } else {
    onFirstHead();
  }
}

void PreviewConnection::onFirstHead() {
  auto decision = context_.gate.admit(parser_->get().base());
  if (auto* refusal = std::get_if<Refusal>(&decision)) {
    if (refusal->status != http::status::see_other) ++context_.stats.refused_total;
    answer(*refusal);
    return;
  }
  admission_ = std::move(std::get<std::unique_ptr<PreviewGate::Admission>>(decision));
  open();
}

void PreviewConnection::open() {
  const auto& grant = admission_->grant();
  queue_key_ = grant.owner + "\n" + grant.session_id;
  timer_.expires_after(kOpenDeadline);
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) {
      self->refuse(http::status::gateway_timeout,
                   "The preview's port did not open in time; retry.\n");
    }
  });
  context_.opens.enqueue(queue_key_, [self = shared_from_this(), grant] {
    if (self->closed_ || self->context_.stopping.load()) {
      net::post(self->context_.io, [self] { self->context_.opens.finished(self->queue_key_); });
      return;
    }
    net::post(self->context_.openers, [self, grant] {
      std::shared_ptr<server::SessionUse> use;
      common::UniqueFd stream;
      std::string failure;
      try {
        if (self->context_.stopping.load()) throw sandbox::SandboxError("the server is stopping");
        // A paused session is restored (making room under max_sessions), a frozen one thawed
        // by the open: the first request waits for it.
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
        self->context_.opens.finished(self->queue_key_);
        self->onOpened(std::move(stream), std::move(use), failure);
      });
    });
  });
}

void PreviewConnection::onOpened(common::UniqueFd stream, std::shared_ptr<server::SessionUse> use,
                                 const std::string& failure) {
  use_ = std::move(use);
  if (closed_ || answering_) {  // timed out, or the listener stopped, meanwhile
    releaseSession();
    return;
  }
  if (!failure.empty()) {
    ++context_.stats.failed_total;
    refuse(http::status::bad_gateway, "The preview's port " +
                                          std::to_string(admission_->grant().port) +
                                          " could not be reached: " + failure + "\n");
    return;
  }
  boost::system::error_code ec;
  sandbox_.assign(net::local::stream_protocol(), stream.get(), ec);
  if (ec) {
    refuse(http::status::bad_gateway, "The preview's stream could not be used: " + ec.message());
    return;
  }
  (void)stream.release();  // the socket owns it now
  last_activity_ = Clock::now();
  tick();
  relayRaw(sandbox_, client_, down_buffer_, false);
  forwardHead();
}

std::string PreviewConnection::headBytes() const {
  const auto& head = parser_->get();
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

void PreviewConnection::forwardHead() {
  chunked_ = parser_->chunked();
  upgrade_ = parser_->upgrade();
  // The head as parsed (what the checks saw is what the sandbox gets).
  toSandbox(std::make_shared<std::string>(headBytes()), [this] { readBody(); });
}

void PreviewConnection::readBody() {
  if (parser_->is_done()) {
    onRequestDone();
    return;
  }
  auto& body = parser_->get().body();
  body.data = up_buffer_.data();
  body.size = up_buffer_.size();
  http::async_read_some(client_, client_buffer_, *parser_,
                        [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                          if (self->closed_) return;
                          if (ec && ec != http::error::need_buffer) {
                            self->close(endOfStream(ec) ? "the browser closed within a request body"
                                                        : "a request body was malformed");
                            return;
                          }
                          const std::size_t got =
                              self->up_buffer_.size() - self->parser_->get().body().size;
                          if (got == 0) {
                            self->readBody();
                            return;
                          }
                          auto piece = std::make_shared<std::string>();
                          if (self->chunked_) {
                            char size[20];
                            std::snprintf(size, sizeof size, "%zx\r\n", got);
                            piece->append(size);
                          }
                          piece->append(self->up_buffer_.data(), got);
                          if (self->chunked_) piece->append("\r\n");
                          self->toSandbox(piece, [raw = self.get()] { raw->readBody(); });
                        });
}

void PreviewConnection::onRequestDone() {
  const auto next = [this] {
    if (!upgrade_) {
      readHead();
      return;
    }
    // An upgrade (a WebSocket): from here on bytes go as they come, those already read first.
    const auto rest = client_buffer_.data();
    auto leftover =
        std::make_shared<std::string>(static_cast<const char*>(rest.data()), rest.size());
    client_buffer_.consume(rest.size());
    toSandbox(leftover, [this] { relayRaw(client_, sandbox_, up_buffer_, true); });
  };
  if (chunked_) {
    toSandbox(std::make_shared<std::string>("0\r\n\r\n"), next);  // trailers are not relayed
  } else {
    next();
  }
}

void PreviewConnection::toSandbox(const std::shared_ptr<std::string>& bytes,
                                  std::function<void()> next) {
  if (bytes->empty()) {
    next();
    return;
  }
  if (!countBytes(bytes->size(), true)) return;
  net::async_write(sandbox_, net::buffer(*bytes),
                   [self = shared_from_this(), bytes, next = std::move(next)](
                       boost::system::error_code ec, std::size_t) {
                     if (self->closed_) return;
                     if (ec) {
                       self->close("the sandbox's server closed");
                       return;
                     }
                     next();
                   });
}

bool PreviewConnection::countBytes(std::size_t n, bool to_sandbox) {
  last_activity_ = Clock::now();
  (to_sandbox ? bytes_up_ : bytes_down_) += n;
  (to_sandbox ? context_.stats.bytes_to_sandbox : context_.stats.bytes_from_sandbox) += n;
  if (!admission_->spend(n)) {
    close("the session's preview byte budget (preview.max_mib_per_session) is spent");
    return false;
  }
  return true;
}

template <typename From, typename To>
void PreviewConnection::relayRaw(From& from, To& to, RelayBuffer& buffer, bool to_sandbox) {
  from.async_read_some(net::buffer(buffer), [self = shared_from_this(), &from, &to, &buffer,
                                             to_sandbox](boost::system::error_code ec,
                                                         std::size_t n) {
    if (self->closed_) return;
    if (ec) {
      if (!endOfStream(ec)) {
        self->close(to_sandbox ? "the browser's connection failed" : "the sandbox's side failed");
        return;
      }
      boost::system::error_code ignored;
      to.shutdown(net::socket_base::shutdown_send, ignored);  // the EOF, passed on
      self->onSideEnded(to_sandbox);
      return;
    }
    if (!self->countBytes(n, to_sandbox)) return;
    net::async_write(
        to, net::buffer(buffer.data(), n),
        [self, &from, &to, &buffer, to_sandbox](boost::system::error_code wrote, std::size_t) {
          if (self->closed_) return;
          if (wrote) {
            self->close(to_sandbox ? "the sandbox's server closed" : "the browser went away");
            return;
          }
          self->relayRaw(from, to, buffer, to_sandbox);
        });
  });
}

void PreviewConnection::onSideEnded(bool to_sandbox) {
  (to_sandbox ? up_ended_ : down_ended_) = true;
  if (up_ended_ && down_ended_) close("closed");
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
    return context_.sessions.find(
               grant.owner, grant.session_id, server::SessionRegistry::IfStarting::kRefuse,
               server::SessionRegistry::IfPaused::kLeave) == grant.session.lock();
  } catch (const std::exception&) {
    return false;  // ended or lost
  }
}

void PreviewConnection::refuse(http::status status, std::string message) {
  answer(Refusal{status, std::move(message)});
}

void PreviewConnection::answer(const Refusal& reply) {
  if (closed_ || answering_) return;
  answering_ = true;
  outcome_ = std::to_string(static_cast<unsigned>(reply.status));
  auto bytes = std::make_shared<std::string>(plainAnswer(reply));
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

void PreviewConnection::releaseSession() {
  if (!use_) return;
  (*use_)->touch();  // idle from now, not from when it opened
  // The last reference to an ended session removes its sandbox (engine calls): never on the I/O
  // thread, except while the listener stops (the pool no longer takes work then).
  if (context_.stopping.load()) {
    use_.reset();
  } else {
    net::post(context_.openers, [use = std::move(use_)] {});
  }
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
                 shortLabel(grant.label), grant.session_id, grant.port, peer_, outcome_, bytes_up_,
                 bytes_down_, ms.count());
  } else {
    spdlog::debug("preview connection from {}: {}, {} ms", peer_, outcome_, ms.count());
  }
  releaseSession();
  admission_.reset();
}

}  // namespace preview
