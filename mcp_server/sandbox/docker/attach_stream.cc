#include "sandbox/docker/attach_stream.h"

#include "sandbox/log.h"
#include "sandbox/sandbox_text.h"

namespace sandbox::docker {

std::unique_ptr<AttachStream> AttachStream::open(EngineClient& engine,
                                                 const std::string& container_id,
                                                 std::chrono::milliseconds send_timeout) {
  auto connection = engine.upgrade(
      Method::kPost, "/containers/" + container_id + "/attach?stream=1&stdin=1&stdout=1&stderr=1");
  return std::make_unique<AttachStream>(std::move(connection), container_id, send_timeout);
}

AttachStream::AttachStream(UpgradedConnection connection, std::string container_id,
                           std::chrono::milliseconds send_timeout)
    : pump_(std::move(connection.pump)),
      socket_(std::move(connection.fd), send_timeout),
      container_id_(std::move(container_id)),
      pending_raw_(std::move(connection.buffered)) {}

std::size_t AttachStream::read(std::string& out) {
  for (;;) {
    std::string raw;
    if (!pending_raw_.empty()) {
      raw.swap(pending_raw_);
    } else if (socket_.read(raw) == 0) {
      if (!partial_line_.empty()) logLine(partial_line_, false);
      partial_line_.clear();
      const auto dropped = dropped_lines_.load();
      if (dropped > 0) {
        logger().info("container {}: {} stderr lines were not logged (rate limit)",
                      std::string_view(container_id_).substr(0, 12), dropped);
      }
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
    stderr_tail_.append(bytes.substr(bytes.size() - std::min(bytes.size(), kStderrTailBytes)));
    if (stderr_tail_.size() > kStderrTailBytes) {
      stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
    }
  }
  while (!bytes.empty()) {
    const auto newline = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, newline);
    if (!skipping_rest_of_line_) {
      const std::size_t room = kMaxStderrLineBytes - partial_line_.size();
      partial_line_.append(piece.substr(0, room));
      if (piece.size() > room) {  // the line is too long: log what fits, skip the rest
        logLine(partial_line_, true);
        partial_line_.clear();
        skipping_rest_of_line_ = true;
      }
    }
    if (newline == std::string_view::npos) return;
    if (!skipping_rest_of_line_ && !partial_line_.empty()) logLine(partial_line_, false);
    partial_line_.clear();
    skipping_rest_of_line_ = false;
    bytes.remove_prefix(newline + 1);
  }
}

void AttachStream::logLine(std::string_view line, bool cut) {
  const auto now = Clock::now();
  if (now - window_start_ >= kStderrWindow) {
    window_start_ = now;
    window_lines_ = 0;
  }
  if (++window_lines_ > kStderrLinesPerWindow) {
    dropped_lines_.fetch_add(1);
    return;
  }
  // DEBUG only, whatever the text says: it is written by (or through) the sandbox and must not
  // be able to raise alarms or flood the operator's log at the default level.
  logger().debug("container {} stderr (sandbox text): {}{}",
                 std::string_view(container_id_).substr(0, 12),
                 escapeForLog(line, kMaxStderrLineBytes), cut ? "...[line cut]" : "");
}

std::string AttachStream::stderrTail() const {
  std::lock_guard lock(tail_mutex_);
  return escapeForLog(stderr_tail_, kStderrTailBytes, /*keep_newlines=*/true);
}

}  // namespace sandbox::docker
