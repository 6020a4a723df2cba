#include "sandbox/snapshot_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>

#include "common/random_id.h"
#include "sandbox/file_digest.h"
#include "sandbox/log.h"

namespace sandbox {
namespace {

namespace fs = std::filesystem;

// NONBLOCK: opening a FIFO planted in place of a file must not hang.
constexpr int kOpenFile = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
constexpr int kOpenDirectory = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// Checked before an id from outside becomes part of a path: hex cannot traverse.
bool isId(std::string_view id) {
  return id.size() == SnapshotStore::kIdHexChars && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

[[noreturn]] void noSnapshot(const std::string& id) {
  throw SandboxError("there is no snapshot '" + id + "' on this server (a snapshot id is " +
                     std::to_string(SnapshotStore::kIdHexChars) +
                     " lowercase hex characters); list the snapshots to see which exist");
}

void lockRetrying(int fd, int operation) {
  while (::flock(fd, operation) != 0 && errno == EINTR) {
  }
}

bool isRegularFile(int fd, off_t* size = nullptr) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) return false;
  if (size != nullptr) *size = info.st_size;
  return true;
}

// mkdir 0700 when missing; refused when a symlink, another user's, or writable by others (someone
// could have pre-created it to read the snapshots or plant a key).
void ensurePrivateDirectory(const fs::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    throw SandboxError("cannot create the snapshot directory " + path.string() + ": " +
                       std::strerror(errno) + "; use a directory the server can write");
  }
  const std::string refusing = "refusing the snapshot directory " + path.string() + ": ";
  const std::string hint = " Remove it if you do not know who made it, or use another directory.";
  const common::UniqueFd fd(::open(path.c_str(), kOpenDirectory));
  struct stat info {};
  if (!fd || ::fstat(fd.get(), &info) != 0) {
    throw SandboxError(refusing + "it is a symbolic link or not a directory." + hint);
  }
  if (info.st_uid != ::geteuid()) {
    throw SandboxError(refusing + "it is owned by uid " + std::to_string(info.st_uid) +
                       ", not by this server's uid " + std::to_string(::geteuid()) + "." + hint);
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    throw SandboxError(refusing + "its mode " + mode +
                       " lets other users write into it (chmod 700 " + path.string() +
                       " if it is yours)." + hint);
  }
}

const std::string& checkedInstanceId(const std::string& instance_id) {
  if (instance_id.empty() || instance_id == "." || instance_id == ".." ||
      instance_id.find('/') != std::string::npos) {
    throw SandboxError("the instance id '" + instance_id +
                       "' cannot name a snapshot directory; use one without '/'");
  }
  return instance_id;
}

const fs::path& preparedRoot(const fs::path& root) {
  ensurePrivateDirectory(root);
  return root;
}

struct CloseDirectory {
  void operator()(DIR* stream) const noexcept { ::closedir(stream); }
};

// The names in an open directory, sorted, without "." and "..".
std::vector<std::string> entryNames(int dir_fd, const fs::path& dir) {
  const int copy = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  std::unique_ptr<DIR, CloseDirectory> stream(copy < 0 ? nullptr : ::fdopendir(copy));
  if (!stream) {
    if (copy >= 0) ::close(copy);
    throw SandboxError("cannot list " + dir.string() + ": " + std::strerror(errno));
  }
  ::rewinddir(stream.get());  // the copy shares its offset with dir_fd: start at the beginning
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(stream.get())) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  if (errno != 0) throw SandboxError("cannot list " + dir.string() + ": " + std::strerror(errno));
  std::sort(names.begin(), names.end());
  return names;
}

// The snapshot's directory, opened; invalid when there is none.
common::UniqueFd openSnapshotDirectory(const fs::path& dir, const std::string& id) {
  common::UniqueFd fd(::open(dir.c_str(), kOpenDirectory));
  if (!fd && errno != ENOENT) {
    if (errno == ELOOP || errno == ENOTDIR) {
      refuseSnapshot(id, "its directory is not a plain directory");
    }
    throw SandboxError("cannot open " + dir.string() + ": " + std::strerror(errno));
  }
  return fd;
}

std::optional<SnapshotManifest> loadManifest(int dir_fd, const fs::path& dir, const std::string& id,
                                             const SnapshotKey& key,
                                             const std::string& instance_id) {
  auto manifest = readSnapshotManifest(dir_fd, id, key, instance_id);
  if (manifest) manifest->record.dir = dir;
  return manifest;
}

// Every file of a fresh checkpoint, hashed; anything runsc would not write refuses the seal.
std::vector<SnapshotFile> hashDraftFiles(int dir_fd, const fs::path& dir) {
  std::vector<SnapshotFile> files;
  for (const auto& name : entryNames(dir_fd, dir)) {
    const auto refuseSeal = [&dir, &name](const std::string& why) {
      throw SandboxError("cannot seal the checkpoint in " + dir.string() + ": " + name + " " + why +
                         "; runsc writes only regular files, so the checkpoint was discarded");
    };
    if (!isSnapshotFileName(name)) refuseSeal("is not a plain file name");
    const common::UniqueFd fd(::openat(dir_fd, name.c_str(), kOpenFile));
    if (!fd) refuseSeal(errno == ELOOP ? "is a symbolic link" : std::strerror(errno));
    if (!isRegularFile(fd.get())) refuseSeal("is not a regular file");
    auto digest = digestFile(fd.get(), (dir / name).string());
    files.push_back({name, digest.size, std::move(digest.sha256)});
  }
  if (files.empty()) {
    throw SandboxError("cannot seal the checkpoint in " + dir.string() +
                       ": runsc wrote no files there, so the checkpoint failed");
  }
  return files;
}

void requireOnlyListedFiles(int dir_fd, const SnapshotManifest& manifest) {
  const std::string& id = manifest.record.id;
  for (const auto& name : entryNames(dir_fd, manifest.record.dir)) {
    const bool listed =
        std::any_of(manifest.files.begin(), manifest.files.end(),
                    [&name](const SnapshotFile& file) { return file.name == name; });
    if (!listed && name != kManifestFileName) {
      refuseSnapshot(id, "it holds '" + name + "', which is not sealed");
    }
  }
}

// Copies verified files into `dest`; unless kept, removes what it copied (and `dest` if it made
// it) when it goes away.
class VerifiedCopy {
 public:
  VerifiedCopy(fs::path dest, std::string id) : dest_(std::move(dest)), id_(std::move(id)) {
    std::error_code ec;
    if (dest_.has_parent_path()) fs::create_directories(dest_.parent_path(), ec);
    made_ = ::mkdir(dest_.c_str(), 0700) == 0;
    if (!made_ && errno != EEXIST) fail("cannot create it", errno);
    dir_.reset(::open(dest_.c_str(), kOpenDirectory));
    if (!dir_) {
      const int error = errno;
      if (made_) ::rmdir(dest_.c_str());
      fail("cannot open it", error);
    }
  }
  ~VerifiedCopy() {
    if (kept_) return;
    for (const auto& name : copied_) ::unlinkat(dir_.get(), name.c_str(), 0);
    if (made_) ::rmdir(dest_.c_str());
  }
  VerifiedCopy(const VerifiedCopy&) = delete;
  VerifiedCopy& operator=(const VerifiedCopy&) = delete;

  void copy(int from_dir, const SnapshotFile& file) {
    const common::UniqueFd from(::openat(from_dir, file.name.c_str(), kOpenFile));
    if (!from) {
      if (errno == ENOENT) refuseSnapshot(id_, file.name + " is missing");
      if (errno == ELOOP) refuseSnapshot(id_, file.name + " is a symbolic link");
      throw SandboxError("cannot open " + file.name + " of snapshot " + id_ + ": " +
                         std::strerror(errno));
    }
    off_t size = 0;
    if (!isRegularFile(from.get(), &size))
      refuseSnapshot(id_, file.name + " is not a regular file");
    if (static_cast<std::uint64_t>(size) != file.size) {
      refuseSnapshot(id_, file.name + " holds " + std::to_string(size) + " bytes, not the " +
                              std::to_string(file.size) + " it was sealed with");
    }
    const common::UniqueFd to(::openat(dir_.get(), file.name.c_str(),
                                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!to) fail("cannot create " + file.name + " in it", errno);
    copied_.push_back(file.name);
    const auto digest =
        copyWithDigest(from.get(), to.get(), file.size, file.name + " of snapshot " + id_);
    if (digest.size != file.size)
      refuseSnapshot(id_, file.name + " changed size while it was copied");
    if (digest.sha256 != file.sha256) {
      refuseSnapshot(id_, file.name + " does not match the SHA-256 it was sealed with");
    }
  }

  void keep() noexcept { kept_ = true; }

 private:
  [[noreturn]] void fail(const std::string& what, int error) const {
    throw SandboxError("cannot restore snapshot " + id_ + " into " + dest_.string() + ": " + what +
                       ": " + std::strerror(error));
  }

  fs::path dest_;
  std::string id_;
  common::UniqueFd dir_;
  bool made_ = false;
  bool kept_ = false;
  std::vector<std::string> copied_;
};

}  // namespace

namespace {

// flock(LOCK_EX | LOCK_NB) on the lock file at `path` (made when `create`); an invalid fd when
// another process holds it or it is missing.
common::UniqueFd lockInstance(const fs::path& path, bool create = true) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    common::UniqueFd fd(
        ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600));
    if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return {};
    // A file unlinked (by a store ending, or a sweep) between open and flock locks nothing that
    // others see: lock the file at the path, or try again.
    struct stat held {};
    struct stat named {};
    if (::fstat(fd.get(), &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      return fd;
    }
    if (!create) return {};
  }
  return {};
}

// Whether `dir` holds nothing but snapshot directories (32 hex digits): a store's instance
// directory, not something else under a misconfigured snapshot_dir.
bool holdsOnlySnapshots(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool snapshot_like = name.size() == SnapshotStore::kIdHexChars &&
                               name.find_first_not_of("0123456789abcdef") == std::string::npos &&
                               entry.is_directory(ec) && !entry.is_symlink(ec);
    if (!snapshot_like) return false;
  }
  return !ec;
}

// When anything in the instance directory `dir` last changed (its snapshots' directories);
// nullopt when it cannot be read.
std::optional<std::int64_t> newestChange(const fs::path& dir) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) return std::nullopt;
  auto newest = static_cast<std::int64_t>(info.st_mtime);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (::lstat(entry.path().c_str(), &info) == 0) {
      newest = std::max(newest, static_cast<std::int64_t>(info.st_mtime));
    }
  }
  return newest;
}

}  // namespace

SnapshotStore::SnapshotStore(const fs::path& root, std::string instance_id, Clock now)
    : root_(root),
      instance_dir_(root / checkedInstanceId(instance_id)),
      instance_id_(std::move(instance_id)),
      key_(SnapshotKey::loadOrCreate(preparedRoot(root) / ".key")),
      now_(std::move(now)) {
  instance_lock_ = lockInstance(root_ / ("." + instance_id_ + ".lock"));
  if (!instance_lock_) {
    throw SandboxError("another live server holds the snapshots of instance '" + instance_id_ +
                       "' (" + root_.string() + "/." + instance_id_ +
                       ".lock); give each server its own instance_id");
  }
  // Made by the first begin(): a server that never pauses a session leaves no directory.
  std::error_code ec;
  if (fs::exists(instance_dir_, ec)) ensurePrivateDirectory(instance_dir_);
}

SnapshotStore::~SnapshotStore() {
  // An instance id is often random (a stdio server per client session): its directory goes when
  // it holds nothing, so that server starts do not pile up empty directories.
  if (::rmdir(instance_dir_.c_str()) == 0 || errno == ENOENT) {
    // Nothing to come back for: a mark for a restart would only be litter.
    ::unlink((root_ / ("." + instance_id_ + ".persist")).c_str());
    ::unlink((root_ / ("." + instance_id_ + ".lock")).c_str());
  }
}

void SnapshotStore::keepForRestart(bool keep) {
  const auto mark = root_ / ("." + instance_id_ + ".persist");
  if (!keep) {
    ::unlink(mark.c_str());
    return;
  }
  const common::UniqueFd fd(
      ::open(mark.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) logger().warn("cannot mark {} for a restart: {}", mark.string(), std::strerror(errno));
}

int SnapshotStore::removeAbandoned(std::chrono::seconds kept_for) {
  int removed = 0;
  const std::int64_t now = nowUnix();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.front() == '.' || name == instance_id_ || !entry.is_directory(ec) ||
        entry.is_symlink(ec) || !holdsOnlySnapshots(entry.path())) {
      continue;  // not a store's instance directory: never touched
    }
    // Only an instance whose server made a lock file, and does not hold it now (it ended).
    const auto lock_path = root_ / ("." + name + ".lock");
    const auto lock = lockInstance(lock_path, /*create=*/false);
    if (!lock) continue;
    // A server with sessions.persist comes back for its snapshots within their time to live.
    const auto mark = root_ / ("." + name + ".persist");
    const bool kept = ::access(mark.c_str(), F_OK) == 0;
    if (const auto changed = newestChange(entry.path());
        kept && changed && now - *changed <= kept_for.count()) {
      continue;
    }
    fs::remove_all(entry.path(), ec);
    if (ec) {
      logger().warn("could not remove the abandoned snapshots {}: {}", entry.path().string(),
                    ec.message());
      continue;
    }
    ::unlink(lock_path.c_str());
    ::unlink(mark.c_str());
    ++removed;
  }
  return removed;
}

SnapshotStore::Draft::Draft(std::string id, fs::path dir, common::UniqueFd lock) noexcept
    : id_(std::move(id)), dir_(std::move(dir)), lock_(std::move(lock)) {}

SnapshotStore::Draft::Draft(Draft&& other) noexcept
    : id_(std::move(other.id_)),
      dir_(std::exchange(other.dir_, {})),
      lock_(std::move(other.lock_)) {}

SnapshotStore::Draft& SnapshotStore::Draft::operator=(Draft&& other) noexcept {
  if (this != &other) {
    discard();
    id_ = std::move(other.id_);
    dir_ = std::exchange(other.dir_, {});
    lock_ = std::move(other.lock_);
  }
  return *this;
}

SnapshotStore::Draft::~Draft() { discard(); }

void SnapshotStore::Draft::discard() noexcept {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (ec)
    logger().warn("could not remove the unsealed checkpoint {}: {}", dir_.string(), ec.message());
  dir_.clear();
  lock_.reset();
}

SnapshotStore::Draft SnapshotStore::begin() {
  ensurePrivateDirectory(instance_dir_);
  std::string id = common::randomHex(kIdHexChars / 2);
  fs::path dir = dirOf(id);
  if (::mkdir(dir.c_str(), 0700) != 0) {
    throw SandboxError("cannot create " + dir.string() + " for a checkpoint: " +
                       std::strerror(errno) + "; the snapshot directory must be writable");
  }
  common::UniqueFd lock(::open(dir.c_str(), kOpenDirectory));
  if (!lock) {
    throw SandboxError("cannot open " + dir.string() + ": " + std::strerror(errno));
  }
  lockRetrying(lock.get(), LOCK_SH);
  return {std::move(id), std::move(dir), std::move(lock)};
}

SnapshotRecord SnapshotStore::seal(Draft draft, SnapshotFacts facts) {
  if (draft.dir_.empty() || draft.dir_ != dirOf(draft.id_)) {
    throw SandboxError("cannot seal: the draft was already sealed or belongs to another store");
  }
  SnapshotManifest manifest;
  manifest.files = hashDraftFiles(draft.lock_.get(), draft.dir_);
  SnapshotRecord& record = manifest.record;
  record.id = draft.id_;
  record.facts = std::move(facts);
  record.instance_id = instance_id_;
  record.created_unix = nowUnix();
  for (const auto& file : manifest.files) record.bytes += file.size;
  record.dir = draft.dir_;
  writeSnapshotManifest(draft.lock_.get(), manifest, key_);
  draft.dir_.clear();  // sealed: the draft no longer removes it
  return record;
}

SnapshotRecord SnapshotStore::copyVerified(const std::string& id, const fs::path& dest) {
  if (!isId(id)) noSnapshot(id);
  const fs::path dir = dirOf(id);
  const common::UniqueFd dir_fd = openSnapshotDirectory(dir, id);
  if (!dir_fd) noSnapshot(id);
  lockRetrying(dir_fd.get(), LOCK_SH);  // a removal waits until the copy is done
  const auto manifest = loadManifest(dir_fd.get(), dir, id, key_, instance_id_);
  if (!manifest) noSnapshot(id);
  requireOnlyListedFiles(dir_fd.get(), *manifest);
  VerifiedCopy copy(dest, id);
  for (const auto& file : manifest->files) copy.copy(dir_fd.get(), file);
  copy.keep();
  return manifest->record;
}

std::optional<SnapshotRecord> SnapshotStore::find(const std::string& id) {
  if (!isId(id)) return std::nullopt;
  const fs::path dir = dirOf(id);
  const common::UniqueFd dir_fd = openSnapshotDirectory(dir, id);
  if (!dir_fd) return std::nullopt;
  auto manifest = loadManifest(dir_fd.get(), dir, id, key_, instance_id_);
  if (!manifest) return std::nullopt;
  return std::move(manifest->record);
}

std::vector<SnapshotRecord> SnapshotStore::list() {
  std::vector<SnapshotRecord> records;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(instance_dir_, ec)) {
    const std::string id = entry.path().filename().string();
    if (!isId(id)) continue;
    try {
      if (auto record = find(id)) records.push_back(std::move(*record));
    } catch (const SandboxError& e) {
      logger().warn("skipping snapshot {}: {}", id, e.what());
    }
  }
  std::sort(records.begin(), records.end(), [](const SnapshotRecord& a, const SnapshotRecord& b) {
    return std::tie(a.created_unix, a.id) < std::tie(b.created_unix, b.id);
  });
  return records;
}

void SnapshotStore::remove(const std::string& id) noexcept {
  try {
    if (!isId(id)) return;
    const fs::path dir = dirOf(id);
    const common::UniqueFd dir_fd(::open(dir.c_str(), kOpenDirectory));
    if (dir_fd) lockRetrying(dir_fd.get(), LOCK_EX);  // running copies finish first
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (ec) logger().warn("could not remove snapshot {}: {}", id, ec.message());
  } catch (const std::exception& e) {
    logger().warn("could not remove snapshot {}: {}", id, e.what());
  }
}

int SnapshotStore::removeOlderThan(std::chrono::seconds age) {
  const std::int64_t now = nowUnix();
  return removeIf("older than " + std::to_string(age.count()) + " s",
                  [&](std::optional<std::int64_t> sealed_at, std::int64_t changed_at) {
                    return now - sealed_at.value_or(changed_at) > age.count();
                  });
}

int SnapshotStore::removeUnsealed() {
  return removeIf("not sealed (a checkpoint cut short, or a manifest that fails its check)",
                  [](std::optional<std::int64_t> sealed_at, std::int64_t) { return !sealed_at; });
}

int SnapshotStore::removeIf(
    const std::string& why,
    const std::function<bool(std::optional<std::int64_t>, std::int64_t)>& doomed) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(instance_dir_, ec)) {
    const std::string id = entry.path().filename().string();
    if (!isId(id)) continue;
    const common::UniqueFd dir_fd(::open(entry.path().c_str(), kOpenDirectory));
    if (!dir_fd || ::flock(dir_fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // in use
    std::optional<std::int64_t> sealed_at;
    try {
      const auto manifest = loadManifest(dir_fd.get(), entry.path(), id, key_, instance_id_);
      if (manifest) sealed_at = manifest->record.created_unix;
    } catch (const SnapshotTamperedError&) {
      // Fails its check: not sealed; the age of its directory decides, as for a crash's draft.
    } catch (const SandboxError& e) {
      logger().warn("snapshot {} left alone: its manifest cannot be read now: {}", id, e.what());
      continue;  // e.g. out of descriptors: a good snapshot must not be lost to that
    }
    struct stat info {};
    if (::fstat(dir_fd.get(), &info) != 0) continue;
    if (!doomed(sealed_at, static_cast<std::int64_t>(info.st_mtime))) continue;
    std::error_code remove_ec;
    fs::remove_all(entry.path(), remove_ec);
    if (remove_ec) {
      logger().warn("could not remove snapshot {}: {}", id, remove_ec.message());
    } else {
      logger().info("removed snapshot {}: {}", id, why);
      ++removed;
    }
  }
  return removed;
}

std::uint64_t SnapshotStore::totalBytes(const std::string& owner) {
  std::uint64_t total = 0;
  for (const auto& record : list()) {
    if (record.facts.owner == owner) total += record.bytes;
  }
  return total;
}

fs::path SnapshotStore::dirOf(const std::string& id) const { return instance_dir_ / id; }

std::int64_t SnapshotStore::nowUnix() const {
  return std::chrono::duration_cast<std::chrono::seconds>(now_().time_since_epoch()).count();
}

}  // namespace sandbox
