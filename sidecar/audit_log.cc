#include "sidecar/audit_log.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace sidecar {
namespace {

std::string rfc3339Utc(std::chrono::system_clock::time_point time) {
  const auto since_epoch = time.time_since_epoch();
  const auto seconds = std::chrono::floor<std::chrono::seconds>(since_epoch);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds);
  const std::time_t whole = seconds.count();
  std::tm utc{};
  gmtime_r(&whole, &utc);
  char text[40];
  const std::size_t length = std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  char fraction[8];
  std::snprintf(fraction, sizeof(fraction), ".%03dZ", static_cast<int>(millis.count()));
  return std::string(text, length) + fraction;
}

}  // namespace

std::string formatAuditLine(const AuditRecord& record) {
  // nlohmann keeps insertion order only with ordered_json: readers scan lines left to right.
  const nlohmann::ordered_json line = {{"time", rfc3339Utc(record.time)},
                                       {"session", record.session},
                                       {"method", record.method},
                                       {"url", record.url},
                                       {"decision", record.decision},
                                       {"reason", record.reason},
                                       {"rule", record.rule},
                                       {"status", record.status},
                                       {"bytes", record.bytes},
                                       {"ms", record.duration_ms}};
  // Replace invalid UTF-8 (a hostile target) instead of throwing.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::shared_ptr<AuditLog> AuditLog::open(const std::string& path) {
  if (path == "-") return std::shared_ptr<AuditLog>(new AuditLog(stderr, false));
  std::FILE* file = std::fopen(path.c_str(), "ae");
  if (file == nullptr) {
    throw std::runtime_error("cannot open audit log '" + path + "': " + std::strerror(errno) +
                             "; check the directory exists and is writable, or pass '-'");
  }
  return std::shared_ptr<AuditLog>(new AuditLog(file, true));
}

AuditLog::~AuditLog() {
  if (owned_) std::fclose(file_);
}

void AuditLog::write(const AuditRecord& record) noexcept {
  try {
    const std::string line = formatAuditLine(record) + "\n";
    const std::lock_guard lock(mutex_);
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
  } catch (...) {
    // Allocation failure: nothing sensible left to do; the request itself is unaffected.
  }
}

}  // namespace sidecar
