#include "server/warm_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace server {
namespace {

std::shared_ptr<spdlog::logger> log() {
  static auto logger = [] {
    auto existing = spdlog::get("pool");
    return existing ? existing : spdlog::default_logger()->clone("pool");
  }();
  return logger;
}

// How often the filler looks for pooled sandboxes that died while waiting (engine restart, OOM).
constexpr auto kHealthCheckPeriod = std::chrono::seconds(5);

}  // namespace

bool sameProfile(const sandbox::SandboxSpec& ready, const sandbox::SandboxSpec& wanted) {
  return ready.image == wanted.image && ready.runtime == wanted.runtime &&
         ready.environment == wanted.environment && ready.volumes == wanted.volumes &&
         ready.limits == wanted.limits && ready.user == wanted.user &&
         ready.workdir == wanted.workdir && ready.read_only_root == wanted.read_only_root &&
         ready.python_helper_dir == wanted.python_helper_dir;
}

std::string preloadCode(const std::vector<std::string>& modules) {
  std::string list;
  for (const auto& module : modules) list += (list.empty() ? "'" : ", '") + module + "'";
  // exec() in a throw-away dict: the loop variable never reaches the session's globals.
  return "exec(\"for m in [" + list + "]:\\n try: __import__(m)\\n except Exception: pass\", {})";
}

WarmPool::WarmPool(sandbox::Backend& backend, ProfileFn profile, WarmPoolOptions options)
    : backend_(backend), profile_(std::move(profile)), options_(std::move(options)) {
  stats_.size = options_.size;
  if (options_.size > 0) filler_ = std::thread([this] { fillLoop(); });
}

WarmPool::~WarmPool() { stop(); }

std::unique_ptr<sandbox::Sandbox> WarmPool::take(const sandbox::SandboxSpec& spec) {
  std::vector<std::unique_ptr<sandbox::Sandbox>> dead;  // destroyed outside the lock
  std::unique_ptr<sandbox::Sandbox> found;
  {
    std::lock_guard lock(mutex_);
    client_seen_ = true;
    while (!ready_.empty() && !found) {
      if (!sameProfile(ready_.front().spec, spec)) break;  // all share one profile
      auto candidate = std::move(ready_.front().sandbox);
      ready_.pop_front();
      if (candidate->alive()) {
        found = std::move(candidate);
      } else {
        dead.push_back(std::move(candidate));
      }
    }
    if (found) {
      ++stats_.claimed;
    } else {
      ++stats_.misses;
    }
  }
  wake_.notify_all();
  if (!dead.empty()) log()->warn("discarded {} pooled sandbox(es) that had stopped", dead.size());
  return found;
}

void WarmPool::fillNow() {
  {
    std::lock_guard lock(mutex_);
    if (client_seen_) return;
    client_seen_ = true;
  }
  wake_.notify_all();
}

WarmPool::Stats WarmPool::stats() {
  std::lock_guard lock(mutex_);
  Stats out = stats_;
  out.ready = ready_.size();
  return out;
}

void WarmPool::fillLoop() {
  auto delay = options_.retry_delay;
  std::unique_lock lock(mutex_);
  if (options_.start_delay.count() > 0) waitForClient(lock);
  while (!stopping_) {
    if (ready_.size() >= options_.size) {
      wake_.wait_for(lock, kHealthCheckPeriod);
      // Drop sandboxes that died while pooled, so that they are replaced.
      std::vector<std::unique_ptr<sandbox::Sandbox>> dead;
      for (auto it = ready_.begin(); it != ready_.end();) {
        if (it->sandbox->alive()) {
          ++it;
        } else {
          dead.push_back(std::move(it->sandbox));
          it = ready_.erase(it);
        }
      }
      if (!dead.empty()) {
        lock.unlock();
        log()->warn("{} pooled sandbox(es) stopped while waiting; replacing them", dead.size());
        dead.clear();
        lock.lock();
      }
      continue;
    }
    lock.unlock();
    Ready made;
    std::string error;
    try {
      made.spec = profile_();
      const auto started = std::chrono::steady_clock::now();
      made.sandbox = backend_.create(made.spec);
      if (!options_.preload_python.empty()) preload(*made.sandbox);
      if (options_.freeze_ready) (void)made.sandbox->freeze();
      log()->debug("pooled sandbox {} ready in {} ms", made.sandbox->id(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - started)
                       .count());
    } catch (const std::exception& e) {
      error = e.what();
    }
    lock.lock();
    if (!error.empty()) {
      ++stats_.failures;
      stats_.last_error = error;
      log()->warn("could not fill the warm pool (retrying in {} ms): {}", delay.count(), error);
      wake_.wait_for(lock, delay, [this] { return stopping_; });
      delay = std::min(delay * 2, options_.max_retry_delay);
      continue;
    }
    delay = options_.retry_delay;
    if (stopping_) {
      lock.unlock();
      made = {};  // stop() came while it was being made
      lock.lock();
      break;
    }
    ready_.push_back(std::move(made));
  }
}

void WarmPool::waitForClient(std::unique_lock<std::mutex>& lock) {
  const auto told = [this] { return stopping_ || client_seen_; };
  if (options_.start_delay == kUntilFillNow) {
    wake_.wait(lock, told);
    if (!stopping_) log()->debug("told to fill: filling the pool now");
  } else if (wake_.wait_for(lock, options_.start_delay, told)) {
    if (!stopping_) log()->debug("a client is here: filling the pool now");
  } else {
    log()->debug("no client request within {} ms of the start: filling the pool now",
                 options_.start_delay.count());
  }
}

void WarmPool::preload(sandbox::Sandbox& sandbox) {
  sandbox::ExecRequest request;
  request.kind = sandbox::ExecKind::kPython;
  request.code = preloadCode(options_.preload_python);
  request.timeout = options_.preload_timeout;
  request.max_output_bytes = 4096;
  const auto started = std::chrono::steady_clock::now();
  try {
    const auto result = sandbox.exec(request, stopping_token_, nullptr);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count();
    if (result.status == sandbox::ExecStatus::kSuccess) {
      log()->debug("pooled sandbox {}: Python modules preloaded in {} ms", sandbox.id(), ms);
    } else {
      // The sandbox's output is not logged: it is the sandbox's text.
      log()->warn(
          "pooled sandbox {}: preloading pool.preload_python ended with status {} after "
          "{} ms; pooled without it",
          sandbox.id(), protocol::toString(result.status), ms);
    }
  } catch (const std::exception& e) {
    log()->warn("pooled sandbox {}: preloading pool.preload_python failed: {}", sandbox.id(),
                e.what());
  }
}

void WarmPool::stop() noexcept {
  std::deque<Ready> doomed;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    doomed.swap(ready_);
  }
  stopping_token_.cancel();
  wake_.notify_all();
  if (filler_.joinable()) filler_.join();
  // Each removal is an engine round trip; do them side by side.
  std::vector<std::thread> removers;
  removers.reserve(doomed.size());
  for (auto& entry : doomed) {
    removers.emplace_back([sandbox = std::move(entry.sandbox)]() mutable { sandbox.reset(); });
  }
  for (auto& remover : removers) remover.join();
}

}  // namespace server
