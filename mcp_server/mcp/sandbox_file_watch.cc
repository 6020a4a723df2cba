#include "mcp/sandbox_file_watch.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <vector>

#include "server/sandbox_uri.h"

namespace mcp {
namespace {

std::string seenKey(const std::string& owner, const std::string& uri) { return owner + '\n' + uri; }

}  // namespace

std::optional<SandboxFileWatch::Look> SandboxFileWatch::look(const std::string& owner,
                                                             const std::string& uri) {
  std::shared_ptr<server::Session> session;
  server::SandboxUri where;
  try {
    where = server::parseSandboxUri(uri);
    session = sessions_.find(owner, where.session_id, server::SessionRegistry::IfStarting::kRefuse);
  } catch (const std::exception&) {
    return std::nullopt;  // a malformed URI, or not a session of the owner's: nothing to look at
  }
  const auto slash = where.path.rfind('/');
  const std::string dir = slash == 0 ? "/" : where.path.substr(0, slash);
  const std::string name = where.path.substr(slash + 1);
  try {
    server::SessionUse use(session);
    const sandbox::FileListing listing = session->sandbox().listFiles(dir);
    for (const auto& entry : listing.entries) {
      if (entry.name == name) return Look{{entry.size, entry.mtime}};
    }
  } catch (const std::exception& e) {
    // Most often its directory does not exist (yet): the file is absent.
    spdlog::debug("resource watch: cannot list the directory of {}: {}", uri, e.what());
  }
  return Look{};
}

std::size_t SandboxFileWatch::watchedBy(const std::string& owner) const {
  const std::string from = owner + '\n';
  std::size_t count = 0;
  for (auto it = seen_.lower_bound(from); it != seen_.end() && it->first.starts_with(from); ++it) {
    ++count;
  }
  return count;
}

void SandboxFileWatch::baseline(const std::string& owner, const std::string& uri) {
  if (!uri.starts_with(server::kSandboxUriScheme)) return;
  {
    std::lock_guard lock(mutex_);
    if (seen_.contains(seenKey(owner, uri)) || watchedBy(owner) >= kMaxWatchedPerOwner) return;
  }
  const std::optional<Look> now = look(owner, uri);
  if (!now) return;  // not a session of the owner's
  std::lock_guard lock(mutex_);
  if (watchedBy(owner) < kMaxWatchedPerOwner) seen_.emplace(seenKey(owner, uri), *now);
}

void SandboxFileWatch::afterCall(const std::string& owner, const std::string& session_id) {
  const std::string prefix = std::string(server::kSandboxUriScheme) + session_id + '/';
  const std::set<std::string> watched = hub_.subscribedUris(owner, prefix);
  {
    // Forget what nobody watches any more.
    std::lock_guard lock(mutex_);
    const std::string from = seenKey(owner, prefix);
    for (auto it = seen_.lower_bound(from); it != seen_.end() && it->first.starts_with(from);) {
      it = watched.contains(it->first.substr(owner.size() + 1)) ? std::next(it) : seen_.erase(it);
    }
  }
  std::vector<std::string> changed;
  for (const std::string& uri : watched) {
    {
      std::lock_guard lock(mutex_);
      if (!seen_.contains(seenKey(owner, uri)) && watchedBy(owner) >= kMaxWatchedPerOwner) break;
    }
    const std::optional<Look> now = look(owner, uri);
    if (!now) continue;
    std::lock_guard lock(mutex_);
    const auto [it, added] = seen_.try_emplace(seenKey(owner, uri), *now);
    // Added: subscribed before its session existed for the owner, or beyond the cap then.
    if (added || it->second == *now) continue;
    it->second = *now;
    changed.push_back(uri);
  }
  for (const std::string& uri : changed) hub_.resourceUpdated(uri, owner);
}

}  // namespace mcp
