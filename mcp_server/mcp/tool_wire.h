// The wire form of a tool call (MCP 2025-11-25): the CallToolResult a ToolResult becomes, and
// the notifications a running tool's updates become. Tools never build protocol JSON; this is
// the one place their output turns into it.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "tools/tool.h"

namespace mcp {

// content (a text block unless it is empty and extra_content is not, then extra_content) +
// structuredContent (unless isError) + isError, and _meta when the result has any.
[[nodiscard]] nlohmann::json toCallResult(tools::ToolResult result);

// ClientUpdates of one request: progress() as notifications/progress carrying the request's
// progressToken, log() as notifications/message at level info, each only when the client asked
// for it. Thread-safe as far as `notify` is.
class RequestUpdates final : public tools::ClientUpdates {
 public:
  using Notify = std::function<void(const nlohmann::json& notification)>;

  // `notify` may be empty (nothing can reach the client); `progress_token` null: no progress.
  RequestUpdates(Notify notify, nlohmann::json progress_token, bool client_logs_output)
      : notify_(std::move(notify)),
        progress_token_(std::move(progress_token)),
        logs_(client_logs_output) {}

  [[nodiscard]] bool wantsProgress() const noexcept override {
    return notify_ && !progress_token_.is_null();
  }
  [[nodiscard]] bool wantsLogs() const noexcept override { return notify_ && logs_; }
  void progress(std::uint64_t progress, std::string message) override;
  void progressOf(std::uint64_t progress, std::uint64_t total, std::string message) override;
  void log(std::string_view logger, std::string_view text) override;
  [[nodiscard]] std::optional<nlohmann::json> askClient(const std::string& method,
                                                        const nlohmann::json& params) override {
    return ask_ ? ask_(method, params) : std::nullopt;
  }

  // How askClient() reaches the client; unset: it cannot be asked.
  using Ask = std::function<std::optional<nlohmann::json>(const std::string& method,
                                                          const nlohmann::json& params)>;
  void setAsk(Ask ask) { ask_ = std::move(ask); }

 private:
  // notifications/progress; `total` when it is known.
  void sendProgress(std::uint64_t progress, std::optional<std::uint64_t> total,
                    std::string message);

  Ask ask_;
  const Notify notify_;
  const nlohmann::json progress_token_;
  const bool logs_;
};

}  // namespace mcp
