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
};

// {"time":"2026-11-22T10:00:00.123Z","session":...,"ms":12}, no trailing newline.
[[nodiscard]] std::string formatAuditLine(const AuditRecord& record);

class AuditLog {
 public:
  // "-" writes to stderr; anything else is opened for appending. Throws std::runtime_error
  // (naming the path and errno text) when the file cannot be opened.
  [[nodiscard]] static std::shared_ptr<AuditLog> open(const std::string& path);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  void write(const AuditRecord& record) noexcept;

 private:
  AuditLog(std::FILE* file, bool owned) noexcept : file_(file), owned_(owned) {}

  std::mutex mutex_;
  std::FILE* file_;
  bool owned_;
};

}  // namespace sidecar
