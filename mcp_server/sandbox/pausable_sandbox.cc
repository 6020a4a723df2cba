#include "sandbox/pausable_sandbox.h"

#include <chrono>
#include <mutex>

#include "sandbox/log.h"

namespace sandbox {
namespace {

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

std::string_view toString(PausableSandbox::State state) noexcept {
  switch (state) {
    case PausableSandbox::State::kRunning:
      return "running";
    case PausableSandbox::State::kPaused:
      return "paused";
    case PausableSandbox::State::kLost:
      return "lost";
  }
  return "running";
}

PausableSandbox::PausableSandbox(Backend& backend, SandboxSpec spec, std::unique_ptr<Sandbox> live,
                                 SnapshotStore* store, std::string owner, std::string session_id,
                                 nlohmann::json session_facts)
    : backend_(backend),
      spec_(std::move(spec)),
      store_(store),
      owner_(std::move(owner)),
      session_id_(std::move(session_id)),
      session_facts_(std::move(session_facts)),
      first_id_(live->id()),
      live_(std::move(live)) {}

PausableSandbox::PausableSandbox(Backend& backend, SandboxSpec spec, SnapshotRecord paused,
                                 SnapshotStore& store, std::string owner, std::string session_id,
                                 nlohmann::json session_facts)
    : backend_(backend),
      spec_(std::move(spec)),
      store_(&store),
      owner_(std::move(owner)),
      session_id_(std::move(session_id)),
      session_facts_(std::move(session_facts)),
      first_id_("paused:" + paused.id),
      snapshot_(std::move(paused)),
      state_(State::kPaused),
      snapshot_bytes_(snapshot_->bytes) {}

PausableSandbox::~PausableSandbox() {
  live_.reset();
  if (snapshot_ && !keep_snapshot_) store_->remove(snapshot_->id);
}

template <typename Call>
auto PausableSandbox::withLive(Call&& call) {
  for (;;) {
    {
      std::shared_lock lock(mutex_);
      if (live_) return call(*live_);
      if (lost_reason_) throw SandboxError(*lost_reason_);
    }
    resume();
  }
}

std::string PausableSandbox::status() {
  {
    std::shared_lock lock(mutex_);
    if (lost_reason_) return "gone";
    if (!live_) return "paused";
  }
  return withLive([](Sandbox& live) { return live.status(); });
}

bool PausableSandbox::alive() const noexcept {
  if (state_.load() == State::kLost) return false;
  // A pause or resume holds the lock alone for a moment: the sandbox is not lost meanwhile.
  std::shared_lock lock(mutex_, std::try_to_lock);
  if (!lock || !live_) return true;
  return live_->alive();
}

std::optional<std::string> PausableSandbox::stopReason() {
  std::shared_lock lock(mutex_);
  if (lost_reason_) return lost_reason_;
  if (!live_) return std::nullopt;
  return live_->stopReason();
}

ExecResult PausableSandbox::exec(const ExecRequest& request, CancelToken& cancel,
                                 const OutputCallback& on_output) {
  return withLive([&](Sandbox& live) { return live.exec(request, cancel, on_output); });
}

std::size_t PausableSandbox::writeFile(const std::string& path, std::string_view bytes, int mode) {
  return withLive([&](Sandbox& live) { return live.writeFile(path, bytes, mode); });
}

std::string PausableSandbox::readFile(const std::string& path, std::size_t max_bytes) {
  return withLive([&](Sandbox& live) { return live.readFile(path, max_bytes); });
}

FileRange PausableSandbox::readFileRange(const std::string& path, std::uint64_t offset,
                                         std::size_t length) {
  return withLive([&](Sandbox& live) { return live.readFileRange(path, offset, length); });
}

FileListing PausableSandbox::listFiles(const std::string& path) {
  return withLive([&](Sandbox& live) { return live.listFiles(path); });
}

common::UniqueFd PausableSandbox::openPort(std::uint16_t port) {
  return withLive([&](Sandbox& live) { return live.openPort(port); });
}

void PausableSandbox::checkpoint(const std::filesystem::path& dir) {
  withLive([&](Sandbox& live) { live.checkpoint(dir); });
}

bool PausableSandbox::freeze() {
  std::shared_lock lock(mutex_, std::try_to_lock);
  return lock.owns_lock() && live_ != nullptr && live_->freeze();
}

bool PausableSandbox::frozen() const noexcept {
  std::shared_lock lock(mutex_, std::try_to_lock);
  return lock.owns_lock() && live_ != nullptr && live_->frozen();
}

std::optional<Sandbox::Usage> PausableSandbox::usage() {
  std::shared_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || live_ == nullptr) return std::nullopt;
  return live_->usage();
}

bool PausableSandbox::pause() {
  if (store_ == nullptr) return false;
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock || !live_ || !live_->alive()) return false;
  const auto started = std::chrono::steady_clock::now();
  if (pause_failed_at_ && started - *pause_failed_at_ < kPauseRetry) return false;
  try {
    pauseLocked();
  } catch (const std::exception& e) {
    logger().info("session {}: not paused (tried again in {} s): {}", session_id_,
                  kPauseRetry.count(), e.what());
    pause_failed_at_ = started;
    return false;
  }
  pause_failed_at_.reset();
  return true;
}

void PausableSandbox::pauseLocked() {
  const auto started = std::chrono::steady_clock::now();
  auto facts = factsFor("pause", kSnapshotOfPause);
  auto draft = store_->begin();
  live_->checkpoint(draft.dir());
  snapshot_ = store_->seal(std::move(draft), std::move(facts));
  live_.reset();  // the container goes, and its memory with it
  snapshot_bytes_ = snapshot_->bytes;
  state_ = State::kPaused;
  logger().info("session {}: paused in {:.0f} ms ({:.1f} MB on disk)", session_id_,
                msSince(started), static_cast<double>(snapshot_->bytes) / 1e6);
}

bool PausableSandbox::persist() {
  if (store_ == nullptr) return false;
  std::unique_lock lock(mutex_, std::defer_lock);
  if (!lock.try_lock_for(kPersistWait)) {
    logger().warn(
        "session {}: not saved, so it ends with this server: a call still runs after {} s",
        session_id_, kPersistWait.count());
    return false;
  }
  if (lost_reason_) return false;
  if (live_) {
    if (!live_->alive()) return false;
    try {
      pauseLocked();
    } catch (const std::exception& e) {
      logger().warn("session {}: not saved, so it ends with this server: {}", session_id_,
                    e.what());
      return false;
    }
  }
  keep_snapshot_ = snapshot_.has_value();
  return keep_snapshot_;
}

std::optional<std::string> PausableSandbox::unusable(const SnapshotRecord& record) {
  const auto format = backend_.checkpointFormat(spec_.runtime);
  if (format.empty() || format != record.facts.runtime_version) {
    return "it was saved by " + record.facts.runtime_version + " and this engine has " +
           (format.empty() ? "no checkpoints" : format);
  }
  if (record.facts.owner != owner_) return "snapshot " + record.id + " belongs to another client";
  return std::nullopt;
}

std::unique_ptr<Sandbox> PausableSandbox::restoreFrom(const SnapshotRecord& record) {
  if (auto why = unusable(record)) throw SnapshotTamperedError(*why);
  // Exactly the image that ran (its id), not whatever its tag names now.
  SandboxSpec spec = spec_;
  if (!record.facts.image.empty()) spec.image = record.facts.image;
  const std::string id = record.id;
  return backend_.restore(
      spec, [this, &id](const std::filesystem::path& dir) { store_->copyVerified(id, dir); });
}

SnapshotFacts PausableSandbox::factsFor(const std::string& name, const char* kind) {
  SnapshotFacts facts;
  facts.owner = owner_;
  facts.session_id = session_id_;
  facts.name = name;
  facts.extra = {{"kind", kind}, {"session", session_facts_}};
  const auto image = backend_.inspectImage(spec_.image);
  if (!image || image->id.empty()) {
    throw SandboxError("the image " + spec_.image + " is no longer on the engine");
  }
  facts.image = image->id;
  facts.runtime_version = backend_.checkpointFormat(spec_.runtime);
  if (facts.runtime_version.empty()) {
    throw SandboxError("the engine does not say which runsc it runs (runsc --version failed)");
  }
  return facts;
}

SnapshotRecord PausableSandbox::snapshot(const std::string& name, const char* kind) {
  if (store_ == nullptr) throw SandboxError("snapshots are not available on this server");
  return withLive([&](Sandbox& live) {
    auto facts = factsFor(name, kind);
    auto draft = store_->begin();
    live.checkpoint(draft.dir());
    return store_->seal(std::move(draft), std::move(facts));
  });
}

void PausableSandbox::rollBack(const std::string& snapshot_id) {
  if (store_ == nullptr) throw SandboxError("snapshots are not available on this server");
  const auto record = store_->find(snapshot_id);
  if (!record) throw SandboxError("the snapshot is gone (expired, or removed with its client)");
  auto restored = restoreFrom(*record);
  std::unique_lock lock(mutex_);
  live_ = std::move(restored);  // the previous sandbox goes
  if (snapshot_) store_->remove(snapshot_->id);
  snapshot_.reset();
  snapshot_bytes_ = 0;
  lost_reason_.reset();
  state_ = State::kRunning;
  logger().info("session {}: rolled back to snapshot {}", session_id_, snapshot_id);
}

void PausableSandbox::resume() {
  std::unique_lock lock(mutex_);
  if (lost_reason_) throw SandboxError(*lost_reason_);
  if (live_ || !snapshot_) return;
  const auto started = std::chrono::steady_clock::now();
  try {
    live_ = restoreFrom(*snapshot_);
  } catch (const SnapshotTamperedError& e) {
    // The state can never come back: say so once, and let the id start fresh.
    lose(std::string("restoring its paused sandbox failed: ") + e.what());
    throw SandboxError(*lost_reason_);
  } catch (const std::exception& e) {
    // The engine failed (restarting, out of memory, ...): the state is kept for the next try.
    throw SandboxError(std::string("resuming the paused session failed: ") + e.what() +
                       ". Its state is kept on disk; retry the call in a moment");
  }
  store_->remove(snapshot_->id);
  snapshot_.reset();
  snapshot_bytes_ = 0;
  state_ = State::kRunning;
  logger().info("session {}: resumed in {:.0f} ms", session_id_, msSince(started));
}

void PausableSandbox::lose(std::string reason) {
  logger().warn("session {}: {}", session_id_, reason);
  lost_reason_ = std::move(reason);
  if (snapshot_) store_->remove(snapshot_->id);
  snapshot_.reset();
  snapshot_bytes_ = 0;
  state_ = State::kLost;
}

}  // namespace sandbox
