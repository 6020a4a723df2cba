#include "jsonrpc/dispatcher.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

#include "jsonrpc/errors.h"

namespace jsonrpc {
namespace {

bool isValidId(const json& id) { return id.is_string() || id.is_number_integer(); }

// Client->server responses (to requests the server sent) carry result/error, no method.
bool isResponse(const json& message) {
  return !message.contains("method") && (message.contains("result") || message.contains("error"));
}

std::string describeEnvelopeProblem(const json& message) {
  if (!message.is_object()) return "a JSON-RPC message must be a JSON object";
  if (message.value("jsonrpc", json()) != "2.0") return "\"jsonrpc\" must be exactly \"2.0\"";
  const auto method = message.find("method");
  if (method == message.end() || !method->is_string()) return "\"method\" must be a string";
  const auto id = message.find("id");
  if (id != message.end() && !isValidId(*id)) return "\"id\" must be a string or an integer";
  const auto params = message.find("params");
  if (params != message.end() && !params->is_object() && !params->is_array()) {
    return "\"params\" must be an object or an array when present";
  }
  return {};
}

}  // namespace

json makeResult(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json makeError(const json& id, int code, const std::string& message, const json& data) {
  json error{{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

std::shared_ptr<Reply> CallContext::answerLater() {
  if (!may_answer_later || !transport.answer_later) return nullptr;
  if (!later_) later_ = std::make_shared<Reply>(id, method, transport.answer_later);
  return later_;
}

void Dispatcher::onRequest(const std::string& method, RequestHandler handler) {
  requests_[method] = std::move(handler);
}

void Dispatcher::onResponse(std::function<void(const json& response)> handler) {
  responses_ = std::move(handler);
}

void Dispatcher::onNotification(const std::string& method, NotificationHandler handler) {
  notifications_[method] = std::move(handler);
}

std::optional<json> Dispatcher::handle(const json& message, RequestContext& ctx) const {
  if (!message.is_array()) return handleOne(message, ctx, false);
  if (message.empty()) {
    return makeError(nullptr, kInvalidRequest, "Invalid Request: an empty batch is not allowed");
  }
  json replies = json::array();
  for (const auto& item : message) {
    if (auto reply = handleOne(item, ctx, true)) replies.push_back(std::move(*reply));
  }
  if (replies.empty()) return std::nullopt;
  return replies;
}

std::optional<json> Dispatcher::handleOne(const json& message, RequestContext& ctx,
                                          bool in_batch) const {
  if (message.is_object() && isResponse(message)) {
    if (responses_) responses_(message);
    return std::nullopt;
  }
  if (auto problem = describeEnvelopeProblem(message); !problem.empty()) {
    json id = nullptr;
    if (message.is_object() && message.contains("id") && isValidId(message["id"])) {
      id = message["id"];
    }
    return makeError(id, kInvalidRequest, "Invalid Request: " + problem);
  }
  const std::string& method = message["method"].get_ref<const std::string&>();
  // Referenced, not copied: params may hold a whole file.
  static const json kNoParams = json::object();
  const auto given = message.find("params");
  const json& params = given != message.end() ? *given : kNoParams;
  const bool is_notification = !message.contains("id");

  if (is_notification) {
    static const json kNullId = nullptr;
    CallContext call{kNullId, ctx};
    const auto it = notifications_.find(method);
    if (it == notifications_.end()) return std::nullopt;  // unknown notifications are ignored
    try {
      it->second(params, call);
    } catch (const std::exception& e) {
      spdlog::warn("notification {} failed: {}", method, e.what());
    }
    return std::nullopt;
  }

  const json& id = message["id"];
  const auto it = requests_.find(method);
  if (it == requests_.end()) {
    return makeError(id, kMethodNotFound, "Method not found: " + method);
  }
  CallContext call{id, ctx, method};
  call.may_answer_later = !in_batch;
  json response = respond(id, method, [&] { return it->second(params, call); });
  const auto& later = call.laterReply();
  if (!later) return response;
  // Answered through the Reply, now or later; a handler that threw after deferring answers here.
  if (response.contains("error")) later->answer(std::move(response));
  ctx.answered_later = true;
  return std::nullopt;
}

}  // namespace jsonrpc
