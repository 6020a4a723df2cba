// Ready sandboxes of one profile (the server's default spec), so a new session skips the container
// start. A background thread keeps `size` of them ready, creating one at a time so that refills
// never crowd out the cold creations sessions are waiting for. It may wait for a client before
// the first one (start_delay): a process that is stopped before that never starts a container. A
// sandbox leaves the pool once, to one session, and is never returned: no state crosses sessions.
// Thread-safe: take() and stats() may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/cancel_token.h"
#include "sandbox/backend.h"

namespace server {

// Whether a sandbox made for `ready` can serve a request for `wanted`. Labels are not compared:
// they name the session, which a pooled sandbox cannot know in advance.
[[nodiscard]] bool sameProfile(const sandbox::SandboxSpec& ready,
                               const sandbox::SandboxSpec& wanted);

// A start_delay with no time limit: the first fill waits for fillNow() or take() (its owner decides
// when, e.g. once start-up checked the engine: app/warm_up.h).
inline constexpr std::chrono::milliseconds kUntilFillNow = std::chrono::milliseconds::max();

struct WarmPoolOptions {
  std::size_t size = 2;
  // How long the first fill waits for a client to show up (fillNow(), take()) before it starts
  // anyway; 0: at once; kUntilFillNow: no limit. A stop() during the wait ends the pool with
  // nothing created (a stdio client's short-lived server/discover probe process).
  std::chrono::milliseconds start_delay{0};
  std::chrono::milliseconds retry_delay{1000};       // after a failed creation; doubles each time
  std::chrono::milliseconds max_retry_delay{30000};  // the cap of that back-off
  // Python modules a new sandbox imports before it is pooled (validated module names); empty:
  // none. A failed or slow import is harmless: the sandbox is pooled all the same.
  std::vector<std::string> preload_python;
  std::chrono::milliseconds preload_timeout{60000};
  // Ready sandboxes wait frozen (the frozen tier): no CPU while they wait; the claiming session's
  // first call thaws one in milliseconds.
  bool freeze_ready = false;
};

// The Python cell that imports `modules` into sys.modules without binding any name in the
// session's namespace, skipping those that fail. Names must be valid module names.
[[nodiscard]] std::string preloadCode(const std::vector<std::string>& modules);

class WarmPool {
 public:
  // `profile` gives the spec to fill with; it runs on the pool's thread and may throw (engine
  // down, runtime refused), which counts as a failed creation.
  using ProfileFn = std::function<sandbox::SandboxSpec()>;

  WarmPool(sandbox::Backend& backend, ProfileFn profile, WarmPoolOptions options);
  ~WarmPool();  // stop()
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  // A ready, live sandbox made for a spec with the same profile as `spec`, or nullptr (create it
  // cold). Wakes the filler.
  [[nodiscard]] std::unique_ptr<sandbox::Sandbox> take(const sandbox::SandboxSpec& spec);

  // A client is here: the first fill starts now rather than at the end of start_delay.
  void fillNow();

  struct Stats {
    std::size_t size = 0;   // target
    std::size_t ready = 0;  // waiting now
    std::uint64_t claimed = 0;
    std::uint64_t misses = 0;  // take() found nothing suitable
    std::uint64_t failures = 0;
    std::string last_error;
  };
  [[nodiscard]] Stats stats();

  // Stops filling and destroys the ready sandboxes (concurrently). Idempotent.
  void stop() noexcept;

 private:
  struct Ready {
    sandbox::SandboxSpec spec;
    std::unique_ptr<sandbox::Sandbox> sandbox;
  };
  void fillLoop();
  void waitForClient(std::unique_lock<std::mutex>& lock);  // the start_delay wait
  void preload(sandbox::Sandbox& sandbox);

  sandbox::Backend& backend_;
  ProfileFn profile_;
  const WarmPoolOptions options_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool client_seen_ = false;  // fillNow() or take() ended the start_delay wait
  std::deque<Ready> ready_;
  Stats stats_;
  CancelToken stopping_token_;  // interrupts a preload when stop() comes
  std::thread filler_;
};

}  // namespace server
