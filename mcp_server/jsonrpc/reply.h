// The answer to a request given later, from any thread, instead of blocking the worker thread that
// handled it: a tasks/result waiting for its task, a tools/call waiting for its turn in a session's
// line. A handler gets one from CallContext::answerLater() when the transport can deliver late
// answers; the dispatcher then writes nothing and the transport waits for this one.
// The first answer wins. A Reply dropped unanswered (a waiter forgotten on some path) answers with
// an internal error, so a client is never left waiting for nothing. Thread-safe.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace jsonrpc {

using json = nlohmann::json;

class Reply {
 public:
  // Takes the response to write, or nullopt: write nothing (the connection is gone).
  using Deliver = std::function<void(std::optional<json> response)>;

  Reply(json id, std::string method, Deliver deliver)
      : id_(std::move(id)), method_(std::move(method)), deliver_(std::move(deliver)) {}
  ~Reply();
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;

  // Answers with what produce() returns as the result, or with the error it throws, mapped to a
  // JSON-RPC error exactly as the dispatcher maps a handler's.
  void complete(const std::function<json()>& produce) noexcept;
  // Answers with a finished response (a result or an error object for this id).
  void answer(json response) noexcept { deliver(std::move(response)); }
  // Answers nothing and releases the transport's hold (the connection that would carry it closed).
  void drop() noexcept;
  [[nodiscard]] bool answered() const;

 private:
  void deliver(std::optional<json> response) noexcept;

  const json id_;
  const std::string method_;
  mutable std::mutex mutex_;
  Deliver deliver_;  // reset once used: it holds the transport's per-request state
};

// The response to request `id` of `method`: produce()'s value as its result, or the JSON-RPC error
// for what it throws (jsonrpc::Error as given, json errors as -32602, anything else -32603).
[[nodiscard]] json respond(const json& id, const std::string& method,
                           const std::function<json()>& produce);

}  // namespace jsonrpc
