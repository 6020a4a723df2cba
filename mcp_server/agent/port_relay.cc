#include "agent/port_relay.h"

#include <utility>
#include <vector>

namespace agent {

PortRelays::PortRelays(EventLoop& loop, PortRelayLimits limits) : loop_(loop), limits_(limits) {}

PortRelays::~PortRelays() {
  for (auto& [key, entry] : entries_) unwatch(entry);
}

void PortRelays::open(const protocol::OpenPortRequest& request, Done done) {
  if (entries_.size() >= limits_.max_connections) {
    done("too many preview connections are open in the sandbox (" +
         std::to_string(limits_.max_connections) + "); close some and retry");
    return;
  }
  auto connection = std::make_unique<PortConnection>(request, limits_.buffer_bytes);
  const Key key = next_key_++;
  Entry& entry = entries_[key];
  entry.connection = std::move(connection);
  entry.done = std::move(done);
  if (entry.connection->state() == PortConnection::State::kConnecting) {
    entry.timer = loop_.addTimer(limits_.connect_timeout, [this, key] { onConnectTimeout(key); });
  }
  afterChange(key);
}

void PortRelays::onReady(Key key, Side side, short revents) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return;
  it->second.connection->onReady(side, revents);
  afterChange(key);
}

void PortRelays::onConnectTimeout(Key key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return;
  it->second.timer = 0;  // fired: nothing to cancel
  it->second.connection->onConnectTimeout(limits_.connect_timeout);
  afterChange(key);
}

void PortRelays::afterChange(Key key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return;
  Entry& entry = it->second;
  const auto state = entry.connection->state();
  Done done;
  std::optional<std::string> error;
  if (state != PortConnection::State::kConnecting) {
    loop_.cancelTimer(entry.timer);
    entry.timer = 0;
    done = std::exchange(entry.done, nullptr);
    if (state == PortConnection::State::kFailed) error = entry.connection->error();
  }
  if (state == PortConnection::State::kFailed || state == PortConnection::State::kFinished) {
    unwatch(entry);
    entries_.erase(it);
  } else {
    syncWatches(key, entry);
  }
  // Last: answering may end the agent (a failed write), which closes everything, `entry` too.
  if (done) done(error);
}

void PortRelays::syncWatches(Key key, Entry& entry) {
  for (const auto side : {Side::kSandbox, Side::kHost}) {
    const auto index = static_cast<std::size_t>(side);
    const int fd = entry.connection->fd(side);
    const short wanted = fd >= 0 ? entry.connection->wantedEvents(side) : short{0};
    int& watched_fd = entry.watched_fd[index];
    short& watched = entry.watched_events[index];
    if (watched_fd == fd && watched == wanted) continue;
    if (watched_fd >= 0) loop_.unwatchFd(watched_fd);
    // Nothing wanted: not watched at all, since poll reports a hang-up even for no events, and a
    // hung-up socket would wake the loop for ever.
    watched_fd = wanted != 0 ? fd : -1;
    watched = wanted;
    if (wanted != 0) {
      loop_.watchFd(fd, wanted, [this, key, side](short revents) { onReady(key, side, revents); });
    }
  }
}

void PortRelays::unwatch(Entry& entry) noexcept {
  for (int& fd : entry.watched_fd) {
    if (fd >= 0) loop_.unwatchFd(fd);
    fd = -1;
  }
  entry.watched_events = {0, 0};
  if (entry.timer != 0) loop_.cancelTimer(entry.timer);
  entry.timer = 0;
}

void PortRelays::closeAll(const std::string& reason) {
  std::map<Key, Entry> closing = std::exchange(entries_, {});
  std::vector<Done> unanswered;
  for (auto& [key, entry] : closing) {
    unwatch(entry);
    if (entry.done) unanswered.push_back(std::move(entry.done));
  }
  closing.clear();  // closes every socket before anyone hears of it
  for (const Done& done : unanswered) done(reason);
}

}  // namespace agent
