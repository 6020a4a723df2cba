#include "sandbox/runtime_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/random_id.h"
#include "common/unique_fd.h"
#include "sandbox/backend.h"
#include "sandbox/log.h"

namespace sandbox {
namespace {

namespace fs = std::filesystem;

constexpr const char* kOwnerFile = "owner.json";
constexpr std::string_view kLockSuffix = ".lock";

void makeDirectory(const std::string& path, fs::perms mode) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) {
    throw SandboxError("cannot create " + path + ": " + ec.message() +
                       "; set mcp.runtime_dir to a directory the server can write");
  }
  fs::permissions(path, mode, ec);
}

// "uid:gid" -> numbers; nullopt when not numeric.
std::optional<std::pair<uid_t, gid_t>> parseOwner(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  try {
    return std::make_pair(static_cast<uid_t>(std::stoul(text.substr(0, colon))),
                          static_cast<gid_t>(std::stoul(text.substr(colon + 1))));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string fixHint(const std::string& root) {
  return " Remove it (rm -rf " + root +
         ") if you do not know who made it, or set mcp.runtime_dir to a directory only this "
         "server's user can write.";
}

// The root holds every session's sidecar socket and policy: another user who owns it, or can
// write into it, or points it elsewhere with a symlink (pre-created in /tmp before we start)
// could swap sockets or read audit logs. So: mkdir 0700, then lstat (no symlink), open it
// O_NOFOLLOW and fstat the opened directory (the same inode, ours, not group/world-writable).
void ensurePrivateRoot(const std::string& root) {
  std::error_code ec;
  const fs::path parent = fs::path(root).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST) {
    throw SandboxError("cannot create the run-time directory " + root + ": " +
                       std::strerror(errno) +
                       "; set mcp.runtime_dir to a directory the server can write");
  }
  struct stat link_info {};
  if (::lstat(root.c_str(), &link_info) != 0) {
    throw SandboxError("cannot stat the run-time directory " + root + ": " + std::strerror(errno));
  }
  if (S_ISLNK(link_info.st_mode)) {
    throw SandboxError("refusing the run-time directory " + root +
                       ": it is a symbolic link, so someone else decides where the server's "
                       "sockets go." +
                       fixHint(root));
  }
  const common::UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat info {};
  if (!fd || ::fstat(fd.get(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    throw SandboxError("refusing the run-time directory " + root + ": it is not a directory." +
                       fixHint(root));
  }
  if (info.st_dev != link_info.st_dev || info.st_ino != link_info.st_ino) {
    throw SandboxError("refusing the run-time directory " + root +
                       ": it was replaced while the server checked it." + fixHint(root));
  }
  if (info.st_uid != ::geteuid()) {
    throw SandboxError("refusing the run-time directory " + root + ": it is owned by uid " +
                       std::to_string(info.st_uid) + ", not by this server's uid " +
                       std::to_string(::geteuid()) + "." + fixHint(root));
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    throw SandboxError("refusing the run-time directory " + root + ": its mode " + mode +
                       " lets other users write into it (chmod 700 " + root + " if it is yours)." +
                       fixHint(root));
  }
}

std::int64_t modifiedUnix(const fs::path& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? static_cast<std::int64_t>(info.st_mtime) : 0;
}

// A run-time directory as the ownership rule sees it: a directory never runs, so only its
// owner (owner.json, the labels of its server) and its age count. The age is owner.json's, which
// its live server touches every RuntimeDir::kHeartbeat.
docker::ContainerSummary summarizeDirectory(const fs::path& path) {
  docker::ContainerSummary summary;
  summary.id = path.string();
  summary.state = "exited";
  const std::int64_t heartbeat = modifiedUnix(path / kOwnerFile);
  summary.created_unix = heartbeat != 0 ? heartbeat : modifiedUnix(path);
  try {
    std::ifstream in(path / kOwnerFile);
    summary.labels = nlohmann::json::parse(in).get<std::map<std::string, std::string>>();
  } catch (const std::exception&) {
    // No readable owner: only the age rule can remove it.
  }
  return summary;
}

// The instance id's lock: an exclusive, non-blocking flock on `path`, created if missing. A lock
// file unlinked by a sweep between our open and our flock is retried, so the lock always lives
// on the file the path names.
common::UniqueFd lockInstance(const std::string& path, const std::string& instance_id) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    common::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) {
      throw SandboxError("cannot open the instance lock " + path + ": " + std::strerror(errno) +
                         "; set mcp.runtime_dir to a directory the server can write");
    }
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) {
        throw SandboxError("cannot start as instance '" + instance_id +
                           "': another live server on this host holds it (" + path +
                           "); give each server its own instance_id");
      }
      throw SandboxError("cannot lock " + path + ": " + std::strerror(errno));
    }
    struct stat held {};
    struct stat named {};
    if (::fstat(fd.get(), &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      return fd;
    }
  }
  throw SandboxError("cannot lock " + path + ": it keeps being replaced");
}

// Lock files of instance ids nobody holds (a server that crashed): removed while held.
int removeUnheldLocks(const std::string& root) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file(ec) || !name.ends_with(kLockSuffix)) continue;
    const common::UniqueFd fd(
        ::open(entry.path().c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // held: a live server's
    if (::unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

// Two live servers given one instance id would share (and delete) one directory and reap each
// other's sandboxes: the second one refuses to start.
void refuseLiveDuplicate(const std::string& path, const std::string& instance_id) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return;
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const auto decision =
      docker::decideOrphan(summarizeDirectory(path), instance_id,
                           docker::ProcessIdentity::current(), now, docker::processStartTicks);
  if (decision.duplicate_instance) {
    throw SandboxError("cannot start as instance '" + instance_id + "': " + decision.reason);
  }
}

}  // namespace

std::string defaultRuntimeRoot() {
  if (::geteuid() == 0) return "/run/sandbox-mcp";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/sandbox-mcp";
  }
  return "/tmp/sandbox-mcp-" + std::to_string(::geteuid());
}

ScopedDirectory::~ScopedDirectory() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  if (ec) logger().warn("could not remove {}: {}", path_, ec.message());
}

RuntimeDir::RuntimeDir(const std::string& root, const std::string& instance_id,
                       const std::map<std::string, std::string>& owner_labels,
                       std::chrono::milliseconds heartbeat)
    : path_(root + "/" + instance_id),
      lock_path_(path_ + std::string(kLockSuffix)),
      heartbeat_interval_(heartbeat) {
  ensurePrivateRoot(root);
  refuseLiveDuplicate(path_, instance_id);
  lock_ = lockInstance(lock_path_, instance_id);
  std::error_code ec;
  fs::remove_all(path_, ec);  // an earlier run of this instance id left it
  makeDirectory(path_, fs::perms::owner_all);
  std::ofstream owner(path_ + "/" + kOwnerFile);
  owner << nlohmann::json(owner_labels).dump() << '\n';
  if (!owner) throw SandboxError("cannot write " + path_ + "/" + kOwnerFile);
  owner.close();
  heartbeat_ = std::thread([this] { heartbeatLoop(); });
}

// Keeps owner.json's mtime fresh: servers that cannot see this process (another pid namespace)
// tell a live directory from a dead one by it.
void RuntimeDir::heartbeatLoop() {
  const std::string owner = path_ + "/" + kOwnerFile;
  std::unique_lock lock(heartbeat_mutex_);
  while (!heartbeat_wake_.wait_for(lock, heartbeat_interval_, [this] { return stopping_; })) {
    if (::utimensat(AT_FDCWD, owner.c_str(), nullptr, 0) != 0) {
      logger().warn("cannot touch {}: {}", owner, std::strerror(errno));
    }
  }
}

RuntimeDir::~RuntimeDir() {
  {
    const std::lock_guard lock(heartbeat_mutex_);
    stopping_ = true;
  }
  heartbeat_wake_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  ::unlink(lock_path_.c_str());  // while still holding it: the next holder creates a new one
  std::error_code ec;
  fs::remove_all(path_, ec);
  if (ec) logger().warn("could not remove {}: {}", path_, ec.message());
}

std::unique_ptr<ScopedDirectory> RuntimeDir::createSessionDir(const std::string& owner) {
  const std::string path = path_ + "/s-" + common::randomHex(6);
  makeDirectory(path + "/sock", fs::perms::owner_all);
  auto directory = std::make_unique<ScopedDirectory>(path);
  const auto ids = parseOwner(owner);
  if (::geteuid() == 0 && ids) {
    for (const auto& dir : {path, path + "/sock"}) {
      if (::chown(dir.c_str(), ids->first, ids->second) != 0) {
        throw SandboxError("cannot hand " + dir + " to the sidecar user " + owner);
      }
    }
    // The sandbox (another unprivileged user) must traverse the socket directory.
    fs::permissions(path + "/sock",
                    fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  } else {
    fs::permissions(path, fs::perms::all);
    fs::permissions(path + "/sock", fs::perms::all);
  }
  return directory;
}

std::string RuntimeDir::writePythonModule(const std::string& file_name,
                                          const std::string& content) {
  std::string dir = path_ + "/python";
  makeDirectory(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                         fs::perms::others_read | fs::perms::others_exec);
  const std::string file = dir + "/" + file_name;
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) throw SandboxError("cannot write " + file);
  }
  std::error_code ec;
  fs::permissions(file,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                      fs::perms::others_read,
                  ec);
  return dir;
}

int RuntimeDir::removeStale(const std::string& root, const std::string& our_instance,
                            const docker::ProcessIdentity& self) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return 0;
  try {
    ensurePrivateRoot(root);  // never sweep a directory someone else controls (a symlink to /etc)
  } catch (const SandboxError&) {
    return 0;  // the RuntimeDir constructor reports it
  }
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  int removed = removeUnheldLocks(root);
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory(ec)) continue;
    // Our own id's directory is the constructor's, under the instance lock.
    if (entry.path().filename() == our_instance) continue;
    const auto summary = summarizeDirectory(entry.path());
    // Our own id's directory too: an earlier run of this instance left it, unless a live
    // duplicate holds it (then the RuntimeDir constructor refuses to start).
    const auto decision =
        docker::decideOrphan(summary, our_instance, self, now, docker::processStartTicks);
    if (!decision.remove) continue;
    fs::remove_all(entry.path(), ec);
    if (ec) {
      logger().warn("could not remove stale {}: {}", summary.id, ec.message());
    } else {
      logger().info("removed {} ({})", summary.id, decision.reason);
      ++removed;
    }
  }
  return removed;
}

}  // namespace sandbox
