#include "agent/egress_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

namespace agent {
namespace {

constexpr int kListenBacklog = 128;
constexpr int kAcceptsPerWakeup = 64;
constexpr int kEventsPerWait = 64;

std::system_error bindError(int error, std::uint16_t port) {
  std::string what = "egress proxy: binding 127.0.0.1:" + std::to_string(port);
  if (error == EACCES) {
    what += " (ports below 1024 need a privilege the agent has given up; use 1024 or above)";
  } else if (error == EADDRINUSE) {
    what += " (something in the sandbox listens there already; pick another port)";
  }
  return {error, std::generic_category(), what};
}

}  // namespace

UniqueFd listenOnLoopback(std::uint16_t port) {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener) {
    throw std::system_error(errno, std::generic_category(), "egress proxy: socket(AF_INET)");
  }
  const int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    throw bindError(errno, port);
  }
  if (::listen(listener.get(), kListenBacklog) != 0) {
    throw std::system_error(errno, std::generic_category(), "egress proxy: listen()");
  }
  return listener;
}

std::uint16_t boundPort(int listener) noexcept {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  if (::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  return ntohs(address.sin_port);
}

EgressRelay::EgressRelay(UniqueFd listener, EgressUpstream upstream, std::size_t max_connections)
    : epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      listener_(std::move(listener)),
      upstream_(std::move(upstream)),
      max_connections_(max_connections) {
  if (!epoll_) throw std::system_error(errno, std::generic_category(), "epoll_create1");
}

EgressRelay::~EgressRelay() = default;

void EgressRelay::run(int stop_fd) {
  if (stop_fd >= 0) {
    epoll_event event{EPOLLIN, {.ptr = &stop_tag_}};
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, stop_fd, &event) != 0) {
      throw std::system_error(errno, std::generic_category(), "epoll_ctl(stop fd)");
    }
  }
  watchListener(true);
  std::array<epoll_event, kEventsPerWait> events{};
  stopped_ = false;
  while (!stopped_) {
    const int ready =
        ::epoll_wait(epoll_.get(), events.data(), kEventsPerWait, epollTimeoutMs(Clock::now()));
    if (ready < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "epoll_wait");
    }
    const auto now = Clock::now();
    for (int i = 0; i < ready; ++i) dispatch(events[static_cast<std::size_t>(i)], now);
    runDeadlines(now);
    removeFinished();
  }
}

void EgressRelay::dispatch(const epoll_event& event, Clock::time_point now) {
  const Tag& tag = *static_cast<const Tag*>(event.data.ptr);
  switch (tag.kind) {
    case TagKind::kStop:
      stopped_ = true;
      return;
    case TagKind::kListener:
      acceptClients(now);
      return;
    case TagKind::kClient:
    case TagKind::kUpstream: {
      Entry& entry = *tag.entry;
      // Finished earlier in this batch: its sockets are closed, the event is stale.
      if (entry.connection->finished()) return;
      const auto side = tag.kind == TagKind::kClient ? EgressConnection::Side::kClient
                                                     : EgressConnection::Side::kUpstream;
      entry.connection->onReady(side, event.events, now);
      afterChange(entry, now);
      return;
    }
  }
}

void EgressRelay::acceptClients(Clock::time_point now) {
  for (int i = 0; i < kAcceptsPerWakeup; ++i) {
    UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client) {
      const int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) return;
      if (common::AcceptBackoff::isTransient(error)) continue;
      if (const auto failures = accept_backoff_.onFailure(now)) {
        std::fprintf(stderr,
                     "sandbox-agent: egress forwarder: accept failed (%s; %llu time(s) since the "
                     "last line); pausing new connections briefly\n",
                     std::strerror(error), static_cast<unsigned long long>(*failures));
      }
      watchListener(false);  // the connection waits in the backlog
      resume_accepting_at_ = now + common::AcceptBackoff::kPause;
      return;
    }
    if (entries_.size() >= max_connections_) continue;  // over the limit: closed at once
    const int one = 1;  // requests and answers are small: no Nagle delay on top of ours
    ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto entry = std::make_unique<Entry>();
    entry->tags = {Tag{TagKind::kClient, entry.get()}, Tag{TagKind::kUpstream, entry.get()}};
    entry->connection = std::make_unique<EgressConnection>(std::move(client), upstream_, now);
    afterChange(*entry, now);
    entries_.push_back(std::move(entry));
  }
}

void EgressRelay::runDeadlines(Clock::time_point now) {
  if (resume_accepting_at_ && *resume_accepting_at_ <= now) {
    resume_accepting_at_.reset();
    watchListener(true);
  }
  for (const auto& entry : entries_) {
    const auto deadline = entry->connection->deadline();
    if (!deadline || *deadline > now) continue;
    entry->connection->onDeadline(now);
    afterChange(*entry, now);
  }
}

void EgressRelay::afterChange(Entry& entry, Clock::time_point now) {
  if (!entry.refusal_noted && entry.connection->refusedWith() != 0) {
    entry.refusal_noted = true;
    if (const auto refused = refusal_log_.onFailure(now)) {
      std::fprintf(stderr,
                   "sandbox-agent: egress forwarder: the egress gateway at %s is not reachable "
                   "(%s); %llu client(s) answered 502 since the last line\n",
                   upstream_.path.c_str(), std::strerror(entry.connection->refusedWith()),
                   static_cast<unsigned long long>(*refused));
    }
  }
  syncInterest(entry);
}

void EgressRelay::syncInterest(Entry& entry) {
  for (const auto side : {EgressConnection::Side::kClient, EgressConnection::Side::kUpstream}) {
    const auto index = static_cast<std::size_t>(side);
    const int fd = entry.connection->fd(side);
    const std::uint32_t wanted = fd >= 0 ? entry.connection->wantedEvents(side) : 0;
    int& registered_fd = entry.registered_fd[index];
    std::uint32_t& registered = entry.registered_events[index];
    if (registered_fd != fd) {  // closed (which left epoll with it) or replaced
      registered_fd = -1;
      registered = 0;
    }
    if (registered_fd == fd && wanted == registered) continue;
    if (wanted == 0) {
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
      registered_fd = -1;
      registered = 0;
      continue;
    }
    epoll_event event{wanted, {.ptr = &entry.tags[index]}};
    // A socket closed and replaced under the same number between two calls left epoll without
    // saying so: ENOENT and EEXIST tell, and the other operation then applies.
    const int op = registered_fd >= 0 ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (::epoll_ctl(epoll_.get(), op, fd, &event) != 0) {
      const int fallback = errno == ENOENT ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
      ::epoll_ctl(epoll_.get(), fallback, fd, &event);
    }
    registered_fd = fd;
    registered = wanted;
  }
}

void EgressRelay::watchListener(bool on) {
  if (on == listener_watched_) return;
  epoll_event event{EPOLLIN, {.ptr = &listener_tag_}};
  if (::epoll_ctl(epoll_.get(), on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, listener_.get(), &event) != 0) {
    throw std::system_error(errno, std::generic_category(), "epoll_ctl(listener)");
  }
  listener_watched_ = on;
}

void EgressRelay::removeFinished() {
  std::erase_if(entries_, [](const auto& entry) { return entry->connection->finished(); });
}

int EgressRelay::epollTimeoutMs(Clock::time_point now) const {
  std::optional<Clock::time_point> earliest = resume_accepting_at_;
  for (const auto& entry : entries_) {
    const auto deadline = entry->connection->deadline();
    if (deadline && (!earliest || *deadline < *earliest)) earliest = deadline;
  }
  if (!earliest) return -1;
  if (*earliest <= now) return 0;
  // Rounded up, so a deadline is never seen a little early and polled for again.
  return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*earliest - now).count());
}

}  // namespace agent
