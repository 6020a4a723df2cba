#include "sidecar/tunnel.h"

#include <algorithm>
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <utility>

namespace sidecar {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

// A peer that closes without the TLS close_notify exchange (clients commonly do, once they
// have their answer) shows up as a reset or a broken pipe: an end, not a failure.
bool peerLeft(const error_code& ec) {
  return ec == asio::error::connection_reset || ec == asio::error::broken_pipe;
}

class Tunnel : public std::enable_shared_from_this<Tunnel> {
 public:
  Tunnel(TunnelSocket sandbox, TunnelSocket upstream, TunnelLimits limits,
         std::function<void(const TunnelResult&)> done)
      : sandbox_(std::move(sandbox)),
        upstream_(std::move(upstream)),
        timer_(sandbox_.get_executor()),
        limits_(limits),
        done_(std::move(done)) {}

  void start(std::string first_up) {
    armTimer();
    if (first_up.empty()) {
      read(up_);
      read(down_);
      return;
    }
    if (limits_.budget) {
      limits_.budget->left -= std::min<std::uint64_t>(limits_.budget->left, first_up.size());
    }
    up_.pending = std::move(first_up);
    write(up_, up_.pending.size());
    read(down_);
  }

 private:
  struct Direction {
    Direction(TunnelSocket* from_socket, TunnelSocket* to_socket, std::uint64_t* counter)
        : from(from_socket), to(to_socket), count(counter) {}
    TunnelSocket* from;
    TunnelSocket* to;
    std::uint64_t* count;
    std::array<char, std::size_t{64} * 1024> buffer{};
    std::string pending;  // first_up, written before the first read
    bool ended = false;
  };

  void read(Direction& way) {
    std::size_t room = way.buffer.size();
    if (&way == &up_) {
      const std::uint64_t left = limits_.max_up - std::min(limits_.max_up, result_.up);
      if (left == 0) return endUp();
      room = static_cast<std::size_t>(std::min<std::uint64_t>(room, left));
    }
    if (limits_.budget) {
      if (limits_.budget->left == 0) return finish("limit");
      room = static_cast<std::size_t>(std::min<std::uint64_t>(room, limits_.budget->left));
    }
    way.from->async_read_some(
        asio::buffer(way.buffer.data(), room),
        [self = shared_from_this(), &way](error_code ec, std::size_t n) {
          if (ec == asio::error::eof) return self->endDirection(way);
          if (peerLeft(ec)) return self->finish("closed");
          if (ec) return self->finish(ec.message());
          // Both directions read at once: the budget is charged when
          // bytes arrive, and what it no longer covers is not relayed.
          if (auto& budget = self->limits_.budget) {
            n = static_cast<std::size_t>(std::min<std::uint64_t>(n, budget->left));
            budget->left -= n;
            if (n == 0) return self->finish("limit");
          }
          self->write(way, n);
        });
  }

  void write(Direction& way, std::size_t n) {
    const auto bytes = way.pending.empty() ? asio::buffer(way.buffer.data(), n)
                                           : asio::buffer(way.pending.data(), n);
    asio::async_write(*way.to, bytes,
                      [self = shared_from_this(), &way](error_code ec, std::size_t written) {
                        if (peerLeft(ec)) return self->finish("closed");
                        if (ec) return self->finish(ec.message());
                        way.pending.clear();
                        *way.count += written;
                        self->last_moved_ = std::chrono::steady_clock::now();
                        if (self->result_.up + self->result_.down >= self->limits_.max_bytes ||
                            (self->limits_.budget && self->limits_.budget->left == 0)) {
                          return self->finish("limit");
                        }
                        self->read(way);
                      });
  }

  // The reading side closed its sending half: pass it on; both ended, the tunnel ends.
  void endDirection(Direction& way) {
    way.ended = true;
    error_code ignored;
    way.to->shutdown(asio::socket_base::shutdown_send, ignored);
    if (up_.ended && down_.ended) finish("closed");
  }

  // The sandbox sent all it may (max_up): stop reading from it; the upstream's answer still
  // comes down. Its sending half is not shut, since an HTTP server may take that as the end.
  void endUp() {
    up_.ended = true;
    if (down_.ended) finish("closed");
  }

  void armTimer() {
    timer_.expires_after(std::min<std::chrono::steady_clock::duration>(
        limits_.idle, std::chrono::seconds(1) + limits_.max_duration / 100));
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->finished_) return;
      const auto now = std::chrono::steady_clock::now();
      if (now - self->last_moved_ >= self->limits_.idle) return self->finish("idle");
      if (now - self->started_ >= self->limits_.max_duration) return self->finish("time");
      self->armTimer();
    });
  }

  void finish(std::string why) {
    if (finished_) return;
    finished_ = true;
    result_.end = std::move(why);
    error_code ignored;
    timer_.cancel();
    sandbox_.close(ignored);
    upstream_.close(ignored);
    if (done_) done_(result_);
  }

  TunnelSocket sandbox_;
  TunnelSocket upstream_;
  asio::steady_timer timer_;
  const TunnelLimits limits_;
  std::function<void(const TunnelResult&)> done_;
  TunnelResult result_;
  Direction up_{&sandbox_, &upstream_, &result_.up};
  Direction down_{&upstream_, &sandbox_, &result_.down};
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_moved_ = started_;
  bool finished_ = false;
};

}  // namespace

void startTunnel(TunnelSocket sandbox, TunnelSocket upstream, std::string first_up,
                 TunnelLimits limits, std::function<void(const TunnelResult&)> done) {
  std::make_shared<Tunnel>(std::move(sandbox), std::move(upstream), limits, std::move(done))
      ->start(std::move(first_up));
}

}  // namespace sidecar
