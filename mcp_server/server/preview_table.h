// Which ports of which sessions are exposed as previews (expose_port), under which labels. A
// label is a capability: 128 random bits, the first part of the preview's host name, bound to
// one session and one port. A grant ends at its expiry, with unexpose, or with its session (it
// holds the session weakly: a session that ends takes its grants along, with no hook).
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace server {

class Session;

// With preview.require_login: where a login link points on a preview's host (the listener
// answers it, the sandbox never sees it).
inline constexpr std::string_view kPreviewLoginPath = "/.sandbox-mcp/login";

struct PreviewGrant {
  std::string label;  // 32 lower-case hex digits
  std::string owner;
  std::string session_id;
  std::weak_ptr<Session> session;
  std::uint16_t port = 0;
  std::chrono::system_clock::time_point expires_at;
  // With preview.require_login (PreviewTable's login methods): one-time codes and the cookies
  // they were spent for, oldest first.
  std::vector<std::pair<std::string, std::chrono::system_clock::time_point>> login_codes;
  std::vector<std::string> cookies;
};

class PreviewTable {
 public:
  using Clock = std::chrono::system_clock;
  using Now = std::function<Clock::time_point()>;

  explicit PreviewTable(Now now = [] { return Clock::now(); });

  // Set once the preview listener serves: where a label's preview is reached, with "{label}"
  // where the label goes. Empty (the start): previews are off and expose_port is refused.
  void setUrlPattern(std::string pattern);
  [[nodiscard]] bool enabled() const;
  // The preview URL of `label` (empty while previews are off).
  [[nodiscard]] std::string urlOf(const std::string& label) const;

  // Exposes `port` of `session` for `ttl`: a new grant, or the port's existing one (same label)
  // with the new expiry. nullopt when the session already exposes `max_ports` other ports.
  [[nodiscard]] std::optional<PreviewGrant> expose(const std::shared_ptr<Session>& session,
                                                   std::uint16_t port, std::chrono::seconds ttl,
                                                   std::size_t max_ports);
  // Ends the session's grant for `port`; false when there was none.
  bool unexpose(const Session& session, std::uint16_t port);
  // The live grant named `label` (its session is alive and it has not expired), else nullopt.
  [[nodiscard]] std::optional<PreviewGrant> find(std::string_view label);
  // The session's live grants, by port.
  [[nodiscard]] std::vector<PreviewGrant> of(const Session& session);
  // Live grants of all sessions.
  [[nodiscard]] std::size_t size();

  // With preview.require_login: a one-time code for `label` (kLoginCodeLife, at most
  // kMaxLoginCodes outstanding per grant, the oldest dropped); nullopt when no live grant has it.
  [[nodiscard]] std::optional<std::string> mintLoginCode(const std::string& label);
  // Spends `code` once: a new cookie value for `label` (valid while the grant lives; at most
  // kMaxCookies per grant, the oldest dropped), or nullopt when the code is unknown, used or old.
  [[nodiscard]] std::optional<std::string> redeemLoginCode(const std::string& label,
                                                           std::string_view code);
  // Whether `cookie` was given out for `label`'s live grant.
  [[nodiscard]] bool cookieValid(const std::string& label, std::string_view cookie);
  static constexpr std::chrono::seconds kLoginCodeLife{300};
  static constexpr std::size_t kMaxLoginCodes = 8;
  static constexpr std::size_t kMaxCookies = 32;

 private:
  // Drops grants whose session ended or whose time is up. mutex_ held.
  void purgeLocked(Clock::time_point now);
  [[nodiscard]] static bool belongsTo(const PreviewGrant& grant, const Session& session);
  // The live grant named `label`; mutex_ held (and purged).
  [[nodiscard]] PreviewGrant* findLocked(std::string_view label);

  const Now now_;
  mutable std::mutex mutex_;
  std::string url_pattern_;
  std::vector<PreviewGrant> grants_;
};

// Whether `label` has the shape of one (32 lower-case hex digits): a host name that cannot be one
// is refused before any look-up.
[[nodiscard]] bool looksLikePreviewLabel(std::string_view label) noexcept;

}  // namespace server
