// resources/updated for sandbox files a client subscribed to (resources/subscribe, or a listen
// stream's resourceSubscriptions). The server does not see writes inside a sandbox, so after each
// tool call into a session it looks at the subscribed files of that session (size and
// modification time, one directory listing per directory) and announces those that changed to
// their owner's streams. Only subscribed files are looked at: a session nobody watches costs
// nothing but a lookup. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "mcp/subscriptions.h"
#include "server/session_registry.h"

namespace mcp {

class SandboxFileWatch {
 public:
  // Files one owner's subscriptions have looked at, at most (each is a directory listing after
  // every call into its session); beyond it further subscribed files are not looked at.
  static constexpr std::size_t kMaxWatchedPerOwner = 256;

  SandboxFileWatch(server::SessionRegistry& sessions, Subscriptions& hub)
      : sessions_(sessions), hub_(hub) {}

  // Remembers how `uri` (a sandbox:// URI) of `owner` looks now, so that a later change is seen.
  // Other URIs, and files of sessions the owner does not hold, are ignored (nothing is kept).
  void baseline(const std::string& owner, const std::string& uri);
  // After a call into the owner's session `session_id`: announces each subscribed file of it whose
  // size or modification time changed (or that appeared or went).
  void afterCall(const std::string& owner, const std::string& session_id);

 private:
  // A file's size and mtime; nullopt: it does not exist.
  using Look = std::optional<std::pair<std::uint64_t, std::int64_t>>;
  // How the file looks, or nullopt when it could not be looked at (session busy or gone).
  std::optional<Look> look(const std::string& owner, const std::string& uri);
  // mutex_ held: how many files of `owner` are remembered.
  [[nodiscard]] std::size_t watchedBy(const std::string& owner) const;

  server::SessionRegistry& sessions_;
  Subscriptions& hub_;
  std::mutex mutex_;
  std::map<std::string, Look> seen_;  // owner + '\n' + uri
};

}  // namespace mcp
