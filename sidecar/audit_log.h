// The audit trail: one JSON object per line for every request the sidecar decided on (time,
// session, method, URL, decision, reason, rule, status, bytes, ms).
// Thread-safety: AuditLog::write may be called from any thread (lines never interleave);
// formatAuditLine is pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

namespace sidecar {

struct AuditRecord {
  std::chrono::system_clock::time_point time;  // when the request arrived
  std::string session;
  std::string method;    // HTTP method
  std::string url;       // canonical upstream URL, or the target as the client sent it
  std::string decision;  // "allow" (forwarded), "deny" (policy), "error" (bad request, upstream)
  std::string reason;
  std::string rule;         // the allowlist entry that decided; empty when none
  unsigned status = 0;      // HTTP status the client got (0: the client left before any)
  std::uint64_t bytes = 0;  // response body bytes relayed to the client
  std::int64_t duration_ms = 0;
  // Egress proxy lines only: kind "egress", and the bytes the sandbox sent up (`bytes` then
  // counts everything that came down). MCP relay lines leave both out.
  std::string kind;
  std::uint64_t bytes_up = 0;
};

// {"time":"2026-11-22T10:00:00.123Z","session":...,"ms":12}, no trailing newline; egress lines
// end with ,"kind":"egress","up":N.
[[nodiscard]] std::string formatAuditLine(const AuditRecord& record);

// Size-capped: once the file holds max_bytes (counting what an earlier relay of the session
// wrote), further lines are dropped, not written, so a sandbox flooding its relay cannot fill the
// disk. The first lines are kept (they show how the flood started); the number dropped is kept in
// <path>.dropped (decimal, rewritten on every drop) for the MCP server's get_session_stats.
class AuditLog {
 public:
  static constexpr std::uint64_t kDefaultMaxBytes = std::uint64_t{8} * 1024 * 1024;

  // "-" writes to stderr; anything else is opened for appending. Throws std::runtime_error
  // (naming the path and errno text) when the file cannot be opened.
  [[nodiscard]] static std::shared_ptr<AuditLog> open(const std::string& path,
                                                      std::uint64_t max_bytes = kDefaultMaxBytes);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  void write(const AuditRecord& record) noexcept;
  [[nodiscard]] std::uint64_t dropped();

  // The count a relay left in <path>.dropped; 0 when there is none.
  [[nodiscard]] static std::uint64_t readDroppedCount(const std::string& path);

 private:
  AuditLog(std::FILE* file, bool owned, std::uint64_t max_bytes, std::uint64_t written,
           std::string dropped_path) noexcept
      : file_(file),
        owned_(owned),
        max_bytes_(max_bytes),
        written_(written),
        dropped_path_(std::move(dropped_path)) {}
  void recordDrop();  // mutex_ held

  std::mutex mutex_;
  std::FILE* file_;
  bool owned_;
  const std::uint64_t max_bytes_;
  std::uint64_t written_;
  std::uint64_t dropped_ = 0;
  const std::string dropped_path_;  // empty for stderr
};

}  // namespace sidecar
