// The frozen tier's decisions, made on each tick of the registry's reaper: which resident sessions
// stayed quiet long enough to freeze, and which frozen ones go to disk to keep the memory frozen
// sessions hold within its budget. Quiet: no call for `after`, and over that time the sandbox's
// own CPU use (its cgroup, sampled each tick) stayed under `quiet_cpu_share` of one core, so a
// training loop or a build started with `&` keeps its session running until it goes quiet.
// gVisor's idle Sentry alone uses 3-4 % of a core under systrap, hence the 10 % default.
// Thread-compatible: the reaper's thread alone calls tick().
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/session.h"

namespace server {

struct FreezeSettings {
  std::chrono::milliseconds after{0};  // 0: the tier is off
  double quiet_cpu_share = 0.10;
  std::uint64_t max_frozen_bytes = 0;  // past it the longest frozen are paused first
};

class SessionFreezer {
 public:
  using Clock = std::chrono::steady_clock;

  explicit SessionFreezer(FreezeSettings settings) : settings_(settings) {}

  [[nodiscard]] bool enabled() const noexcept { return settings_.after.count() > 0; }
  [[nodiscard]] const FreezeSettings& settings() const noexcept { return settings_; }

  // Samples each resident session and freezes those quiet long enough (a few ms each: call it
  // without the registry's lock). Returns frozen sessions to pause for the memory budget,
  // longest frozen first. Sessions not passed are forgotten.
  std::vector<std::shared_ptr<Session>> tick(const std::vector<std::shared_ptr<Session>>& resident,
                                             Clock::time_point now);

  struct Tally {
    std::size_t frozen = 0;
    std::uint64_t frozen_bytes = 0;
    std::uint64_t freezes = 0;  // since start
  };
  [[nodiscard]] Tally tally() const noexcept { return tally_; }

 private:
  struct Track {
    std::uint64_t cpu_ns = 0;
    Clock::time_point sampled;
    Clock::time_point busy_at;  // the last tick it was in use or used CPU
    bool frozen = false;
    Clock::time_point frozen_at;
    std::uint64_t memory_bytes = 0;
  };
  // Updates the session's track from one sample; true when it may be frozen now.
  bool quietLongEnough(Session& session, Track& track, const sandbox::Sandbox::Usage& usage,
                       bool first, Clock::time_point now) const;

  const FreezeSettings settings_;
  std::unordered_map<std::string, Track> tracks_;  // by owner and session id
  Tally tally_;
};

// Half of this host's memory (MemTotal), the default budget of frozen sessions.
[[nodiscard]] std::uint64_t defaultFrozenBudgetBytes();

}  // namespace server
