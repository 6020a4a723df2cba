// What the preview listener decides from a connection's first request head, before any sandbox
// is touched: is the head well framed, does its Host name a live grant (server/preview_table.h),
// and does the grant's session have room (preview.max_connections_per_session, its byte budget
// preview.max_mib_per_session). A connection is bound to the grant its first request names;
// later requests on it reach the same port whatever they say (they cannot reach anything the
// first one could not). Thread-safe.
#pragma once

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "config/config.h"
#include "server/preview_table.h"

namespace preview {

namespace http = boost::beast::http;

// An answer the listener gives itself, instead of the sandbox: an error, or the login's redirect.
struct Refusal {
  http::status status;
  std::string message;  // the plain-text body: what happened and what to do
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra: Location, Set-Cookie
};

// With preview.require_login: the cookie a login link (server::kPreviewLoginPath) sets.
inline constexpr std::string_view kLoginCookie = "sandbox_mcp_preview";

// Request-smuggling and routing checks of a head: one Host; not both Content-Length and
// Transfer-Encoding; a Transfer-Encoding of exactly "chunked"; an origin-form target ("/..."); no
// CONNECT. nullopt: it passes.
[[nodiscard]] std::optional<Refusal> checkFraming(const http::request_header<>& head);

class PreviewGate {
 public:
  // A connection let through: holds its place in its session's count until destroyed.
  class Admission {
   public:
    ~Admission();
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;

    [[nodiscard]] const server::PreviewGrant& grant() const noexcept { return grant_; }
    // Counts `bytes` moved for the session; false once its budget is spent (then close).
    [[nodiscard]] bool spend(std::uint64_t bytes);

   private:
    friend class PreviewGate;
    struct Tally;
    Admission(PreviewGate& gate, server::PreviewGrant grant, std::shared_ptr<Tally> tally)
        : gate_(gate), grant_(std::move(grant)), tally_(std::move(tally)) {}
    PreviewGate& gate_;
    const server::PreviewGrant grant_;
    // Its own session's counts: a session that comes back under the same id (a lost sandbox)
    // starts new counts, which this admission never touches.
    const std::shared_ptr<Tally> tally_;
  };
  using Decision = std::variant<Refusal, std::unique_ptr<Admission>>;

  // `config` and `table` outlive the gate and every Admission.
  PreviewGate(const config::PreviewConfig& config, server::PreviewTable& table);

  // With preview.require_login, `head` loses the login cookie before it goes on: the sandbox never
  // sees it.
  [[nodiscard]] Decision admit(http::request_header<>& head);
  // A later request on a connection `grant` admitted: framing, the same label (else 421), a page
  // of another preview as its Origin (403), the login cookie (taken out). nullopt: it passes.
  [[nodiscard]] std::optional<Refusal> checkFollowing(http::request_header<>& head,
                                                      const server::PreviewGrant& grant);

 private:
  using SessionTally = Admission::Tally;
  void release(SessionTally& tally);
  // A request whose Origin is another preview (a page of one session scripting another's): 403.
  [[nodiscard]] std::optional<Refusal> checkOrigin(const http::request_header<>& head,
                                                   const std::string& label) const;
  // preview.require_login: the login link's redirect, a refusal, or nullopt (the cookie is good
  // and was taken out of `head`).
  [[nodiscard]] std::optional<Refusal> checkLogin(http::request_header<>& head,
                                                  const server::PreviewGrant& grant);
  void purgeEndedLocked();

  const config::PreviewConfig& config_;
  server::PreviewTable& table_;
  const std::uint64_t max_bytes_per_session_;  // 0: no bound
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<SessionTally>> tallies_;  // by owner + "\n" + session id
};

struct PreviewGate::Admission::Tally {
  std::weak_ptr<server::Session> session;
  std::size_t open = 0;
  std::uint64_t bytes = 0;
};

}  // namespace preview
