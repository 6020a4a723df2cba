#include "app/warm_up.h"

#include <atomic>
#include <optional>
#include <utility>

namespace app {
namespace {

bool isClientMessage(const jsonrpc::json& message) {
  if (!message.is_object()) return false;
  const auto method = message.find("method");
  return method != message.end() && method->is_string() &&
         method->get_ref<const std::string&>() != "server/discover";
}

class WarmUpEndpoint final : public jsonrpc::Endpoint {
 public:
  WarmUpEndpoint(std::shared_ptr<jsonrpc::Endpoint> inner, std::function<void()> on_client)
      : inner_(std::move(inner)), on_client_(std::move(on_client)) {}

  std::optional<jsonrpc::json> handle(const jsonrpc::json& message,
                                      jsonrpc::RequestContext& ctx) override {
    observe(message);
    return inner_->handle(message, ctx);
  }
  void close() override { inner_->close(); }
  [[nodiscard]] std::string orderingKey(const jsonrpc::json& message) const override {
    return inner_->orderingKey(message);
  }
  [[nodiscard]] std::shared_ptr<CancelToken> admit(const jsonrpc::json& message) override {
    observe(message);  // a request is admitted before a worker handles it: the earlier signal
    return inner_->admit(message);
  }
  [[nodiscard]] std::string protocolVersion() const override { return inner_->protocolVersion(); }

 private:
  void observe(const jsonrpc::json& message) {
    if (seen_.load(std::memory_order_relaxed) || !isClientActivity(message)) return;
    if (!seen_.exchange(true)) on_client_();
  }

  std::shared_ptr<jsonrpc::Endpoint> inner_;
  std::function<void()> on_client_;
  std::atomic<bool> seen_{false};
};

}  // namespace

bool isClientActivity(const jsonrpc::json& message) {
  if (!message.is_array()) return isClientMessage(message);
  for (const auto& item : message) {
    if (isClientMessage(item)) return true;
  }
  return false;
}

WarmUpOnClient::WarmUpOnClient(std::shared_ptr<jsonrpc::EndpointFactory> inner,
                               std::function<void()> on_client)
    : inner_(std::move(inner)), on_client_(std::move(on_client)) {}

std::shared_ptr<jsonrpc::Endpoint> WarmUpOnClient::open(const std::string& owner,
                                                        const jsonrpc::Principal& principal) {
  return std::make_shared<WarmUpEndpoint>(inner_->open(owner, principal), on_client_);
}

}  // namespace app
