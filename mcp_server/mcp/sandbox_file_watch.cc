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
  try {
    const server::SandboxUri where = server::parseSandboxUri(uri);
    auto session =
        sessions_.find(owner, where.session_id, server::SessionRegistry::IfStarting::kRefuse);
    const auto slash = where.path.rfind('/');
    const std::string dir = slash == 0 ? "/" : where.path.substr(0, slash);
    const std::string name = where.path.substr(slash + 1);
    server::SessionUse use(session);
    const sandbox::FileListing listing = session->sandbox().listFiles(dir);
    for (const auto& entry : listing.entries) {
      if (entry.name == name) return Look{{entry.size, entry.mtime}};
    }
    return Look{};
  } catch (const std::exception& e) {
    // A malformed URI, a session that is gone or a directory that does not exist: the file is
    // absent only when its directory was listed; otherwise nothing is known.
    spdlog::debug("resource watch: cannot look at {}: {}", uri, e.what());
    return std::nullopt;
  }
}

void SandboxFileWatch::baseline(const std::string& owner, const std::string& uri) {
  if (!uri.starts_with(server::kSandboxUriScheme)) return;
  {
    std::lock_guard lock(mutex_);
    if (seen_.size() >= kMaxWatched || seen_.contains(seenKey(owner, uri))) return;
  }
  const std::optional<Look> now = look(owner, uri);
  std::lock_guard lock(mutex_);
  seen_.emplace(seenKey(owner, uri), now.value_or(Look{}));
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
    const std::optional<Look> now = look(owner, uri);
    if (!now) continue;
    std::lock_guard lock(mutex_);
    const auto [it, added] = seen_.try_emplace(seenKey(owner, uri), *now);
    if (added) {
      if (seen_.size() > kMaxWatched) seen_.erase(it);
      continue;  // subscribed before the server could look (e.g. a busy session): from now on
    }
    if (it->second == *now) continue;
    it->second = *now;
    changed.push_back(uri);
  }
  for (const std::string& uri : changed) hub_.resourceUpdated(uri, owner);
}

}  // namespace mcp
