#include "transport/stdio_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <system_error>
#include <utility>

#include "common/fd_io.h"
#include "common/json_codec.h"
#include "transport/line_splitter.h"
#include "transport/message_util.h"
#include "transport/transport_log.h"

namespace transport {
namespace {

constexpr int kInvalidRequest = -32600;
constexpr std::size_t kReadChunkBytes = std::size_t{64} * 1024;

using common::writeAll;

}  // namespace

StdioTransport::StdioTransport(int in_fd, int out_fd,
                               std::shared_ptr<jsonrpc::EndpointFactory> factory,
                               StdioTransportOptions options)
    : in_fd_(in_fd),
      out_fd_(out_fd),
      factory_(std::move(factory)),
      options_(options),
      pool_(options.worker_threads, options.max_worker_threads, "stdio-workers", &log()) {
  if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(), "stdio transport: pipe2 for stop()");
  }
}

StdioTransport::~StdioTransport() {
  pool_.shutdown();
  for (int fd : wake_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

void StdioTransport::stop() noexcept {
  const char byte = 1;
  [[maybe_unused]] const ssize_t ignored = ::write(wake_pipe_[1], &byte, 1);
}

void StdioTransport::run() {
  // A client that closes our stdout must produce EPIPE (logged), not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  endpoint_ = factory_->open("stdio");
  log().info("stdio transport serving (max message {} bytes)", options_.max_message_bytes);

  LineSplitter splitter(options_.max_message_bytes);
  const auto on_line = [this](std::string_view line) { dispatchLine(line); };
  const auto on_oversize = [this] { writeOversizeError(); };
  std::array<char, kReadChunkBytes> chunk{};
  for (;;) {
    std::array<pollfd, 2> fds{pollfd{in_fd_, POLLIN, 0}, pollfd{wake_pipe_[0], POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      log().error("stdio transport: poll failed: {}", std::strerror(errno));
      break;
    }
    if (fds[1].revents != 0) {
      log().info("stdio transport: stop requested");
      break;
    }
    const ssize_t got = ::read(in_fd_, chunk.data(), chunk.size());
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      log().error("stdio transport: reading input failed: {}", std::strerror(errno));
      break;
    }
    if (got == 0) break;  // EOF: the client closed our stdin
    splitter.feed(std::string_view(chunk.data(), static_cast<std::size_t>(got)), on_line,
                  on_oversize);
  }
  splitter.finish(on_line);

  waitForInFlight();
  endpoint_->close();
  pool_.shutdown();
  log().info("stdio transport: input closed, endpoint closed");
}

void StdioTransport::dispatchLine(std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;  // blank line
  json message;
  try {
    message = common::parseJson(line);
  } catch (const json::parse_error& e) {
    writeMessage(jsonrpc::parseErrorResponse(e.what()));
    return;
  }
  dispatchMessage(std::move(message));
}

void StdioTransport::dispatchMessage(json message) {
  // Notifications, responses and pings are quick (cancel a token, record a reply) and their
  // order matters (notifications/initialized before the next request), so they run right here
  // and never wait behind busy workers. Other requests may block for minutes: the pool.
  if (isLightweight(message)) {
    try {
      handleNow(message);
    } catch (const std::exception& e) {
      log().error("stdio transport: endpoint threw: {}", e.what());
    }
    return;
  }
  {
    std::lock_guard lock(in_flight_mutex_);
    ++in_flight_;
  }
  const std::string key = endpoint_->orderingKey(message);  // before the message moves
  // Cancellable from now on, in arrival order, even while it waits behind `key`.
  std::shared_ptr<CancelToken> cancel = endpoint_->admit(message);
  auto job = [this, message = std::move(message), cancel] {
    bool answered_later = false;
    try {
      answered_later = handleNow(message, cancel, true);
    } catch (const std::exception& e) {  // Endpoint::handle must not throw; stay alive if it does
      log().error("stdio transport: endpoint threw: {}", e.what());
    }
    if (!answered_later) finishInFlight();
  };
  if (!pool_.submit(std::move(job), key, std::move(cancel))) {
    std::lock_guard lock(in_flight_mutex_);
    --in_flight_;
  }
}

bool StdioTransport::handleNow(const json& message, std::shared_ptr<CancelToken> cancel,
                               bool may_answer_later) {
  jsonrpc::RequestContext ctx;
  ctx.peer = "stdio";
  ctx.notify = [this](const json& notification) { writeMessage(notification); };
  ctx.notify_outlives_request = true;  // the endpoint is closed before this transport goes
  if (may_answer_later) {
    // A request that waits (a task's result, its turn) is answered by whichever thread ends the
    // wait, and counts as in flight until then. The endpoint is closed before this transport goes.
    ctx.answer_later = [this, cancel](std::optional<json> answer) {
      if (answer) writeMessage(*answer);
      finishInFlight();
    };
    ctx.run_on_worker = [this](std::function<void()> job) { return pool_.submit(std::move(job)); };
  }
  ctx.cancel = std::move(cancel);
  std::optional<json> response = endpoint_->handle(message, ctx);
  if (response) writeMessage(*response);
  return ctx.answered_later;
}

void StdioTransport::finishInFlight() {
  std::lock_guard lock(in_flight_mutex_);
  --in_flight_;
  in_flight_done_.notify_all();
}

void StdioTransport::writeMessage(const json& message) noexcept {
  std::string line;
  try {
    line = serialize(message);
  } catch (const std::exception& e) {
    log().error("stdio transport: cannot serialise a message: {}", e.what());
    return;
  }
  line.push_back('\n');
  std::lock_guard lock(write_mutex_);
  if (output_broken_) return;
  if (!writeAll(out_fd_, line)) {
    output_broken_ = true;
    log().error("stdio transport: writing to output failed ({}); further output is dropped",
                std::strerror(errno));
  }
}

void StdioTransport::writeOversizeError() noexcept {
  const std::string text = "Invalid Request: message exceeds the limit of " +
                           std::to_string(options_.max_message_bytes) +
                           " bytes and was discarded; send smaller messages or raise "
                           "stdio.max_message_bytes";
  log().warn("stdio transport: {}", text);
  writeMessage(errorResponse(kInvalidRequest, text));
}

void StdioTransport::waitForInFlight() {
  std::unique_lock lock(in_flight_mutex_);
  if (!in_flight_done_.wait_for(lock, options_.drain_timeout, [this] { return in_flight_ == 0; })) {
    log().warn("stdio transport: {} request(s) still running after {} ms; closing the endpoint",
               in_flight_, options_.drain_timeout.count());
  }
}

}  // namespace transport
