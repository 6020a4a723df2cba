#include "server/session_freezer.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>

#include "server/sessions_log.h"

namespace server {
namespace {

double secondsOf(SessionFreezer::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

bool SessionFreezer::quietLongEnough(Session& session, Track& track,
                                     const sandbox::Sandbox::Usage& usage, bool first,
                                     Clock::time_point now) const {
  const double elapsed = secondsOf(now - track.sampled);
  // A new container (a restore) starts its CPU count again: no comparison, busy for now.
  const bool busy =
      first || session.inUse() || usage.cpu_ns < track.cpu_ns || elapsed <= 0 ||
      static_cast<double>(usage.cpu_ns - track.cpu_ns) / 1e9 > settings_.quiet_cpu_share * elapsed;
  if (busy) track.busy_at = now;
  track.cpu_ns = usage.cpu_ns;
  track.sampled = now;
  const double after = secondsOf(settings_.after);
  return !session.inUse() && session.options().freeze && session.idleSeconds() >= after &&
         secondsOf(now - track.busy_at) >= after;
}

std::vector<std::shared_ptr<Session>> SessionFreezer::tick(
    const std::vector<std::shared_ptr<Session>>& resident, Clock::time_point now) {
  std::unordered_map<std::string, Track> seen;
  std::vector<std::pair<Clock::time_point, std::shared_ptr<Session>>> frozen;
  Tally tally;
  tally.freezes = tally_.freezes;
  for (const auto& session : resident) {
    // Busy (being paused), or out of reach: no sample this time.
    const auto usage = session->sandbox().usage();
    if (!usage) continue;
    std::string key = session->owner() + '\n' + session->id();
    const auto known = tracks_.find(key);
    const bool first = known == tracks_.end();
    Track track = first ? Track{} : known->second;
    if (session->frozen()) {
      if (!track.frozen) track.frozen_at = now;  // frozen before it was a session: the pool's
      track.frozen = true;
      track.memory_bytes = usage->memory_bytes;
      track.cpu_ns = usage->cpu_ns;
      track.sampled = now;
    } else {
      if (track.frozen) track.busy_at = now;  // thawed since: something reached it
      track.frozen = false;
      if (quietLongEnough(*session, track, *usage, first, now)) {
        if (session->freeze()) {
          track.frozen = true;
          track.frozen_at = now;
          track.memory_bytes = usage->memory_bytes;
          ++tally.freezes;
          log()->debug("session {} frozen after {:.1f} s idle ({} MiB kept)", session->id(),
                       session->idleSeconds(), usage->memory_bytes >> 20);
        } else {
          // Called meanwhile, or its freeze did not finish (each try stops its processes for up
          // to a second): it waits a whole quiet period again.
          track.busy_at = now;
        }
      }
    }
    if (track.frozen) {
      ++tally.frozen;
      tally.frozen_bytes += track.memory_bytes;
      frozen.emplace_back(track.frozen_at, session);
    }
    seen.emplace(std::move(key), track);
  }
  tracks_ = std::move(seen);
  tally_ = tally;

  std::vector<std::shared_ptr<Session>> to_pause;
  if (tally.frozen_bytes <= settings_.max_frozen_bytes) return to_pause;
  std::sort(frozen.begin(), frozen.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::uint64_t held = tally.frozen_bytes;
  for (const auto& [at, session] : frozen) {
    if (held <= settings_.max_frozen_bytes) break;
    if (!session->pausable()) continue;
    held -= tracks_.at(session->owner() + '\n' + session->id()).memory_bytes;
    to_pause.push_back(session);
  }
  return to_pause;
}

std::uint64_t defaultFrozenBudgetBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string name;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> name >> kib >> unit) {
    if (name == "MemTotal:") return kib * 1024 / 2;
  }
  return std::uint64_t{8} << 30;  // unknown: 8 GiB
}

}  // namespace server
