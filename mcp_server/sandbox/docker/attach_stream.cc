#include "sandbox/docker/attach_stream.h"

#include <algorithm>
#include <cctype>

#include "sandbox/log.h"

namespace sandbox::docker {
namespace {

bool looksLikeTrouble(std::string_view line) {
  std::string lower(line);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("error") != std::string::npos || lower.find("fail") != std::string::npos ||
         lower.find("fatal") != std::string::npos;
}

}  // namespace

std::unique_ptr<AttachStream> AttachStream::open(EngineClient& engine,
                                                 const std::string& container_id,
                                                 std::chrono::milliseconds send_timeout) {
  auto connection = engine.upgrade(
      Method::kPost, "/containers/" + container_id + "/attach?stream=1&stdin=1&stdout=1&stderr=1");
  return std::make_unique<AttachStream>(std::move(connection), container_id, send_timeout);
}

AttachStream::AttachStream(UpgradedConnection connection, std::string container_id,
                           std::chrono::milliseconds send_timeout)
    : socket_(std::move(connection.fd), send_timeout),
      container_id_(std::move(container_id)),
      pending_raw_(std::move(connection.buffered)) {}

std::size_t AttachStream::read(std::string& out) {
  for (;;) {
    std::string raw;
    if (!pending_raw_.empty()) {
      raw.swap(pending_raw_);
    } else if (socket_.read(raw) == 0) {
      if (!partial_line_.empty()) logLine(partial_line_);
      partial_line_.clear();
      return 0;
    }
    std::string stdout_bytes;
    std::string stderr_bytes;
    demux_.feed(raw, stdout_bytes, stderr_bytes);
    if (!stderr_bytes.empty()) onStderr(stderr_bytes);
    if (!stdout_bytes.empty()) {
      out.append(stdout_bytes);
      return stdout_bytes.size();
    }
  }
}

void AttachStream::onStderr(std::string_view bytes) {
  {
    std::lock_guard lock(tail_mutex_);
    stderr_tail_.append(bytes);
    if (stderr_tail_.size() > kStderrTailBytes) {
      stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
    }
  }
  partial_line_.append(bytes);
  std::size_t newline;
  while ((newline = partial_line_.find('\n')) != std::string::npos) {
    const std::string line = partial_line_.substr(0, newline);
    partial_line_.erase(0, newline + 1);
    if (!line.empty()) logLine(line);
  }
}

void AttachStream::logLine(std::string_view line) const {
  const auto short_id = std::string_view(container_id_).substr(0, 12);
  if (looksLikeTrouble(line)) {
    logger().warn("container {}: {}", short_id, line);
  } else {
    logger().debug("container {}: {}", short_id, line);
  }
}

std::string AttachStream::stderrTail() const {
  std::lock_guard lock(tail_mutex_);
  return stderr_tail_;
}

}  // namespace sandbox::docker
