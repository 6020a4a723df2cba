// Test double for jsonrpc::Endpoint: scripted methods, observable notifications and close().
// Thread-safe like the real thing.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "jsonrpc/endpoint.h"

namespace transport_test {

using json = nlohmann::json;
using namespace std::chrono_literals;

// A one-shot gate handlers can wait on.
class Gate {
 public:
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  bool waitOpen(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Methods: initialize (params.fail -> error), ping, echo (result = params), slow (waits for the
// gate, result {"released": bool}), notify (sends notifications/progress, then waits for the gate
// when params.wait is true), queued (result {"cancelled": bool}: whether its admitted token was
// cancelled when it ran). Requests with params.lane run in arrival order per lane. Notifications
// are recorded; notifications/cancelled cancels an admitted request, or else opens the gate.
class FakeEndpoint : public jsonrpc::Endpoint {
 public:
  std::optional<json> handle(const json& message, jsonrpc::RequestContext& ctx) override {
    if (!message.is_array()) return handleOne(message, ctx);
    json out = json::array();
    for (const auto& element : message) {
      if (auto reply = handleOne(element, ctx)) out.push_back(*reply);
    }
    if (out.empty()) return std::nullopt;
    return out;
  }

  // Like a real endpoint, closing cancels what is running (here: opens the gate).
  void close() override {
    {
      std::lock_guard lock(mutex_);
      ++close_count_;
      events_.push_back("close");
      cv_.notify_all();
    }
    gate.open();
  }

  [[nodiscard]] std::string protocolVersion() const override { return "2025-11-25"; }

  [[nodiscard]] std::string orderingKey(const json& message) const override {
    const json params = message.is_object() ? message.value("params", json()) : json();
    return params.is_object() ? params.value("lane", "") : "";
  }

  std::shared_ptr<CancelToken> admit(const json& message) override {
    if (!message.is_object() || message.value("method", "") != "queued") return nullptr;
    auto token = std::make_shared<CancelToken>();
    std::lock_guard lock(mutex_);
    admitted_[message.at("id").dump()] = token;
    return token;
  }

  Gate gate;
  std::atomic<int> slow_started{0};

  bool waitClosed(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [this] { return close_count_ > 0; });
  }
  int closeCount() {
    std::lock_guard lock(mutex_);
    return close_count_;
  }
  // "notification:<method>", "response:<method>", "close", in order of occurrence.
  std::vector<std::string> events() {
    std::lock_guard lock(mutex_);
    return events_;
  }
  std::string lastPeer() {
    std::lock_guard lock(mutex_);
    return last_peer_;
  }
  std::size_t admittedCount() {
    std::lock_guard lock(mutex_);
    return admitted_.size();
  }

 private:
  std::optional<json> handleOne(const json& message, jsonrpc::RequestContext& ctx) {
    const std::string method = message.value("method", "");
    {
      std::lock_guard lock(mutex_);
      last_peer_ = ctx.peer;
    }
    if (!message.contains("id")) {
      record("notification:" + method);
      if (method == "notifications/cancelled" && !cancelAdmitted(message)) gate.open();
      return std::nullopt;
    }
    const json id = message["id"];
    const json params = message.value("params", json::object());
    json result;
    if (method == "initialize") {
      if (params.value("fail", false)) return error(id, -32602, "initialize refused");
      result = {{"protocolVersion", "2025-11-25"}, {"serverInfo", {{"name", "fake"}}}};
    } else if (method == "ping") {
      result = json::object();
    } else if (method == "echo") {
      result = params;
    } else if (method == "slow") {
      ++slow_started;
      result = {{"released", gate.waitOpen(5s)}};
    } else if (method == "queued") {
      result = {{"cancelled", ctx.cancel != nullptr && ctx.cancel->cancelled()}};
    } else if (method == "notify") {
      ctx.notify({{"jsonrpc", "2.0"},
                  {"method", "notifications/progress"},
                  {"params", {{"progress", 1}, {"message", "line1\nline2"}}}});
      const bool released = params.value("wait", false) ? gate.waitOpen(5s) : true;
      result = {{"released", released}};
    } else {
      return error(id, -32601, "Method not found: " + method);
    }
    record("response:" + method);
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}};
  }

  static json error(const json& id, int code, const std::string& text) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", text}}}};
  }

  bool cancelAdmitted(const json& notification) {
    const json params = notification.value("params", json::object());
    std::shared_ptr<CancelToken> token;
    {
      std::lock_guard lock(mutex_);
      const auto it = admitted_.find(params.value("requestId", json()).dump());
      if (it == admitted_.end()) return false;
      token = it->second;
    }
    token->cancel();
    return true;
  }

  void record(std::string event) {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  int close_count_ = 0;
  std::vector<std::string> events_;
  std::string last_peer_;
  std::map<std::string, std::shared_ptr<CancelToken>> admitted_;  // by id, kept for the test
};

class FakeFactory : public jsonrpc::EndpointFactory {
 public:
  using jsonrpc::EndpointFactory::open;
  std::shared_ptr<jsonrpc::Endpoint> open(const std::string& owner,
                                          const jsonrpc::Principal& principal) override {
    auto endpoint = std::make_shared<FakeEndpoint>();
    std::lock_guard lock(mutex_);
    owners_.push_back(owner);
    principals_.push_back(principal.name);
    endpoints_.push_back(endpoint);
    return endpoint;
  }

  std::vector<std::string> owners() {
    std::lock_guard lock(mutex_);
    return owners_;
  }
  // The principal each endpoint was opened for, in the order of owners().
  std::vector<std::string> principals() {
    std::lock_guard lock(mutex_);
    return principals_;
  }
  std::shared_ptr<FakeEndpoint> endpoint(std::size_t index) {
    std::lock_guard lock(mutex_);
    return index < endpoints_.size() ? endpoints_[index] : nullptr;
  }
  std::shared_ptr<FakeEndpoint> last() {
    std::lock_guard lock(mutex_);
    return endpoints_.empty() ? nullptr : endpoints_.back();
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> owners_;
  std::vector<std::string> principals_;
  std::vector<std::shared_ptr<FakeEndpoint>> endpoints_;
};

}  // namespace transport_test
