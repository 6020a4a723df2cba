#include "agent/agent.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "agent/channel_socket.h"
#include "agent/credentials.h"
#include "agent/exec_request.h"
#include "agent/file_ops.h"
#include "agent/file_requests.h"
#include "agent/request_error.h"
#include "common/fd_io.h"
#include "common/json_codec.h"

#ifndef SANDBOX_AGENT_VERSION
#define SANDBOX_AGENT_VERSION "0.0.0"
#endif

namespace agent {
namespace {

constexpr int kInputFd = 0;
constexpr int kOutputFd = 1;
constexpr std::size_t kReadChunkBytes = std::size_t{256} * 1024;

// The uid code runs as: the code user when the agent is split from it, else the agent's own.
unsigned codeUid() noexcept {
  const auto& user = codeUser();
  return user ? user->uid : ::getuid();
}

std::int64_t targetField(const nlohmann::json& request) {
  const auto it = request.find("target");
  if (it == request.end() || !(it->is_number_integer() || it->is_number_unsigned())) {
    throw RequestError("cancel: \"target\" must be the numeric id of an exec request");
  }
  return it->get<std::int64_t>();
}

}  // namespace

Agent::Agent(std::filesystem::path saved_output_dir,
             const std::optional<EgressProxySpec>& egress_proxy)
    : executor_(
          loop_, reaper_, [this](const nlohmann::json& message) { send(message); },
          std::move(saved_output_dir)),
      ports_(loop_),
      input_fd_(kInputFd),
      output_fd_(kOutputFd) {
  // Off PID 1 (tests, development) adopt orphans like PID 1 does, so they are reaped and killed.
  if (::getpid() != 1) ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::error_code ec;
  cwd_ = std::filesystem::current_path(ec);
  if (ec) cwd_ = "/";
  loop_.watchFd(kInputFd, POLLIN, [this](short /*revents*/) { onReadable(kInputFd); });
  loop_.watchFd(signals_.fd(), POLLIN, [this](short /*revents*/) { onSignals(); });
  // Forked first, while the agent holds the fewest descriptors and the least memory.
  if (egress_proxy) egress_.emplace(loop_, reaper_, *egress_proxy);
  executor_.startPython();
  executor_.prestartShell();
}

int Agent::run() {
  loop_.run();
  return exit_code_;
}

void Agent::onReadable(int fd) {
  if (input_buffer_.size() != kReadChunkBytes) input_buffer_.resize(kReadChunkBytes);
  const ssize_t n = ::read(fd, input_buffer_.data(), input_buffer_.size());
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return;
    shutdown(1, std::string("reading the request stream failed: ") + std::strerror(errno));
    return;
  }
  if (n == 0) {
    shutdown(0, fd == kInputFd ? "stdin closed (the server went away); stopping"
                               : "the channel socket closed (the server went away); stopping");
    return;
  }
  if (fd != input_fd_) return;  // stdin after the switch: only its end matters
  decoder_.feed(std::string_view(input_buffer_.data(), static_cast<std::size_t>(n)));
  try {
    while (auto frame = decoder_.nextFrame()) {
      handleFrame(*frame);
      if (shutting_down_ || fd != input_fd_) return;  // stopped, or switched to the socket
    }
  } catch (const frame::FrameError& e) {
    // The length prefix is unusable, so the stream cannot be resynchronised.
    shutdown(2, std::string(e.what()) + "; the frame stream cannot continue");
  }
}

void Agent::handleFrame(frame::Frame& frame) {
  if (awaiting_data_) {
    const nlohmann::json request = std::move(*awaiting_data_);
    awaiting_data_.reset();
    const auto id = request["id"].get<std::int64_t>();
    const auto& op = request["op"].get_ref<const std::string&>();
    if (frame.kind == frame::FrameKind::kData) {
      dispatch(id, op, request, &frame.payload);
      return;
    }
    replyError(id, op + ": the request announced a data frame and none followed");
  } else if (frame.kind == frame::FrameKind::kData) {
    std::fprintf(stderr, "sandbox-agent: ignoring a data frame no request announced (%zu bytes)\n",
                 frame.payload.size());
    return;
  }
  handlePayload(frame.payload);
}

void Agent::handlePayload(const std::string& payload) {
  nlohmann::json request;
  try {
    request = common::parseJson(payload);
  } catch (const nlohmann::json::parse_error&) {
    request = nlohmann::json();  // not an object: ignored below
  }
  if (!request.is_object()) {
    std::fprintf(stderr, "sandbox-agent: ignoring a frame that is not a JSON object (%zu bytes)\n",
                 payload.size());
    return;
  }
  const auto id = request.find("id");
  if (id == request.end() || !(id->is_number_integer() || id->is_number_unsigned())) {
    std::fprintf(stderr, "sandbox-agent: ignoring a request without a numeric \"id\"\n");
    return;
  }
  const auto op = request.find("op");
  if (op == request.end() || !op->is_string()) {
    replyError(id->get<std::int64_t>(), "the request has no \"op\" string; see PROTOCOL.md");
    return;
  }
  if (const auto data = request.find("data_frame"); data != request.end() && data->is_boolean() &&
                                                    data->get<bool>() &&
                                                    *op == protocol::kOpWriteFile) {
    awaiting_data_ = std::move(request);  // dispatched with the next frame
    return;
  }
  dispatch(id->get<std::int64_t>(), op->get<std::string>(), request, nullptr);
}

void Agent::dispatch(std::int64_t id, const std::string& op, const nlohmann::json& request,
                     const std::string* data) {
  try {
    if (op == protocol::kOpHello) {
      replyHello(id);
    } else if (op == protocol::kOpExec) {
      executor_.submit(parseExecRequest(id, request));
    } else if (op == protocol::kOpChannel) {
      switchToChannel(id, request);
    } else if (op == protocol::kOpSuspend) {
      suspendChannel(id);
    } else if (op == protocol::kOpOpenPort) {
      openPort(id, request);
    } else if (op == protocol::kOpCancel) {
      send({{"id", id}, {"ok", true}, {"cancelled", executor_.cancel(targetField(request))}});
    } else if (op == protocol::kOpWriteFile || op == protocol::kOpReadFile ||
               op == protocol::kOpListFiles) {
      std::string read_data;  // read_file's content when it goes back as a data frame
      nlohmann::json reply = op == protocol::kOpWriteFile ? writeFileRequest(request, cwd_, data)
                             : op == protocol::kOpReadFile
                                 ? readFileRequest(request, cwd_, read_data)
                                 : listFilesRequest(request, cwd_);
      reply["id"] = id;
      reply["ok"] = true;
      const bool with_data = reply.contains("data_frame");
      send(reply, with_data ? &read_data : nullptr);
    } else {
      replyError(id, "unknown op \"" + op +
                         "\"; expected hello, exec, cancel, write_file, read_file, list_files, "
                         "open_port, channel or suspend");
    }
  } catch (const RequestError& e) {
    replyError(id, e.what());
  } catch (const files::FileOpError& e) {
    replyError(id, e.what());
  } catch (const std::exception& e) {
    replyError(id, op + " failed: " + e.what());
  }
}

void Agent::replyHello(std::int64_t id) {
  executor_.whenPythonSettled([this, id] {
    nlohmann::json reply = {{"id", id},
                            {"ok", true},
                            {"agent_version", SANDBOX_AGENT_VERSION},
                            {"pid", ::getpid()},
                            {"uid", codeUid()},
                            {"agent_uid", ::getuid()},
                            {"cwd", cwd_.string()}};
    reply.update(executor_.pythonInfo());
    reply.update(executor_.javascriptInfo());
    send(reply);
  });
}

void Agent::switchToChannel(std::int64_t id, const nlohmann::json& request) {
  if (channel_) throw RequestError("channel: the frames already use a socket");
  const auto path = request.find("path");
  const auto token = request.find("token");
  if (path == request.end() || !path->is_string() || token == request.end() ||
      !token->is_string()) {
    throw RequestError("channel: \"path\" and \"token\" must be strings");
  }
  channel_ = connectChannel(path->get<std::string>(), token->get<std::string>());
  send({{"id", id}, {"ok", true}});  // the last frame on stdout
  input_fd_ = output_fd_ = channel_.get();
  decoder_ = frame::Decoder();
  awaiting_data_.reset();
  const int fd = channel_.get();
  loop_.watchFd(fd, POLLIN, [this, fd](short /*revents*/) { onReadable(fd); });
}

void Agent::suspendChannel(std::int64_t id) {
  if (!channel_) throw RequestError("suspend: the frames already use stdio");
  if (!executor_.idle()) {
    throw RequestError("suspend: an execution is running; wait for its reply or cancel it first");
  }
  // Previews hold host sockets too (see below); one still connecting is answered first.
  ports_.closeAll(
      "the preview connection was closed: the sandbox is being suspended (for a checkpoint); "
      "open it again once the sandbox runs");
  send({{"id", id}, {"ok", true}});  // the last frame on the socket
  loop_.unwatchFd(channel_.get());
  channel_.reset();  // gVisor cannot checkpoint a sandbox connected to a host socket
  input_fd_ = kInputFd;
  output_fd_ = kOutputFd;
  decoder_ = frame::Decoder();
  awaiting_data_.reset();
}

void Agent::openPort(std::int64_t id, const nlohmann::json& request) {
  const auto port_request = protocol::decodeOpenPortRequest(request);
  const std::uint16_t port = port_request.port;
  ports_.open(port_request, [this, id, port](const std::optional<std::string>& error) {
    if (error) {
      replyError(id, *error);
      return;
    }
    send({{"id", id}, {"ok", true}, {"port", port}});
  });
}

void Agent::replyError(std::int64_t id, const std::string& error) {
  send({{"id", id}, {"ok", false}, {"error", error}});
}

void Agent::send(const nlohmann::json& message, const std::string* data) {
  if (shutting_down_) return;
  std::string bytes;
  std::string data_header;
  try {
    bytes = frame::encode(common::dumpJson(message));
    if (data != nullptr) data_header = frame::encodeHeader(data->size(), frame::FrameKind::kData);
  } catch (const frame::FrameError& e) {
    const auto id = message.find("id");
    if (id == message.end()) return;
    bytes =
        frame::encode(common::dumpJson({{"id", *id},
                                        {"ok", false},
                                        {"error", std::string("the reply was too large to send (") +
                                                      e.what() + "); ask for less output"}}));
  }
  if (data_header.empty()) data = nullptr;  // the reply became an error: no data follows
  // The data frame is written as it is, not copied behind its header.
  if (!common::writeAll(output_fd_, bytes) ||
      (data != nullptr &&
       (!common::writeAll(output_fd_, data_header) || !common::writeAll(output_fd_, *data)))) {
    shutdown(0, std::string("writing the reply stream failed (") + std::strerror(errno) +
                    "); the server went away, stopping");
  }
}

void Agent::onSignals() {
  bool child_exited = false;
  for (const int sig : signals_.readPending()) {
    if (sig == SIGCHLD) {
      child_exited = true;
    } else {
      shutdown(0, std::string("received ") + ::strsignal(sig) + "; stopping");
      return;
    }
  }
  if (child_exited) {
    reaper_.reapAll();
    executor_.pruneGroups();
  }
}

void Agent::shutdown(int exit_code, std::string_view reason) {
  if (shutting_down_) return;
  std::fprintf(stderr, "sandbox-agent: %.*s\n", static_cast<int>(reason.size()), reason.data());
  shutting_down_ = true;
  exit_code_ = exit_code;
  if (egress_) egress_->stop();
  ports_.closeAll("the agent is stopping");  // not sent: nothing is sent any more
  executor_.killEverything();
  killRemainingChildren();
  loop_.stop();
}

}  // namespace agent
