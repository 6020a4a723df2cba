// A session's sandbox that can be paused: its whole state checkpointed into the snapshot store and
// its container removed, so that an idle session holds disk instead of memory. The next call
// resumes it first: a new sandbox restored from the verified snapshot carries on with the same
// variables, open files, tmpfs files and processes. A restore that fails leaves the sandbox lost
// (alive() false, stopReason() says why), never silently empty. Engine-neutral: it needs only
// Sandbox::checkpoint and Backend::restore.
// Thread-safe. Calls run on the live sandbox under a shared lock; pause() takes the lock alone
// and gives up at once when a call holds it, so a busy sandbox is never paused.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <shared_mutex>
#include <string>

#include "sandbox/backend.h"
#include "sandbox/snapshot_store.h"

namespace sandbox {

// What a snapshot is for, in its manifest's extra["kind"]: a server started again with
// sessions.persist brings back "paused" ones as sessions and "named" ones as snapshots.
inline constexpr const char* kSnapshotOfPause = "paused";
inline constexpr const char* kSnapshotNamed = "named";
inline constexpr const char* kSnapshotForFork = "fork";  // taken for one fork_session, then gone

class PausableSandbox final : public Sandbox {
 public:
  enum class State { kRunning, kPaused, kLost };

  // `store` null: never paused (a passthrough). `owner`, `session_id` and `session_facts` (what
  // a later server needs to bring the session back) go into each snapshot's manifest.
  PausableSandbox(Backend& backend, SandboxSpec spec, std::unique_ptr<Sandbox> live,
                  SnapshotStore* store, std::string owner, std::string session_id,
                  nlohmann::json session_facts = nlohmann::json::object());
  // A sandbox paused in the store's sealed snapshot `paused` (by an earlier run of this server);
  // its first call restores it onto `spec`.
  PausableSandbox(Backend& backend, SandboxSpec spec, SnapshotRecord paused, SnapshotStore& store,
                  std::string owner, std::string session_id, nlohmann::json session_facts);
  ~PausableSandbox() override;  // removes the live sandbox and a pause's snapshot
  PausableSandbox(const PausableSandbox&) = delete;
  PausableSandbox& operator=(const PausableSandbox&) = delete;

  [[nodiscard]] const std::string& id() const noexcept override { return first_id_; }
  [[nodiscard]] const std::string& runtime() const noexcept override { return spec_.runtime; }
  [[nodiscard]] const std::string& image() const noexcept override { return spec_.image; }
  // "paused" while paused; else the live sandbox's.
  [[nodiscard]] std::string status() override;
  // A paused sandbox is alive: its next call resumes it.
  [[nodiscard]] bool alive() const noexcept override;
  [[nodiscard]] std::optional<std::string> stopReason() override;

  ExecResult exec(const ExecRequest& request, CancelToken& cancel,
                  const OutputCallback& on_output) override;
  std::size_t writeFile(const std::string& path, std::string_view bytes, int mode) override;
  std::string readFile(const std::string& path, std::size_t max_bytes) override;
  FileRange readFileRange(const std::string& path, std::uint64_t offset,
                          std::size_t length) override;
  FileListing listFiles(const std::string& path) override;
  common::UniqueFd openPort(std::uint16_t port) override;
  void checkpoint(const std::filesystem::path& dir) override;
  // The live sandbox's; false, not frozen and unknown while paused (or busy pausing).
  bool freeze() override;
  [[nodiscard]] bool frozen() const noexcept override;
  [[nodiscard]] std::optional<Usage> usage() override;

  // Whether pause() can ever succeed here (a store, and a backend with checkpoints).
  [[nodiscard]] bool pausable() const noexcept { return store_ != nullptr; }
  // Checkpoints the sandbox into the store, seals the snapshot and removes the container. False,
  // and nothing changes, when a call is running, the sandbox is not running, or the checkpoint
  // fails (logged: e.g. code holds a connection to a host socket); after a failure it is not
  // tried again for kPauseRetry (each try costs a checkpoint).
  bool pause();
  inline static constexpr std::chrono::seconds kPauseRetry{120};
  // Restores a paused sandbox (nothing to do when it runs). Throws SandboxError when the restore
  // fails: when the snapshot can never be restored (tampered with, another runsc) the sandbox is
  // lost (state() kLost, its snapshot removed); when the engine failed it stays paused for a retry.
  void resume();

  // For a server that stops and comes back (sessions.persist): pauses a running sandbox (waiting
  // for a call still running), and keeps the pause's snapshot when this goes. False when there
  // is nothing to keep (no store, lost, the checkpoint failed: logged).
  bool persist();
  inline static constexpr std::chrono::seconds kPersistWait{5};  // for a call still running

  // Replaces the sandbox with one restored from the store's snapshot `snapshot_id` (which stays):
  // the current state goes. Throws SandboxError when that fails; the sandbox runs on unchanged.
  void rollBack(const std::string& snapshot_id);
  // Checkpoints the running sandbox into a sealed snapshot of the store named `name` of `kind`
  // (kSnapshotNamed, kSnapshotForFork; the sandbox goes on). Throws SandboxError when it cannot
  // (busy, a host socket, no store).
  SnapshotRecord snapshot(const std::string& name, const char* kind = kSnapshotNamed);

  [[nodiscard]] State state() const noexcept { return state_.load(); }
  // Bytes of the pause's snapshot on disk; 0 while running.
  [[nodiscard]] std::uint64_t snapshotBytes() const noexcept { return snapshot_bytes_.load(); }

 private:
  // Runs `call` on the live sandbox, resuming it first when paused.
  template <typename Call>
  auto withLive(Call&& call);
  void lose(std::string reason);  // unique lock held
  // Why `record` can never be restored here (another runsc, another client); nullopt: it can.
  std::optional<std::string> unusable(const SnapshotRecord& record);
  // A sandbox restored from `record` onto the image it ran (by id). Throws SnapshotTamperedError
  // when it can never be (unusable(), a file that fails its check), SandboxError otherwise.
  std::unique_ptr<Sandbox> restoreFrom(const SnapshotRecord& record);
  // The manifest's facts for a snapshot named `name` of `kind`: the image's id, the runsc
  // version, the session's facts. Throws SandboxError when either is unknown (nothing could
  // restore it).
  SnapshotFacts factsFor(const std::string& name, const char* kind);
  // Checkpoints the live sandbox into the sealed pause snapshot and removes it; unique lock held.
  void pauseLocked();

  Backend& backend_;
  const SandboxSpec spec_;
  SnapshotStore* const store_;
  const std::string owner_;
  const std::string session_id_;
  const nlohmann::json session_facts_;
  const std::string first_id_;

  mutable std::shared_timed_mutex mutex_;   // guards everything below but the atomics
  std::unique_ptr<Sandbox> live_;           // null while paused or lost
  std::optional<SnapshotRecord> snapshot_;  // the pause's, while paused
  std::optional<std::string> lost_reason_;
  std::atomic<State> state_{State::kRunning};
  std::optional<std::chrono::steady_clock::time_point> pause_failed_at_;  // mutex_ held
  std::atomic<std::uint64_t> snapshot_bytes_{0};
  bool keep_snapshot_ = false;  // persist(): the pause's snapshot outlives this; mutex_ held
};

[[nodiscard]] std::string_view toString(PausableSandbox::State state) noexcept;

}  // namespace sandbox
