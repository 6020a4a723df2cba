// Small JSON-RPC helpers shared by the transports. Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/json_codec.h"

namespace transport {

using json = nlohmann::json;

// True for an object with "method" and "id" (a request that expects a response).
[[nodiscard]] inline bool isRequest(const json& message) {
  return message.is_object() && message.contains("method") && message.contains("id");
}

// True when the message, or any element of a batch, is a request.
[[nodiscard]] inline bool containsRequest(const json& message) {
  if (!message.is_array()) return isRequest(message);
  for (const auto& element : message) {
    if (isRequest(element)) return true;
  }
  return false;
}

// True when handling cannot take long: notifications, responses (to server->client requests)
// and pings, alone or in a batch. Transports run these apart from ordinary requests so that a
// cancellation or a ping never queues behind long tool calls.
[[nodiscard]] inline bool isLightweight(const json& message) {
  const auto light = [](const json& element) {
    return !isRequest(element) || element["method"] == "ping";
  };
  if (!message.is_array()) return light(message);
  for (const auto& element : message) {
    if (!light(element)) return false;
  }
  return true;
}

// A JSON-RPC error response. `id` is null when the request id is unknown.
[[nodiscard]] inline json errorResponse(int code, std::string message, json id = nullptr) {
  return json{{"jsonrpc", "2.0"},
              {"id", std::move(id)},
              {"error", {{"code", code}, {"message", std::move(message)}}}};
}

// Compact single-line JSON. Invalid UTF-8 (e.g. raw tool output) becomes U+FFFD instead of
// throwing, so a bad byte can never take down a connection.
[[nodiscard]] inline std::string serialize(const json& message) {
  return common::dumpJson(message);
}

}  // namespace transport
