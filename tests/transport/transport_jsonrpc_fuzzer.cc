// libFuzzer target for the JSON-RPC entry: what the stdio and HTTP transports do with a message
// (common::parseJson, then Dispatcher::handle with a few handlers, then serialize the answer).
// Invariants: nothing crashes, overflows the stack or trips a sanitizer, whatever the depth or
// size; a text nested past common::kMaxJsonDepth is refused before it is parsed, and anything
// else parses exactly as nlohmann does; every answer is valid JSON that parses back to itself.
// Built by transport_run_jsonrpc_fuzzer.sh with clang.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/json_codec.h"
#include "common/json_limits.h"
#include "jsonrpc/dispatcher.h"
#include "jsonrpc/errors.h"
#include "transport/message_util.h"

namespace {

using json = nlohmann::json;

void check(bool condition, const char* what, std::string_view input) {
  if (condition) return;
  std::fprintf(stderr, "invariant violated: %s\ninput: %.*s\n", what,
               static_cast<int>(input.size() > 2000 ? 2000 : input.size()), input.data());
  std::abort();
}

// Handlers shaped like the MCP layer's: echo returns (a copy of) its params, fail throws a
// protocol error carrying them, notify sends them back as a notification.
const jsonrpc::Dispatcher& dispatcher() {
  static const jsonrpc::Dispatcher* instance = [] {
    auto* d = new jsonrpc::Dispatcher();
    d->onRequest("initialize", [](const json& params, jsonrpc::CallContext&) {
      return json{{"protocolVersion", params.value("protocolVersion", "2025-11-25")},
                  {"echo", params}};
    });
    d->onRequest("ping", [](const json&, jsonrpc::CallContext&) { return json::object(); });
    d->onRequest("echo", [](const json& params, jsonrpc::CallContext&) { return params; });
    d->onRequest("fail", [](const json& params, jsonrpc::CallContext&) -> json {
      throw jsonrpc::Error(jsonrpc::kInvalidParams, "refused", params);
    });
    d->onRequest("at", [](const json& params, jsonrpc::CallContext&) {
      return params.at("key").at(0);  // throws json::exception for most inputs
    });
    d->onNotification("notify", [](const json& params, jsonrpc::CallContext& call) {
      if (call.transport.notify) call.transport.notify(params);
    });
    return d;
  }();
  return *instance;
}

void checkAnswer(const json& answer, std::string_view input) {
  const std::string text = transport::serialize(answer);
  json again;
  try {
    again = common::parseJson(text, common::kMaxJsonDepth * 2 + 8);
  } catch (const json::parse_error&) {
    check(false, "an answer does not parse back", input);
  }
  check(transport::serialize(again) == text, "an answer does not round-trip", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const bool too_deep = common::findExcessNesting(input) != std::string_view::npos;
  json message;
  try {
    message = common::parseJson(input);
  } catch (const json::parse_error& e) {
    checkAnswer(jsonrpc::parseErrorResponse(e.what()), input);
    if (!too_deep) {
      // Refused for its syntax: nlohmann must refuse it too.
      const json plain = json::parse(input, nullptr, /*allow_exceptions=*/false);
      check(plain.is_discarded(), "parseJson refused what nlohmann accepts", input);
    }
    return 0;
  }
  check(!too_deep, "a text nested past the limit was parsed", input);
  check(message == json::parse(input), "parseJson and nlohmann disagree", input);

  (void)transport::isLightweight(message);
  (void)transport::containsRequest(message);
  jsonrpc::RequestContext ctx;
  ctx.peer = "fuzz";
  ctx.notify = [input](const json& notification) { checkAnswer(notification, input); };
  if (const auto answer = dispatcher().handle(message, ctx)) checkAnswer(*answer, input);
  return 0;
}
