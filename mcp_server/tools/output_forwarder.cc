#include "tools/output_forwarder.h"

namespace tools {

bool OutputForwarder::enabled() const noexcept {
  return ctx_.notify && (!ctx_.progress_token.is_null() || ctx_.client_logs_output);
}

sandbox::OutputCallback OutputForwarder::callback() {
  if (!enabled()) return {};
  return [this](std::string_view stream, std::string_view data) { forward(stream, data); };
}

void OutputForwarder::forward(std::string_view stream, std::string_view data) {
  if (data.empty()) return;
  std::lock_guard lock(mutex_);
  bytes_sent_ += data.size();
  if (!ctx_.progress_token.is_null()) {
    // progress must grow with every notification: the output bytes so far do. The total is
    // unknown while the code runs.
    std::string message = stream == "stderr" ? "[stderr] " : "";
    message.append(data);
    ctx_.notify(json{{"jsonrpc", "2.0"},
                     {"method", "notifications/progress"},
                     {"params",
                      {{"progressToken", ctx_.progress_token},
                       {"progress", bytes_sent_},
                       {"message", std::move(message)}}}});
  }
  if (ctx_.client_logs_output) {
    ctx_.notify(json{{"jsonrpc", "2.0"},
                     {"method", "notifications/message"},
                     {"params", {{"level", "info"}, {"logger", stream}, {"data", data}}}});
  }
}

}  // namespace tools
