#include "server/preview_table.h"

#include <algorithm>

#include "common/constant_time.h"
#include "common/random_id.h"
#include "server/session.h"

namespace server {

PreviewTable::PreviewTable(Now now) : now_(std::move(now)) {}

void PreviewTable::setUrlPattern(std::string pattern) {
  const std::lock_guard lock(mutex_);
  url_pattern_ = std::move(pattern);
}

bool PreviewTable::enabled() const {
  const std::lock_guard lock(mutex_);
  return !url_pattern_.empty();
}

std::string PreviewTable::urlOf(const std::string& label) const {
  const std::lock_guard lock(mutex_);
  auto url = url_pattern_;
  if (const auto at = url.find("{label}"); at != std::string::npos) url.replace(at, 7, label);
  return url;
}

bool PreviewTable::belongsTo(const PreviewGrant& grant, const Session& session) {
  return grant.session.lock().get() == &session;
}

void PreviewTable::purgeLocked(Clock::time_point now) {
  std::erase_if(grants_, [now](const PreviewGrant& grant) {
    return grant.expires_at <= now || grant.session.expired();
  });
}

std::optional<PreviewGrant> PreviewTable::expose(const std::shared_ptr<Session>& session,
                                                 std::uint16_t port, std::chrono::seconds ttl,
                                                 std::size_t max_ports) {
  const auto now = now_();
  const std::lock_guard lock(mutex_);
  purgeLocked(now);
  std::size_t others = 0;
  for (auto& grant : grants_) {
    if (!belongsTo(grant, *session)) continue;
    if (grant.port == port) {
      grant.expires_at = now + ttl;
      return grant;
    }
    ++others;
  }
  if (others >= max_ports) return std::nullopt;
  PreviewGrant grant{
      common::randomHex(16), session->owner(), session->id(), session, port, now + ttl, {}, {}};
  grants_.push_back(grant);
  return grant;
}

bool PreviewTable::unexpose(const Session& session, std::uint16_t port) {
  const std::lock_guard lock(mutex_);
  return std::erase_if(grants_, [&](const PreviewGrant& grant) {
           return grant.port == port && belongsTo(grant, session);
         }) > 0;
}

std::optional<PreviewGrant> PreviewTable::find(std::string_view label) {
  if (!looksLikePreviewLabel(label)) return std::nullopt;
  const auto now = now_();
  const std::lock_guard lock(mutex_);
  purgeLocked(now);
  for (const auto& grant : grants_) {
    if (common::constantTimeEquals(grant.label, label)) return grant;
  }
  return std::nullopt;
}

std::vector<PreviewGrant> PreviewTable::of(const Session& session) {
  const auto now = now_();
  const std::lock_guard lock(mutex_);
  purgeLocked(now);
  std::vector<PreviewGrant> out;
  for (const auto& grant : grants_) {
    if (belongsTo(grant, session)) out.push_back(grant);
  }
  std::sort(out.begin(), out.end(),
            [](const PreviewGrant& a, const PreviewGrant& b) { return a.port < b.port; });
  return out;
}

std::size_t PreviewTable::size() {
  const auto now = now_();
  const std::lock_guard lock(mutex_);
  purgeLocked(now);
  return grants_.size();
}

PreviewGrant* PreviewTable::findLocked(std::string_view label) {
  if (!looksLikePreviewLabel(label)) return nullptr;
  purgeLocked(now_());
  for (auto& grant : grants_) {
    if (common::constantTimeEquals(grant.label, label)) return &grant;
  }
  return nullptr;
}

std::optional<std::string> PreviewTable::mintLoginCode(const std::string& label) {
  const std::lock_guard lock(mutex_);
  auto* grant = findLocked(label);
  if (grant == nullptr) return std::nullopt;
  auto& codes = grant->login_codes;
  const auto now = now_();
  std::erase_if(codes, [now](const auto& code) { return code.second <= now; });
  if (codes.size() >= kMaxLoginCodes) codes.erase(codes.begin());
  codes.emplace_back(common::randomHex(16), now + kLoginCodeLife);
  return codes.back().first;
}

std::optional<std::string> PreviewTable::redeemLoginCode(const std::string& label,
                                                         std::string_view code) {
  const std::lock_guard lock(mutex_);
  auto* grant = findLocked(label);
  if (grant == nullptr) return std::nullopt;
  const auto now = now_();
  auto& codes = grant->login_codes;
  const auto it = std::find_if(codes.begin(), codes.end(), [&](const auto& entry) {
    return entry.second > now && common::constantTimeEquals(entry.first, code);
  });
  if (it == codes.end()) return std::nullopt;
  codes.erase(it);  // once
  if (grant->cookies.size() >= kMaxCookies) grant->cookies.erase(grant->cookies.begin());
  grant->cookies.push_back(common::randomHex(16));
  return grant->cookies.back();
}

bool PreviewTable::cookieValid(const std::string& label, std::string_view cookie) {
  const std::lock_guard lock(mutex_);
  const auto* grant = findLocked(label);
  if (grant == nullptr) return false;
  bool valid = false;
  for (const auto& given : grant->cookies) valid |= common::constantTimeEquals(given, cookie);
  return valid;
}

bool looksLikePreviewLabel(std::string_view label) noexcept {
  return label.size() == 32 && std::all_of(label.begin(), label.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace server
