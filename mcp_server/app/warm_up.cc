#include "app/warm_up.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <functional>
#include <optional>
#include <utility>

#include "jsonrpc/errors.h"
#include "transport/message_util.h"

namespace app {
namespace {

bool isClientMessage(const jsonrpc::json& message) {
  if (!message.is_object()) return false;
  const auto method = message.find("method");
  return method != message.end() && method->is_string() &&
         method->get_ref<const std::string&>() != "server/discover";
}

// The answer to `message` once start-up failed: its requests get `reason`, notifications nothing.
std::optional<jsonrpc::json> refusal(const jsonrpc::json& message, const std::string& reason) {
  const auto answer = [&](const jsonrpc::json& item) -> std::optional<jsonrpc::json> {
    if (!item.is_object() || !item.contains("id") || !item.contains("method")) return std::nullopt;
    return transport::errorResponse(jsonrpc::kInternalError, reason, item["id"]);
  };
  if (!message.is_array()) return answer(message);
  jsonrpc::json answers = jsonrpc::json::array();
  for (const auto& item : message) {
    if (auto one = answer(item)) answers.push_back(std::move(*one));
  }
  if (answers.empty()) return std::nullopt;
  return answers;
}

class GatedEndpoint final : public jsonrpc::Endpoint {
 public:
  GatedEndpoint(std::shared_ptr<jsonrpc::Endpoint> inner, StartUp& start_up)
      : inner_(std::move(inner)), start_up_(start_up) {}

  std::optional<jsonrpc::json> handle(const jsonrpc::json& message,
                                      jsonrpc::RequestContext& ctx) override {
    if (isClientActivity(message)) {
      if (const auto failure = start_up_.await(); !failure.empty()) {
        return refusal(message, failure);
      }
    }
    return inner_->handle(message, ctx);
  }
  void close() override { inner_->close(); }
  [[nodiscard]] std::string orderingKey(const jsonrpc::json& message) const override {
    return inner_->orderingKey(message);
  }
  // A request is admitted on the transport's reader before a worker handles it: waiting here keeps
  // every later message behind it, in the client's order.
  [[nodiscard]] std::shared_ptr<CancelToken> admit(const jsonrpc::json& message) override {
    if (isClientActivity(message) && !start_up_.await().empty()) {
      return std::make_shared<CancelToken>();  // handle() answers with the failure
    }
    return inner_->admit(message);
  }
  [[nodiscard]] std::string protocolVersion() const override { return inner_->protocolVersion(); }

 private:
  std::shared_ptr<jsonrpc::Endpoint> inner_;
  StartUp& start_up_;
};

}  // namespace

bool isClientActivity(const jsonrpc::json& message) {
  if (!message.is_array()) return isClientMessage(message);
  for (const auto& item : message) {
    if (isClientMessage(item)) return true;
  }
  return false;
}

StartUp::StartUp(Work work, std::chrono::milliseconds delay)
    : work_(std::move(work)), delay_(delay), thread_([this] { run(); }) {}

StartUp::~StartUp() { stop(); }

void StartUp::begin() {
  {
    std::lock_guard lock(mutex_);
    if (begun_) return;
    begun_ = true;
  }
  changed_.notify_all();
}

std::string StartUp::await() {
  begin();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return done_; });
  return failure_;
}

void StartUp::onFailure(std::function<void()> on_failure) {
  std::unique_lock lock(mutex_);
  if (ran_ && !failure_.empty()) {
    lock.unlock();
    on_failure();
    return;
  }
  on_failure_ = std::move(on_failure);
}

bool StartUp::failed() {
  std::lock_guard lock(mutex_);
  return ran_ && !failure_.empty();
}

void StartUp::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StartUp::run() {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, delay_, [this] { return begun_ || stopping_; });
  std::string failure;
  if (stopping_ && !begun_) {
    failure = "the server is stopping";
  } else {
    begun_ = true;
    lock.unlock();
    try {
      failure = work_();
    } catch (const std::exception& e) {
      failure = e.what();
      spdlog::error("start-up failed: {}", failure);
    }
    lock.lock();
    ran_ = true;
  }
  done_ = true;
  failure_ = failure;
  std::function<void()> on_failure;
  if (ran_ && !failure.empty()) on_failure = std::move(on_failure_);
  lock.unlock();
  changed_.notify_all();
  if (on_failure) on_failure();
}

GatedEndpoints::GatedEndpoints(std::shared_ptr<jsonrpc::EndpointFactory> inner, StartUp& start_up)
    : inner_(std::move(inner)), start_up_(start_up) {}

std::shared_ptr<jsonrpc::Endpoint> GatedEndpoints::open(const std::string& owner,
                                                        const jsonrpc::Principal& principal) {
  return std::make_shared<GatedEndpoint>(inner_->open(owner, principal), start_up_);
}

}  // namespace app
