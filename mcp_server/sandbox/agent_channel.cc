#include "sandbox/agent_channel.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "common/frame.h"
#include "common/json_codec.h"
#include "sandbox/log.h"
#include "sandbox/sandbox_text.h"

namespace sandbox {
namespace {
// Payloads below this are copied behind their header and sent with one write.
constexpr std::size_t kCopyIntoFrameBytes = std::size_t{64} * 1024;
}  // namespace

std::shared_ptr<AgentChannel> AgentChannel::start(std::unique_ptr<ByteStream> stream,
                                                  std::string name) {
  std::shared_ptr<AgentChannel> channel(new AgentChannel(std::move(stream), std::move(name)));
  channel->reader_ = std::thread([raw = channel.get()] { raw->readLoop(); });
  return channel;
}

AgentChannel::AgentChannel(std::unique_ptr<ByteStream> stream, std::string name)
    : stream_(std::move(stream)), name_(std::move(name)) {}

AgentChannel::~AgentChannel() {
  close("the server closed the session");
  if (reader_.joinable()) reader_.join();
}

void AgentChannel::close(const std::string& reason) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (!closed_) {
      closed_ = true;
      close_reason_ = reason;
      logger().debug("agent channel {} closed: {}", name_, reason);
    }
  }
  stream_->shutdown();
  changed_.notify_all();
}

bool AgentChannel::alive() const noexcept {
  std::lock_guard lock(mutex_);
  return !closed_;
}

std::string AgentChannel::closeReason() const {
  std::lock_guard lock(mutex_);
  return close_reason_;
}

nlohmann::json AgentChannel::call(nlohmann::json request, std::chrono::milliseconds deadline,
                                  const CallOptions& options) {
  auto waiter = std::make_shared<Waiter>();
  waiter->on_event = options.on_event;
  waiter->reply_data = options.reply_data;
  waiter->max_event_bytes = options.max_event_bytes;
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (closed_) throw ChannelClosedError(close_reason_);
    id = next_id_++;
    waiters_.emplace(id, waiter);
  }
  request["id"] = id;
  if (!options.request_data.empty()) request["data_frame"] = true;
  try {
    writeFrame(request, options.request_data);
  } catch (const frame::FrameError& e) {  // too large: refuse this call, the channel is fine
    std::lock_guard lock(mutex_);
    waiters_.erase(id);
    throw SandboxError(std::string("request refused: ") + e.what() + "; send less data per call");
  } catch (const std::exception& e) {
    close(std::string("writing to the agent failed: ") + e.what());
    std::lock_guard lock(mutex_);
    waiters_.erase(id);
    throw ChannelClosedError(close_reason_);
  }

  std::optional<CancelSubscription> cancel_subscription;
  if (options.cancel != nullptr) {
    cancel_subscription.emplace(*options.cancel, [weak = weak_from_this(), id] {
      if (auto self = weak.lock()) self->sendCancel(id);
    });
  }

  std::unique_lock lock(mutex_);
  const auto bounded = std::min(deadline, std::chrono::milliseconds(std::chrono::hours(24 * 365)));
  const bool settled =
      changed_.wait_for(lock, bounded, [&] { return waiter->reply.has_value() || closed_; });
  waiters_.erase(id);
  // An event handler may still be running with the caller's callback: let it finish first.
  changed_.wait(lock, [&] { return waiter->dispatching == 0; });
  if (waiter->dropped_events > 0) {
    logger().info("agent channel {}: dropped {} output events of request {} beyond {} bytes", name_,
                  waiter->dropped_events, id, waiter->max_event_bytes);
  }
  if (waiter->reply) return std::move(*waiter->reply);
  if (!settled) {
    lock.unlock();
    close("the agent did not answer within " + std::to_string(deadline.count()) + " ms (request '" +
          request.value("op", std::string("?")) + "')");
    lock.lock();
  }
  throw ChannelClosedError(close_reason_);
}

void AgentChannel::writeFrame(const nlohmann::json& message, std::string_view data) {
  // Invalid UTF-8 from a caller is replaced rather than thrown: the agent only sees valid JSON.
  const std::string payload = common::dumpJson(message);
  // Checked before anything is written: a refused frame leaves the stream as it was.
  const std::string header = frame::encodeHeader(payload.size());
  const std::string data_header =
      data.empty() ? std::string() : frame::encodeHeader(data.size(), frame::FrameKind::kData);
  std::lock_guard lock(write_mutex_);  // the data frame follows its request, nothing between
  if (payload.size() < kCopyIntoFrameBytes) {
    stream_->write(header + payload);
  } else {  // a large payload is not copied once more behind its header: two writes instead
    stream_->write(header);
    stream_->write(payload);
  }
  if (data.empty()) return;
  stream_->write(data_header);
  stream_->write(data);
}

void AgentChannel::sendCancel(std::uint64_t target) noexcept {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    id = next_id_++;  // its reply has no waiter and is dropped by dispatch()
  }
  try {
    writeFrame({{"id", id}, {"op", "cancel"}, {"target", target}});
  } catch (const std::exception& e) {
    logger().warn("agent channel {}: sending cancel for request {} failed: {}", name_, target,
                  e.what());
  }
}

void AgentChannel::readLoop() noexcept {
  frame::Decoder decoder;
  std::string chunk;
  std::optional<std::pair<std::uint64_t, nlohmann::json>> awaiting_data;  // reply and its id
  try {
    for (;;) {
      chunk.clear();
      if (stream_->read(chunk) == 0) {
        close("the agent's output ended (the container exited or was removed)");
        return;
      }
      decoder.feed(chunk);
      while (auto frame = decoder.nextFrame()) {
        if (awaiting_data) {
          if (frame->kind != frame::FrameKind::kData) {
            throw frame::FrameError("the agent announced a data frame and sent none");
          }
          std::lock_guard lock(mutex_);
          deliverReply(awaiting_data->first, std::move(awaiting_data->second), &frame->payload);
          awaiting_data.reset();
        } else if (frame->kind == frame::FrameKind::kData) {
          throw frame::FrameError("the agent sent a data frame no reply announced");
        } else {
          awaiting_data = dispatch(frame->payload);
        }
      }
    }
  } catch (const std::exception& e) {
    close(std::string("the agent channel broke: ") + e.what());
  }
}

std::optional<std::pair<std::uint64_t, nlohmann::json>> AgentChannel::dispatch(
    const std::string& payload) {
  nlohmann::json message;
  try {
    message = common::parseJson(payload);
  } catch (const nlohmann::json::parse_error&) {
    message = nlohmann::json();  // reported below like any other non-object
  }
  if (!message.is_object()) {
    throw frame::FrameError("the agent sent a frame that is not a JSON object");
  }
  const auto id_it = message.find("id");
  if (id_it == message.end() || !id_it->is_number_unsigned()) {
    logger().debug("agent channel {}: ignoring a frame without a numeric id: {}", name_,
                   escapeForLog(payload, 200));
    return std::nullopt;
  }
  const auto id = id_it->get<std::uint64_t>();
  if (message.contains("event")) {
    // Counted by the text they carry (JSON escaping may inflate the frame six-fold), or by the
    // frame when it is bigger than escaping explains (padding in other fields).
    const auto data = message.find("data");
    const std::size_t text_bytes =
        data != message.end() && data->is_string() ? data->get_ref<const std::string&>().size() : 0;
    deliverEvent(id, message,
                 payload.size() <= 6 * text_bytes + 1024 ? text_bytes : payload.size());
    return std::nullopt;
  }
  if (const auto data = message.find("data_frame");
      data != message.end() && data->is_boolean() && data->get<bool>()) {
    return std::make_pair(id, std::move(message));
  }
  std::lock_guard lock(mutex_);
  deliverReply(id, std::move(message), nullptr);
  return std::nullopt;
}

void AgentChannel::deliverReply(std::uint64_t id, nlohmann::json reply, std::string* data) {
  const auto it = waiters_.find(id);
  if (it == waiters_.end()) {
    logger().debug("agent channel {}: reply to {} has no waiter (cancel, or after a timeout)",
                   name_, id);
    return;
  }
  Waiter& waiter = *it->second;
  if (data != nullptr && waiter.reply_data != nullptr) *waiter.reply_data = std::move(*data);
  waiter.reply = std::move(reply);
  changed_.notify_all();
}

void AgentChannel::deliverEvent(std::uint64_t id, const nlohmann::json& event,
                                std::size_t event_bytes) {
  std::shared_ptr<Waiter> waiter;
  {
    std::lock_guard lock(mutex_);
    const auto it = waiters_.find(id);
    if (it == waiters_.end() || !it->second->on_event) return;
    waiter = it->second;
    if (event_bytes > waiter->max_event_bytes - waiter->event_bytes) {
      ++waiter->dropped_events;
      waiter->event_bytes = waiter->max_event_bytes;  // later small events are dropped too
      return;
    }
    waiter->event_bytes += event_bytes;
    ++waiter->dispatching;
  }
  try {
    waiter->on_event(event);
  } catch (const std::exception& e) {
    logger().warn("agent channel {}: event handler for request {} threw: {}", name_, id,
                  escapeForLog(e.what(), 300));
  }
  std::lock_guard lock(mutex_);
  --waiter->dispatching;
  changed_.notify_all();
}

}  // namespace sandbox
