// A request parked until its wait is over, holding no thread: its jsonrpc::Reply, and the two
// things that end the wait early, the client's cancellation (notifications/cancelled) and its
// connection going away. Whoever ends it first claims it (claim()); the rest do nothing. The
// owner must end every parked request it keeps (answer it, or drop it when it closes): a claim
// releases the token subscriptions, which would otherwise keep the callbacks alive.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "common/cancel_token.h"
#include "jsonrpc/reply.h"

namespace mcp {

class ParkedRequest : public std::enable_shared_from_this<ParkedRequest> {
 public:
  // Called once when a token fires before anyone claimed the request (already claimed for the
  // callee): `by_client` is true for a cancellation, false for a connection that went away.
  using EndedEarly = std::function<void(ParkedRequest& parked, bool by_client)>;

  explicit ParkedRequest(std::shared_ptr<jsonrpc::Reply> reply) : reply_(std::move(reply)) {}
  ParkedRequest(const ParkedRequest&) = delete;
  ParkedRequest& operator=(const ParkedRequest&) = delete;

  // Starts watching the tokens (either may be null). Call once, after registering the request
  // wherever its wait ends normally.
  void watch(const std::shared_ptr<CancelToken>& cancel,
             const std::shared_ptr<CancelToken>& abandoned, EndedEarly ended_early) {
    ended_early_ = std::move(ended_early);
    std::weak_ptr<ParkedRequest> weak = weak_from_this();
    const auto subscribe = [&](const std::shared_ptr<CancelToken>& token, bool by_client,
                               Subscription& into) {
      if (!token) return;
      // Outside the mutex: a token that fired already runs the callback right here.
      const std::uint64_t key = token->subscribe([weak, by_client] {
        if (auto self = weak.lock()) self->endEarly(by_client);
      });
      std::lock_guard lock(mutex_);
      into = {token, key};
    };
    subscribe(cancel, true, cancel_);
    subscribe(abandoned, false, abandoned_);
    if (claimed_) unsubscribe();  // ended while we subscribed
  }

  // True for the first caller only; the tokens are let go.
  [[nodiscard]] bool claim() {
    if (claimed_.exchange(true)) return false;
    unsubscribe();
    return true;
  }

  [[nodiscard]] jsonrpc::Reply& reply() noexcept { return *reply_; }

 private:
  struct Subscription {
    std::shared_ptr<CancelToken> token;
    std::uint64_t key = 0;
  };

  void endEarly(bool by_client) {
    if (!claim()) return;
    if (ended_early_) ended_early_(*this, by_client);
  }

  void unsubscribe() {
    std::lock_guard lock(mutex_);
    for (Subscription* s : {&cancel_, &abandoned_}) {
      if (s->token && s->key != 0) s->token->unsubscribe(s->key);
      s->token.reset();
    }
  }

  const std::shared_ptr<jsonrpc::Reply> reply_;
  EndedEarly ended_early_;
  std::atomic<bool> claimed_{false};
  std::mutex mutex_;
  Subscription cancel_;
  Subscription abandoned_;
};

}  // namespace mcp
