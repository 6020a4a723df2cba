#include "tools/output_forwarder.h"

namespace tools {

bool OutputForwarder::enabled() const noexcept {
  return updates_.wantsProgress() || updates_.wantsLogs();
}

sandbox::OutputCallback OutputForwarder::callback() {
  if (!enabled()) return {};
  return [this](std::string_view stream, std::string_view data) { forward(stream, data); };
}

void OutputForwarder::forward(std::string_view stream, std::string_view data) {
  if (data.empty()) return;
  std::lock_guard lock(mutex_);
  bytes_sent_ += data.size();
  if (updates_.wantsProgress()) {
    // progress must grow with every notification: the output bytes so far do.
    std::string message = stream == "stderr" ? "[stderr] " : "";
    message.append(data);
    updates_.progress(bytes_sent_, std::move(message));
  }
  if (updates_.wantsLogs()) updates_.log(stream, data);
}

}  // namespace tools
