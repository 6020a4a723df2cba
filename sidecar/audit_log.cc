#include "sidecar/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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
  nlohmann::ordered_json line = {{"time", rfc3339Utc(record.time)},
                                 {"session", record.session},
                                 {"method", record.method},
                                 {"url", record.url},
                                 {"decision", record.decision},
                                 {"reason", record.reason},
                                 {"rule", record.rule},
                                 {"status", record.status},
                                 {"bytes", record.bytes},
                                 {"ms", record.duration_ms}};
  if (!record.kind.empty()) {
    line["kind"] = record.kind;
    line["up"] = record.bytes_up;
  }
  // Replace invalid UTF-8 (a hostile target) instead of throwing.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::shared_ptr<AuditLog> AuditLog::open(const std::string& path, std::uint64_t max_bytes) {
  if (path == "-") {
    return std::shared_ptr<AuditLog>(new AuditLog(stderr, false, max_bytes, 0, {}));
  }
  std::FILE* file = std::fopen(path.c_str(), "ae");
  if (file == nullptr) {
    throw std::runtime_error("cannot open audit log '" + path + "': " + std::strerror(errno) +
                             "; check the directory exists and is writable, or pass '-'");
  }
  // A restarted relay appends to its predecessor's file: the cap counts both.
  struct stat info {};
  const std::uint64_t existing =
      ::fstat(::fileno(file), &info) == 0 ? static_cast<std::uint64_t>(info.st_size) : 0;
  auto audit =
      std::shared_ptr<AuditLog>(new AuditLog(file, true, max_bytes, existing, path + ".dropped"));
  audit->dropped_ = readDroppedCount(path);
  return audit;
}

std::uint64_t AuditLog::readDroppedCount(const std::string& path) {
  std::FILE* file = std::fopen((path + ".dropped").c_str(), "re");
  if (file == nullptr) return 0;
  unsigned long long count = 0;
  if (std::fscanf(file, "%llu", &count) != 1) count = 0;
  std::fclose(file);
  return count;
}

AuditLog::~AuditLog() {
  if (owned_) std::fclose(file_);
}

std::uint64_t AuditLog::dropped() {
  const std::lock_guard lock(mutex_);
  return dropped_;
}

void AuditLog::recordDrop() {
  ++dropped_;
  if (dropped_path_.empty()) return;
  // Rewritten whole each time (a few bytes): readers always see one complete number.
  const int fd = ::open(dropped_path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string text = std::to_string(dropped_) + "\n";
  if (::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size())) {
    (void)::ftruncate(fd, static_cast<off_t>(text.size()));
  }
  ::close(fd);
}

void AuditLog::write(const AuditRecord& record) noexcept {
  try {
    const std::string line = formatAuditLine(record) + "\n";
    const std::lock_guard lock(mutex_);
    if (written_ + line.size() > max_bytes_) {
      recordDrop();
      return;
    }
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
    written_ += line.size();
  } catch (...) {
    // Allocation failure: nothing sensible left to do; the request itself is unaffected.
  }
}

}  // namespace sidecar
