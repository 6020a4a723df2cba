#include "preview/preview_gate.h"

#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <chrono>

#include "transport/origin_check.h"

namespace preview {
namespace {

Refusal notFound() {
  // The same answer for a label that never was, one that expired and one whose session ended:
  // nothing tells a guesser which.
  return {http::status::not_found,
          "No preview here: this link is unknown or has expired. Ask for a new one with "
          "expose_port.\n"};
}

}  // namespace

std::optional<Refusal> checkFraming(const http::request_header<>& head) {
  if (head.count(http::field::host) != 1) {
    return Refusal{http::status::bad_request, "A request needs exactly one Host header.\n"};
  }
  const bool has_length = head.count(http::field::content_length) > 0;
  const auto encodings = head.count(http::field::transfer_encoding);
  if (encodings > 0 && has_length) {
    return Refusal{http::status::bad_request,
                   "A request may not carry both Content-Length and Transfer-Encoding.\n"};
  }
  if (encodings > 1 ||
      (encodings == 1 && !boost::beast::iequals(head[http::field::transfer_encoding], "chunked"))) {
    return Refusal{http::status::not_implemented,
                   "Only \"Transfer-Encoding: chunked\" is relayed to a preview.\n"};
  }
  if (head.method() == http::verb::connect) {
    return Refusal{http::status::method_not_allowed, "CONNECT is not relayed to a preview.\n"};
  }
  const auto target = head.target();
  if (target.empty() || target.front() != '/') {
    return Refusal{http::status::bad_request,
                   "A preview request's target must be a path (\"/...\").\n"};
  }
  return std::nullopt;
}

PreviewGate::PreviewGate(const config::PreviewConfig& config, server::PreviewTable& table)
    : config_(config),
      table_(table),
      max_bytes_per_session_(static_cast<std::uint64_t>(config.max_mib_per_session) << 20U) {}

PreviewGate::Decision PreviewGate::admit(http::request_header<>& head) {
  if (auto refusal = checkFraming(head)) return *refusal;
  const auto label =
      transport::subdomainLabel(std::string_view(head[http::field::host]), config_.domain);
  if (!label) {
    return Refusal{http::status::not_found,
                   "This is the preview listener: open a preview link (<label>." + config_.domain +
                       "), as expose_port gives it.\n"};
  }
  auto grant = table_.find(*label);
  if (!grant) return notFound();
  auto session = grant->session.lock();
  if (!session) return notFound();
  if (auto refusal = checkOrigin(head, grant->label)) return *refusal;
  if (config_.require_login) {
    if (auto answer = checkLogin(head, *grant)) return *answer;
  }
  const std::string key = grant->owner + "\n" + grant->session_id;
  const std::lock_guard lock(mutex_);
  purgeEndedLocked();
  auto& slot = tallies_[key];
  if (!slot || slot->session.lock() != session) {
    slot = std::make_shared<SessionTally>(SessionTally{session, 0, 0});  // a new session
  }
  auto& tally = *slot;
  if (tally.open >= static_cast<std::size_t>(config_.max_connections_per_session)) {
    return Refusal{http::status::service_unavailable,
                   "This session's previews have " + std::to_string(tally.open) +
                       " connections open (preview.max_connections_per_session); close some "
                       "and retry.\n"};
  }
  if (max_bytes_per_session_ > 0 && tally.bytes >= max_bytes_per_session_) {
    return Refusal{http::status::too_many_requests,
                   "This session's previews have moved their " +
                       std::to_string(config_.max_mib_per_session) +
                       " MiB (preview.max_mib_per_session); start a new session to go on.\n"};
  }
  ++tally.open;
  return std::unique_ptr<Admission>(new Admission(*this, std::move(*grant), slot));
}

std::optional<Refusal> PreviewGate::checkOrigin(const http::request_header<>& head,
                                                const std::string& label) const {
  const auto origin = head.find(http::field::origin);
  if (origin == head.end()) return std::nullopt;
  const auto from = transport::subdomainLabel(std::string_view(origin->value()), config_.domain);
  if (!from || *from == label) return std::nullopt;
  return Refusal{http::status::forbidden, "A page of another preview may not reach this one.\n"};
}

std::optional<Refusal> PreviewGate::checkFollowing(http::request_header<>& head,
                                                   const server::PreviewGrant& grant) {
  if (auto refusal = checkFraming(head)) return refusal;
  const auto label =
      transport::subdomainLabel(std::string_view(head[http::field::host]), config_.domain);
  if (!label || *label != grant.label) {
    return Refusal{http::status::misdirected_request,
                   "This connection belongs to another preview.\n"};
  }
  if (auto refusal = checkOrigin(head, grant.label)) return refusal;
  if (config_.require_login) return checkLogin(head, grant);
  return std::nullopt;
}

std::optional<Refusal> PreviewGate::checkLogin(http::request_header<>& head,
                                               const server::PreviewGrant& grant) {
  const std::string_view target = head.target();
  if (target.substr(0, target.find('?')) == server::kPreviewLoginPath) {
    if (head.method() != http::verb::get) {  // a HEAD (a link checker) must not spend the code
      return Refusal{http::status::method_not_allowed, "Open the login link with GET.\n"};
    }
    const auto at = target.find("code=");
    const auto code = at == std::string_view::npos
                          ? std::string_view()
                          : target.substr(at + 5, target.find('&', at) - (at + 5));
    const auto cookie = table_.redeemLoginCode(grant.label, code);
    if (!cookie) {
      return Refusal{http::status::unauthorized,
                     "This login link was used already or has expired: call expose_port again "
                     "for a new login_url.\n"};
    }
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(
        grant.expires_at - std::chrono::system_clock::now());
    std::string set_cookie = std::string(kLoginCookie) + "=" + *cookie +
                             "; Path=/; HttpOnly; SameSite=Lax; Max-Age=" +
                             std::to_string(std::max<std::int64_t>(left.count(), 1));
    if (config_.public_url.rfind("https://", 0) == 0) set_cookie += "; Secure";
    return Refusal{http::status::see_other,
                   "Logged in; on to the preview.\n",
                   {{"Location", "/"}, {"Set-Cookie", std::move(set_cookie)}}};
  }
  bool valid = false;
  std::vector<std::string> kept_fields;
  for (const auto& field : head) {
    if (field.name() != http::field::cookie) continue;
    std::string kept;
    std::string_view rest = field.value();
    while (!rest.empty()) {
      const auto semicolon = rest.find(';');
      std::string_view pair = rest.substr(0, semicolon);
      rest = semicolon == std::string_view::npos ? std::string_view() : rest.substr(semicolon + 1);
      while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
      const auto equals = pair.find('=');
      if (equals != std::string_view::npos && pair.substr(0, equals) == kLoginCookie) {
        valid = valid || table_.cookieValid(grant.label, pair.substr(equals + 1));
        continue;  // never relayed
      }
      if (!pair.empty()) kept.append(kept.empty() ? "" : "; ").append(pair);
    }
    if (!kept.empty()) kept_fields.push_back(std::move(kept));
  }
  if (!valid) {
    return Refusal{http::status::unauthorized,
                   "This preview needs a login: open the login_url expose_port gave (once, within "
                   "5 minutes) in this browser; it sets a cookie and brings you here.\n"};
  }
  head.erase(http::field::cookie);
  for (const auto& kept : kept_fields) head.insert(http::field::cookie, kept);
  return std::nullopt;
}

void PreviewGate::purgeEndedLocked() {
  std::erase_if(tallies_, [](const auto& entry) {
    return entry.second->open == 0 && entry.second->session.expired();
  });
}

void PreviewGate::release(SessionTally& tally) {
  const std::lock_guard lock(mutex_);
  if (tally.open > 0) --tally.open;
}

PreviewGate::Admission::~Admission() { gate_.release(*tally_); }

bool PreviewGate::Admission::spend(std::uint64_t bytes) {
  const std::lock_guard lock(gate_.mutex_);
  tally_->bytes += bytes;
  return gate_.max_bytes_per_session_ == 0 || tally_->bytes <= gate_.max_bytes_per_session_;
}

}  // namespace preview
