// The two eras of MCP one endpoint speaks, chosen per request as the 2026-07-28 revision says: a
// request whose params._meta names a protocol version is served statelessly under that revision
// (no initialize; version, client capabilities and log level travel in every request); anything
// else is the 2025-11-25 session protocol. Pure functions, no state.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "jsonrpc/errors.h"

namespace mcp::era {

using json = nlohmann::json;

inline constexpr std::string_view kModernVersion = "2026-07-28";
inline constexpr const char* kProtocolVersionKey = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* kClientCapabilitiesKey = "io.modelcontextprotocol/clientCapabilities";
inline constexpr const char* kClientInfoKey = "io.modelcontextprotocol/clientInfo";
inline constexpr const char* kLogLevelKey = "io.modelcontextprotocol/logLevel";
inline constexpr const char* kServerInfoKey = "io.modelcontextprotocol/serverInfo";

// 2026-07-28 error codes (schema.ts).
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kMissingRequiredClientCapability = -32021;
inline constexpr int kUnsupportedProtocolVersion = -32022;

// Methods 2026-07-28 removed: a modern request naming one answers "method not found" even where
// the endpoint serves it to 2025 clients (tasks/result and tasks/list are 2025 tasks; the tasks
// extension has tasks/get, tasks/update and tasks/cancel). Other methods the endpoint lacks get
// the dispatcher's -32601.
inline constexpr std::array<std::string_view, 7> kRemovedMethods{
    "initialize",   "ping",      "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
    "tasks/result", "tasks/list"};

// The tasks extension: a tools/call may answer with a task the client polls (tasks/get).
inline constexpr const char* kTasksExtension = "io.modelcontextprotocol/tasks";

// How long a client may cache what the list methods and discover return (ttlMs): the tools and
// templates never change while a server runs; a session's resources do.
inline constexpr int kStaticTtlMs = 3'600'000;

// A single request (an object, not a notification or a batch) with a string method and a string
// or integer id: the only kind of message an era decision applies to.
[[nodiscard]] bool isSingleRequest(const json& message);

// The message's params, or an empty object when it has none.
[[nodiscard]] const json& paramsOf(const json& message);

// The request's params carry the 2026-07-28 envelope (a protocolVersion key in _meta, valid or
// not): it is served, or refused, as a modern request.
[[nodiscard]] bool isModern(const json& params);

// Whether a 2026-07-28 request's client capabilities declare the tasks extension (it must, on
// each request, for a task to answer it or for it to use tasks/*).
[[nodiscard]] bool declaresTasksExtension(const json& params);

// -32021 naming the tasks extension as the capability the request lacks.
[[nodiscard]] jsonrpc::Error tasksExtensionRequired(const std::string& method);

// The stages of refusal() on their own, for a transport that checks its headers between them
// (Streamable HTTP: a header that disagrees with the body is -32020 before the version is
// judged). Each returns the error response, or nullopt.
[[nodiscard]] std::optional<json> envelopeRefusal(const json& message);  // -32602
[[nodiscard]] std::optional<json> versionRefusal(const json& message);   // -32022, bad log level
[[nodiscard]] std::optional<json> methodRefusal(const json& message);    // -32601, removed

// The protocol version a modern request's _meta names ("" when it names none, or not a string).
[[nodiscard]] std::string requestVersion(const json& params);

// A modern request's error response when it cannot be served: the envelope is malformed
// (-32602), its version is not one this server speaks (-32022, with the supported ones), or its
// method was removed in 2026-07-28 (-32601). nullopt: serve it. `message` is a single request
// (an object with a method and an id) whose params are modern; a 2025 server/discover (no
// envelope) is refused too, since discover exists only in 2026-07-28.
[[nodiscard]] std::optional<json> refusal(const json& message);

// The log level a modern request asked for in _meta (index into debug..emergency), or -1: none,
// so no notifications/message goes to it.
[[nodiscard]] int requestLogLevel(const json& params);

// Index of an MCP log level name (debug = 0 .. emergency = 7), -1 when it is none of them.
[[nodiscard]] int logLevelIndex(std::string_view level);

// The supported versions as 2026-07-28 lists them (discover, and the -32022 error's data).
[[nodiscard]] json supportedVersions();

// `result` with resultType "complete" and the caching hints 2026-07-28 asks of list results,
// resources/read and discover (a 2025 client ignores the extra fields).
[[nodiscard]] json cacheable(json result, int ttl_ms, std::string_view scope);

}  // namespace mcp::era
