// Sealed checkpoint images of sandboxes. `runsc checkpoint --image-path DIR` writes a sandbox's
// state (checkpoint.img, pages.img, pages_meta.img: tens of MB) into a Draft's directory; seal()
// records each file's size and SHA-256 with the snapshot's facts in manifest.json, authenticated
// with HMAC-SHA256 (sandbox/snapshot_key.h). A restore copies the image into the engine's
// directory for the new container with copyVerified(), which hashes while it copies and keeps
// nothing unless every file matches: a tampered image is attacker-chosen Sentry state.
// Layout: <root>/.key (0600), <root>/<instance_id>/<id>/{manifest.json, image files} (0700).
// Thread-safe: nothing is shared but the filesystem. Different snapshots may be sealed, copied and
// removed at once; a copy holds flock(LOCK_SH) on its snapshot's directory, so a removal waits
// for it and removeOlderThan skips it (and any draft still being written).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "sandbox/snapshot_key.h"
#include "sandbox/snapshot_manifest.h"

namespace sandbox {

class SnapshotStore {
 public:
  static constexpr std::size_t kIdHexChars = 32;
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  // Creates `root` (e.g. /var/lib/sandbox-mcp/snapshots) 0700 when missing (<root>/<instance_id>
  // at the first begin()), and loads or makes the key <root>/.key (SnapshotKey::loadOrCreate).
  // Refuses (SandboxError saying what to fix) an instance id that is not a plain file name, and a
  // root or instance directory that is a symbolic link, owned by another user, or writable by
  // others.
  SnapshotStore(const std::filesystem::path& root, std::string instance_id,
                Clock now = std::chrono::system_clock::now);
  ~SnapshotStore();  // removes the instance's directory when it is empty
  SnapshotStore(const SnapshotStore&) = delete;
  SnapshotStore& operator=(const SnapshotStore&) = delete;

  // A fresh, empty directory (0700) for runsc to write a checkpoint into. Removed with its
  // contents when it goes away unless seal() took it. Move-only; not thread-safe.
  class Draft {
   public:
    Draft(Draft&& other) noexcept;
    Draft& operator=(Draft&& other) noexcept;
    Draft(const Draft&) = delete;
    Draft& operator=(const Draft&) = delete;
    ~Draft();

    [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }

   private:
    friend class SnapshotStore;
    Draft(std::string id, std::filesystem::path dir, common::UniqueFd lock) noexcept;
    void discard() noexcept;

    std::string id_;
    std::filesystem::path dir_;  // empty once sealed or moved from
    common::UniqueFd lock_;      // flock(LOCK_SH) on dir_: the age sweep leaves it alone
  };

  [[nodiscard]] Draft begin();

  // Hashes every file in the draft's directory and writes manifest.json (0600) with its HMAC;
  // returns the record. Refuses (SandboxError; the draft is removed) a directory that holds no
  // file, or anything but regular files with plain names (a subdirectory, a symbolic link).
  SnapshotRecord seal(Draft draft, SnapshotFacts facts);

  // Authenticates the manifest, checks that it is this instance's snapshot `id`, then copies each
  // file it lists into `dest` (created 0700 when missing; files 0600), hashing while copying. A
  // wrong size or hash, a missing, unlisted or non-regular file, a file name that is not plain,
  // or a manifest of another snapshot or instance: removes what it copied (and `dest`, when it
  // made it) and throws SnapshotTamperedError naming the file. An id that is not kIdHexChars
  // lowercase hex, or no sealed snapshot `id`: SandboxError, before anything is touched.
  // Whose snapshot it is, and the runtime it needs, are the caller's to check on the record.
  SnapshotRecord copyVerified(const std::string& id, const std::filesystem::path& dest);

  // The snapshot's authenticated manifest (its files are not read); nullopt when there is no
  // sealed snapshot `id` (or `id` is not an id). Throws SnapshotTamperedError when the manifest
  // fails its check.
  [[nodiscard]] std::optional<SnapshotRecord> find(const std::string& id);

  // This instance's sealed snapshots, oldest first; ones whose manifest fails are logged and
  // skipped.
  [[nodiscard]] std::vector<SnapshotRecord> list();

  // Removes the snapshot `id` once no copy of it is running (waits for them; and for a live
  // Draft's directory, for the Draft to go); no-op for an unknown or invalid id.
  void remove(const std::string& id) noexcept;

  // Removes this instance's snapshots sealed more than `age` ago, and leftover drafts and
  // unreadable snapshots whose directory has not changed for `age`; skips ones being copied or
  // written. Returns how many it removed.
  int removeOlderThan(std::chrono::seconds age);
  // Removes this instance's directories that hold no sealed snapshot (drafts a crash left,
  // manifests that fail their check), whatever their age; skips ones being copied or written.
  int removeUnsealed();

  // The image bytes of `owner`'s sealed snapshots together: for quotas.
  [[nodiscard]] std::uint64_t totalBytes(const std::string& owner);

  // Marks this instance's snapshots as ones its server comes back for after a stop
  // (sessions.persist: <root>/.<instance_id>.persist), or removes the mark.
  void keepForRestart(bool keep);

  // Removes the directories of other instances that no live store holds (a server that crashed,
  // often under a random instance id): each store holds <root>/.<instance_id>.lock (flock) for
  // its life. An instance marked keepForRestart() is left alone until nothing in it changed for
  // `kept_for`. Returns how many directories it removed.
  int removeAbandoned(std::chrono::seconds kept_for = std::chrono::seconds(0));

 private:
  // Removes each of this instance's snapshot directories for which `doomed(sealed_at,
  // changed_at)` holds (sealed_at: nullopt when not sealed), logging `why`.
  int removeIf(const std::string& why,
               const std::function<bool(std::optional<std::int64_t>, std::int64_t)>& doomed);
  [[nodiscard]] std::filesystem::path dirOf(const std::string& id) const;
  [[nodiscard]] std::int64_t nowUnix() const;

  std::filesystem::path root_;
  std::filesystem::path instance_dir_;
  std::string instance_id_;
  common::UniqueFd instance_lock_;  // flock(LOCK_EX) on <root>/.<instance_id>.lock
  SnapshotKey key_;
  Clock now_;
};

}  // namespace sandbox
